/**
 * The HTTP plumbing every route shares: the security headers on every answer, JSON and HTML
 * answers, errors as `{code, message, field?}` with the application's statuses, request bodies
 * read with their cap checked before and while reading, and the `If-Match` version.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError, toAppError } from "../app/index.js";
import { readBody as readAtMost, sendJson as sendJsonAnswer } from "../http/index.js";

/** The console's Content-Security-Policy: nothing inline, nothing from elsewhere, never framed. */
export const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'; form-action 'self'";

/**
 * The console's CSP when views run: the same, and the plugin proxy's origin the one place it may
 * frame (`frame-src`), nothing else more (docs/adr/0075).
 */
export function consoleCsp(pluginProxyOrigin: string | null): string {
  return pluginProxyOrigin === null ? CSP : `${CSP}; frame-src ${pluginProxyOrigin}`;
}

/** Headers every answer carries, whatever it is; `pluginProxyOrigin` when views may be framed. */
export function secureHeaders(res: ServerResponse, pluginProxyOrigin: string | null = null): void {
  res.setHeader("Content-Security-Policy", consoleCsp(pluginProxyOrigin));
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
  res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
}

/** Answers with JSON, indented (src/http's answer). Nothing the answer holds is cached by a shared cache. */
export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Readonly<Record<string, string>> = {}): void {
  sendJsonAnswer(res, status, value, headers, 2);
}

/** Answers with an HTML page or fragment. */
export function sendHtml(res: ServerResponse, status: number, markup: string, headers: Readonly<Record<string, string>> = {}): void {
  res.writeHead(status, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", Vary: "HX-Request, Cookie", "Content-Length": Buffer.byteLength(markup), ...headers });
  res.end(markup);
}

/** A redirect after a POST (POST-redirect-GET) or to a page. */
export function redirect(res: ServerResponse, location: string, headers: Readonly<Record<string, string>> = {}): void {
  res.writeHead(303, { Location: location, "Cache-Control": "no-store", "Content-Length": 0, ...headers });
  res.end();
}

/** Answers with an error as JSON `{code, message, field?}` and the code's status. */
export function sendError(res: ServerResponse, err: unknown, headers: Readonly<Record<string, string>> = {}): AppError {
  const e = toAppError(err);
  if (!res.headersSent) sendJson(res, e.status, e.toJSON(), headers);
  else res.destroy();
  return e;
}

/**
 * Reads a request body of at most `max` bytes (src/http's reader): refused (`too_large`) by its
 * Content-Length before a byte is read, or as soon as more than `max` bytes arrived.
 */
export async function readBody(req: IncomingMessage, max: number, what = "the request body"): Promise<string> {
  const r = await readAtMost(req, max);
  if (r.ok) return r.body.toString("utf8");
  if (r.reason === "too_large") throw new AppError("too_large", `${what} is over the ${max}-byte limit`);
  throw new AppError("usage", r.reason === "incomplete" ? `${what} ended before it was complete` : `${what} could not be read`);
}

/** The media type of a request, lower case, without parameters. */
export { mediaType } from "../http/index.js";

/**
 * The stream version an `If-Match` names (`"12"`, `W/"12"` or `12`): `precondition_required`
 * without one, `usage` for anything that is not one version.
 */
export function ifMatchVersion(req: IncomingMessage): number {
  const raw = req.headers["if-match"];
  if (raw === undefined || raw.trim() === "") throw new AppError("precondition_required", "send If-Match with the plugin's version you looked at (its ETag): an approval must name what it approves", "If-Match");
  const m = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(raw);
  if (m === null) throw new AppError("usage", "If-Match must be one version, such as \"12\" (the ETag of GET /api/v1/plugins/{name})", "If-Match");
  return Number(m[1]);
}

/** The `If-Match` version when one was sent (a write that may name what it saw). */
export function optionalIfMatch(req: IncomingMessage): number | undefined {
  return req.headers["if-match"] === undefined ? undefined : ifMatchVersion(req);
}

/** An ETag for a stream version. */
export function etag(version: number): string {
  return `"${version}"`;
}
