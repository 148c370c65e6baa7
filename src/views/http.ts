/** Small HTTP helpers of the views room: bounded bodies, JSON answers, Kubernetes Status bodies. */
import type { IncomingMessage, ServerResponse } from "node:http";

/** Reads a request body of at most `max` bytes; null when it is longer (the rest is not read). */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? "0");
    if (Number.isFinite(declared) && declared > max) {
      resolve(null);
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on("data", (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > max) {
        done = true;
        resolve(null);
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      if (!done) resolve(Buffer.concat(chunks));
    });
    req.on("error", reject);
  });
}

/** Answers JSON; tokens are never cached. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(text)),
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    ...headers,
  });
  res.end(text);
}

/** Kubernetes' reason for a status code. */
const REASONS: Record<number, string> = {
  400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict",
  410: "Gone", 413: "RequestEntityTooLarge", 414: "RequestURITooLong", 429: "TooManyRequests", 502: "BadGateway", 503: "ServiceUnavailable", 504: "GatewayTimeout",
};

/** A Kubernetes `Status` failure body, so client libraries read the gateway's refusals like the API server's. */
export function statusBody(code: number, message: string): Record<string, unknown> {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason: REASONS[code] ?? "Unknown", code };
}
