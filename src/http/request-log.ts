/**
 * Each request's own logger: a child of the listener's with a request id, so that every line a
 * request makes can be found together. The id is the client's `X-Request-Id` when it is a short
 * token (a proxy in front set it), else a fresh one; it is sent back in `X-Request-Id`.
 */
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";

const GIVEN_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The request's id: the client's `X-Request-Id` when it is a short token, else a fresh random one. */
export function requestId(req: { readonly headers: IncomingHttpHeaders }): string {
  const given = req.headers["x-request-id"];
  return typeof given === "string" && GIVEN_ID.test(given) ? given : randomBytes(8).toString("hex");
}

/** A child of `logger` naming the request's id (and sets `X-Request-Id` on the answer). */
export function requestLogger(logger: Logger, req: { readonly headers: IncomingHttpHeaders }, res?: { readonly headersSent: boolean; setHeader(name: string, value: string): unknown }): Logger {
  const id = requestId(req);
  if (res !== undefined && !res.headersSent) res.setHeader("X-Request-Id", id);
  return logger.child({ req: id });
}
