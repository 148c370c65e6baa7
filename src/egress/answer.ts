/**
 * The answer on the wire: the 200 that opens a tunnel, a refusal written from its row of the
 * refusal table (with its `Proxy-Status`, RFC 9209), and the few answers to a request that is not
 * a CONNECT (the health check, metrics, 405, a head the reader refused: byte for byte what
 * node:http answered, ADR 0035). Written by hand on the socket (the proxy's port is `node:net`),
 * always with `Connection: close`: one request per connection.
 */
import type { Duplex } from "node:stream";
import { PROXY_NAME, proxyStatusValue, type ProxyError } from "./proxy-status.js";
import { REFUSALS, type RefusalCode } from "./refusals.js";

/** The realm of every 407's `Proxy-Authenticate`. */
export const PROXY_REALM = PROXY_NAME;

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

/** What a refusal's answer says beyond its row. */
export interface RefusalFacts {
  /** A stable code appended to the reason (which address check refused; never a secret). */
  readonly detail?: string;
  /** More header lines (a 429's `Retry-After`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** A more precise `Proxy-Status` error than the row's (a failed dial's, by its errno). */
  readonly proxyError?: ProxyError;
}

/**
 * The bytes of a refusal. Its body and the `details` of its `Proxy-Status` are the same line,
 * `code: reason`: curl shows a failed CONNECT's headers but not its body, and a 407 must say
 * whether the token or the destination was refused.
 */
export function refusalBytes(code: RefusalCode, facts: RefusalFacts = {}): string {
  const row = REFUSALS[code];
  const line = facts.detail === undefined ? `${code}: ${row.text}` : `${code}: ${row.text} (${facts.detail})`;
  const body = `${line}\n`;
  let head = `HTTP/1.1 ${row.status} ${STATUS_TEXT[row.status] ?? ""}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n`;
  head += `Proxy-Status: ${proxyStatusValue(facts.proxyError ?? row.proxyError, line)}\r\n`;
  const extra = facts.headers ?? {};
  for (const k in extra) head += `${k}: ${extra[k]}\r\n`;
  if (row.status === 407) head += `Proxy-Authenticate: Basic realm="${PROXY_REALM}"\r\n`;
  return `${head}\r\n${body}`;
}

/** Writes a refusal and ends the socket; nothing is written to a socket already gone, or for a 499. */
export function answerRefusal(socket: Duplex, code: RefusalCode, facts?: RefusalFacts): void {
  if (socket.destroyed || REFUSALS[code].status === 499) return;
  socket.end(refusalBytes(code, facts));
}

/** A head the reader refused (as node:http answered llhttp's errors): no body, no detail. */
export const BAD_REQUEST: Buffer = Buffer.from("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", "latin1");

/** The health check: ready. */
export const HEALTHY: Buffer = Buffer.from("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", "latin1");

/** The health check while draining or before listening. */
export const UNAVAILABLE: Buffer = Buffer.from("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", "latin1");

const ONLY_CONNECT = "only CONNECT is allowed\n";
const NOT_ALLOWED_HEAD = `HTTP/1.1 405 Method Not Allowed\r\nAllow: CONNECT\r\nContent-Type: text/plain\r\nContent-Length: ${ONLY_CONNECT.length}\r\nConnection: close\r\n\r\n`;
/** Anything but a CONNECT, the health check or metrics. */
export const METHOD_NOT_ALLOWED: Buffer = Buffer.from(`${NOT_ALLOWED_HEAD}${ONLY_CONNECT}`, "latin1");
/** The same to a HEAD request, which is answered without a body (RFC 9110 §9.3.2, as node:http did). */
export const METHOD_NOT_ALLOWED_TO_HEAD: Buffer = Buffer.from(NOT_ALLOWED_HEAD, "latin1");

/** Metrics that could not be collected. */
export const INTERNAL_ERROR: Buffer = Buffer.from("HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", "latin1");

/** A 200 with a body (the metrics' text). */
export function okBytes(contentType: string, body: string): Buffer {
  const text = Buffer.from(body, "utf8");
  const head = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: ${contentType}\r\nContent-Length: ${text.length}\r\nConnection: close\r\n\r\n`, "latin1");
  return Buffer.concat([head, text]);
}
