/** Answers every listener writes the same way. */
import type { ServerResponse } from "node:http";

/**
 * Answers with JSON (indented by `indent` spaces, with a final newline, when given). Never cached,
 * never sniffed as another type.
 */
export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Readonly<Record<string, string>> = {}, indent?: number): void {
  const body = indent === undefined ? JSON.stringify(value) : `${JSON.stringify(value, null, indent)}\n`;
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(body)),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    ...headers,
  });
  res.end(body);
}
