/**
 * Request bodies: what a route declares it takes (media types, a size), the refusal of anything
 * else before a byte is read — 415 for another media type, 413 for a declared size over the
 * limit — and the one reader that stops as soon as more than the limit arrived.
 */
import type { IncomingMessage } from "node:http";

/** What a route takes as its body. */
export interface BodySpec {
  /** The media types accepted (lower case, without parameters). */
  readonly types: readonly string[];
  /** The most bytes read. */
  readonly maxBytes: number;
  /** What a client is told when it sends another media type (default: the types accepted). */
  readonly unsupported?: string;
}

/** A route that takes no body: any declared body is refused. */
export const NO_BODY: BodySpec = Object.freeze({ types: [], maxBytes: 0 });

/** Why a body is refused before it is read. */
export interface BodyRefusal {
  /** 415 (another media type) or 413 (too large). */
  readonly status: 413 | 415;
  readonly reason: "unsupported_media_type" | "too_large";
  readonly message: string;
}

/** The media type of a request, lower case, without parameters ("" without one). */
export function mediaType(req: IncomingMessage): string {
  return (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/** Whether the request says it carries a body (a Content-Length over 0, or a Transfer-Encoding). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/**
 * The refusal of a request's body by its headers alone, or null when it may be read: a body to a
 * route that takes none, or one larger than the route's limit, is 413; a media type the route does
 * not take is 415. Nothing is read either way.
 */
export function refuseBody(req: IncomingMessage, spec: BodySpec, what = "the request body"): BodyRefusal | null {
  if (!hasBody(req)) return null;
  if (spec.maxBytes === 0) return { status: 413, reason: "too_large", message: `${what}: this route takes no body` };
  const declared = req.headers["content-length"];
  if (declared !== undefined && (!/^\d{1,15}$/.test(declared) || Number(declared) > spec.maxBytes)) {
    return { status: 413, reason: "too_large", message: `${what} is over the ${spec.maxBytes}-byte limit` };
  }
  const type = mediaType(req);
  if (!spec.types.includes(type)) {
    return { status: 415, reason: "unsupported_media_type", message: spec.unsupported ?? `send ${what} as ${spec.types.join(" or ")}, not ${JSON.stringify(type.slice(0, 64))}` };
  }
  return null;
}

/** A body read, or why not. */
export type BodyRead = { readonly ok: true; readonly body: Buffer } | { readonly ok: false; readonly reason: "too_large" | "incomplete" | "unreadable" };

/**
 * Reads a request's body of at most `max` bytes: refused (`too_large`) by its Content-Length
 * before a byte is read, or as soon as more than `max` bytes arrived (what still arrives is read
 * and dropped; the listener's request timeout bounds it).
 */
export function readBody(req: IncomingMessage, max: number): Promise<BodyRead> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && (!/^\d{1,15}$/.test(declared) || Number(declared) > max)) {
    req.resume();
    return Promise.resolve({ ok: false, reason: "too_large" });
  }
  // Events, not for-await: leaving a for-await loop destroys the request, and the answer with it.
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (r: BodyRead) => {
      if (done) return;
      done = true;
      resolve(r);
    };
    req.on("data", (b: Buffer) => {
      if (done) return;
      size += b.length;
      if (size > max) {
        finish({ ok: false, reason: "too_large" });
        req.resume();
      } else chunks.push(b);
    });
    req.on("end", () => finish({ ok: true, body: Buffer.concat(chunks) }));
    req.on("close", () => finish({ ok: false, reason: "incomplete" }));
    req.on("error", () => finish({ ok: false, reason: "unreadable" }));
  });
}
