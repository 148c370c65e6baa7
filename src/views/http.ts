/** Small HTTP helpers of the views room over src/http's: bounded bodies, JSON answers, Kubernetes Status bodies. */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBody as readAtMost, sendJson as sendJsonAnswer } from "../http/index.js";

/** Reads a request body of at most `max` bytes (src/http's reader); null when it is longer, or did not arrive whole (the rest is not read). */
export async function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  const r = await readAtMost(req, max);
  return r.ok ? r.body : null;
}

/** Answers JSON; tokens are never cached (src/http's answer). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJsonAnswer(res, status, body, headers);
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
