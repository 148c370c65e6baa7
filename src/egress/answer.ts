/**
 * The answer on the wire: the 200 that opens a tunnel, or a refusal written from its row of the
 * refusal table. Written by hand on the hijacked socket (node:http has no response object for a
 * CONNECT), always with `Connection: close`.
 */
import type { Duplex } from "node:stream";
import { REFUSALS, type RefusalCode } from "./refusals.js";

/** The realm of every 407's `Proxy-Authenticate`. */
export const PROXY_REALM = "openfief-egress";

/** The 200 that opens a tunnel (bytes made once: no string encoding per CONNECT). */
export const ESTABLISHED: Buffer = Buffer.from("HTTP/1.1 200 Connection Established\r\n\r\n", "latin1");

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "Bad Request",
  407: "Proxy Authentication Required",
  429: "Too Many Requests",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** The bytes of a refusal; `detail` is a stable code appended to the reason (never a secret). */
export function refusalBytes(code: RefusalCode, detail?: string, extra: Readonly<Record<string, string>> = {}): string {
  const row = REFUSALS[code];
  const body = detail === undefined ? `${code}: ${row.text}\n` : `${code}: ${row.text} (${detail})\n`;
  let head = `HTTP/1.1 ${row.status} ${STATUS_TEXT[row.status] ?? ""}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n`;
  for (const k in extra) head += `${k}: ${extra[k]}\r\n`;
  if (row.status === 407) head += `Proxy-Authenticate: Basic realm="${PROXY_REALM}"\r\n`;
  return `${head}\r\n${body}`;
}

/** Writes a refusal and ends the socket; nothing is written to a socket already gone, or for a 499. */
export function answerRefusal(socket: Duplex, code: RefusalCode, detail?: string, extra?: Readonly<Record<string, string>>): void {
  if (socket.destroyed || REFUSALS[code].status === 499) return;
  socket.end(refusalBytes(code, detail, extra));
}
