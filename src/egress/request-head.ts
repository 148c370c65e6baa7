/**
 * The request head on the proxy's port, read by hand (issue 17, ADR 0035): exactly one request
 * line and its header fields, strict and bounded, in one pass over the bytes. What it lets through
 * is a subset of what Node's llhttp let through; what llhttp refused it refuses too, as a
 * {@link HeadRejection} that the proxy answers 400 and counts by kind, as it did llhttp's.
 *
 * Linear time and bounded memory: each byte is looked at a fixed number of times, lines are found
 * with `indexOf`, a head that has not ended within {@link HEAD_LIMITS} is refused as soon as it
 * passes them, and a head split across reads is gathered in one buffer that doubles (so the
 * copying stays linear however small the pieces). No regex.
 */
import { METHODS } from "node:http";

/** The caps on a head (ADR 0035). */
export const HEAD_LIMITS = {
  /** The request line, every header line and the blank line, CRLFs included (Node's default maxHeaderSize). */
  maxHeadBytes: 16 * 1024,
  /** One line without its CRLF: a Proxy-Authorization with a projected token is 1–3 KiB. */
  maxLineBytes: 8 * 1024,
  /** Header fields; a CONNECT from an HTTP client carries two to five. */
  maxHeaders: 100,
} as const;

/** The kind of a refused head: the labels llhttp's errors were counted under. */
export type HeadRejectionKind = "invalid_method" | "invalid_target" | "invalid_header" | "header_overflow";

/**
 * Why a head was refused: a kind and a stable reason (logged, never the bytes, which may hold a
 * token).
 */
export interface HeadRejection {
  readonly ok: false;
  readonly kind: HeadRejectionKind;
  readonly reason:
    | "bare_lf"
    | "empty_line_first"
    | "method"
    | "target"
    | "version"
    | "header_name"
    | "folded_header"
    | "header_value"
    | "content_length"
    | "duplicate_content_length"
    | "transfer_encoding"
    | "head_too_large"
    | "line_too_long"
    | "too_many_headers";
}

/** A head that passed: what the proxy reads of it, every field read once. */
export interface RequestHead {
  readonly ok: true;
  /** One of llhttp's methods, as sent (upper case). */
  readonly method: string;
  /** The request-target as sent: visible ASCII only. */
  readonly target: string;
  /** 1 for HTTP/1.1, 0 for HTTP/1.0 (CONNECT is refused unless 1.1). */
  readonly minor: 0 | 1;
  /** Whether a Host field was sent. */
  readonly host: boolean;
  /** The first Proxy-Authorization value (trimmed), and how many there were. */
  readonly proxyAuthorization: string | undefined;
  readonly proxyAuthorizations: number;
  /** Whether an X-Upstream-Https-Proxy field was sent (asking to chain through another proxy). */
  readonly upstreamProxy: boolean;
}

/** The result of reading a head. */
export type HeadResult = RequestHead | HeadRejection;

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;
const COLON = 0x3a;

function table(accept: (c: number) => boolean): Uint8Array {
  const t = new Uint8Array(256);
  for (let c = 0; c < 256; c++) t[c] = accept(c) ? 1 : 0;
  return t;
}

/** RFC 9110 tchar: a header name's bytes. */
const TCHAR = table((c) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || "!#$%&'*+-.^_`|~".includes(String.fromCharCode(c)));
/** A field value's bytes: VCHAR, obs-text, SP and HTAB; never NUL, CR, LF, another control or DEL (as llhttp). */
const VALUE = table((c) => c === SP || c === HTAB || (c >= 0x21 && c <= 0x7e) || c >= 0x80);
/**
 * A request-target's bytes: visible ASCII without the characters llhttp refuses in a target
 * (`"<>\^`{|}#`); what is left is then judged by the target's own rules (`target.ts`).
 */
const TARGET = table((c) => c >= 0x21 && c <= 0x7e && !'"<>\\^`{|}#'.includes(String.fromCharCode(c)));
/** A method's bytes (llhttp's methods are upper case, with `-` in M-SEARCH). */
const METHOD_CHAR = table((c) => (c >= 0x41 && c <= 0x5a) || c === 0x2d);
const KNOWN_METHODS = new Set(METHODS);
const HTTP_1 = Buffer.from("HTTP/1.", "latin1");

/** Names the proxy reads, lower case; matched by length first, then byte by byte. */
const HOST = Buffer.from("host", "latin1");
const PROXY_AUTHORIZATION = Buffer.from("proxy-authorization", "latin1");
const UPSTREAM_PROXY = Buffer.from("x-upstream-https-proxy", "latin1");
const CONTENT_LENGTH = Buffer.from("content-length", "latin1");
const TRANSFER_ENCODING = Buffer.from("transfer-encoding", "latin1");

const refuse = (kind: HeadRejectionKind, reason: HeadRejection["reason"]): HeadRejection => ({ ok: false, kind, reason });

/** Whether `b[at, at + name.length)` is `name` whatever the ASCII case (the bytes are tchars). */
function nameIs(b: Buffer, at: number, len: number, name: Buffer): boolean {
  if (len !== name.length) return false;
  for (let i = 0; i < len; i++) if (((b[at + i] ?? 0) | 0x20) !== name[i]) return false;
  return true;
}

/** The fields of a head as they are read; frozen into a {@link RequestHead} at the end. */
class Fields {
  method = "";
  target = "";
  minor: 0 | 1 = 1;
  host = false;
  proxyAuthorization: string | undefined = undefined;
  proxyAuthorizations = 0;
  upstreamProxy = false;
  contentLength = false;
  headers = 0;

  /**
   * Reads the fields the proxy cares about (the name at `name`, `nameLen` bytes; the value trimmed
   * between `value` and `valueEnd`); the rest were only checked.
   */
  remember(b: Buffer, name: number, nameLen: number, value: number, valueEnd: number): HeadRejection | undefined {
    if (nameIs(b, name, nameLen, HOST)) this.host = true;
    else if (nameIs(b, name, nameLen, PROXY_AUTHORIZATION)) {
      // Read once: a second one is refused later (bad_proxy_auth_duplicate); its value is never kept.
      if (this.proxyAuthorizations++ === 0) this.proxyAuthorization = b.toString("latin1", value, valueEnd);
    } else if (nameIs(b, name, nameLen, UPSTREAM_PROXY)) this.upstreamProxy = true;
    else if (nameIs(b, name, nameLen, CONTENT_LENGTH)) {
      // As llhttp: digits only, and once (even twice the same number is refused).
      if (this.contentLength) return refuse("invalid_header", "duplicate_content_length");
      if (!digitsOnly(b, value, valueEnd)) return refuse("invalid_header", "content_length");
      this.contentLength = true;
    } else if (nameIs(b, name, nameLen, TRANSFER_ENCODING)) {
      // Nothing the proxy answers has content; a framing header only invites smuggling games.
      return refuse("invalid_header", "transfer_encoding");
    }
    return undefined;
  }

  head(): RequestHead {
    return {
      ok: true, method: this.method, target: this.target, minor: this.minor, host: this.host,
      proxyAuthorization: this.proxyAuthorization, proxyAuthorizations: this.proxyAuthorizations, upstreamProxy: this.upstreamProxy,
    };
  }
}

/** The end of a run of bytes that `accept` takes, from `i` up to `end`. */
function run(b: Buffer, i: number, end: number, accept: Uint8Array): number {
  while (i < end && accept[b[i] ?? 0] === 1) i++;
  return i;
}

/** Exactly `HTTP/1.0` or `HTTP/1.1` from `v` to the line's end: no second space, no trailing byte. */
function minorVersion(b: Buffer, v: number, end: number): 0 | 1 | undefined {
  if (end - v !== 8 || b.compare(HTTP_1, 0, 7, v, v + 7) !== 0) return undefined;
  const minor = b[v + 7];
  return minor === 0x31 ? 1 : minor === 0x30 ? 0 : undefined;
}

/** `METHOD SP request-target SP HTTP/1.x` between `start` and `end` (its CR). */
function requestLine(b: Buffer, start: number, end: number, f: Fields): HeadRejection | undefined {
  const sp = run(b, start, end, METHOD_CHAR);
  if (sp === start || sp - start > 20 || b[sp] !== SP) return refuse("invalid_method", "method");
  const method = b.toString("latin1", start, sp);
  if (!KNOWN_METHODS.has(method)) return refuse("invalid_method", "method");
  const targetEnd = run(b, sp + 1, end, TARGET);
  if (targetEnd === sp + 1 || b[targetEnd] !== SP) return refuse("invalid_target", "target");
  const minor = minorVersion(b, targetEnd + 1, end);
  // A CONNECT is HTTP/1.1 only; the health check and metrics also answer HTTP/1.0 (as before).
  if (minor === undefined || (minor === 0 && method === "CONNECT")) return refuse("invalid_header", "version");
  f.method = method;
  f.target = b.toString("latin1", sp + 1, targetEnd);
  f.minor = minor;
  return undefined;
}

/** A Content-Length's value: one or more digits. */
function digitsOnly(b: Buffer, start: number, end: number): boolean {
  if (start === end) return false;
  for (let i = start; i < end; i++) {
    const c = b[i] ?? 0;
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** The end of a field value's last byte that is not SP or HTAB, or -1 at a byte no value holds. */
function valueEnd(b: Buffer, value: number, end: number): number {
  let last = value;
  for (let i = value; i < end; i++) {
    const c = b[i] ?? 0;
    if (VALUE[c] !== 1) return -1;
    if (c !== SP && c !== HTAB) last = i + 1;
  }
  return last;
}

/** `field-name ":" OWS field-value OWS` between `start` and `end` (its CR). */
function headerLine(b: Buffer, start: number, end: number, f: Fields): HeadRejection | undefined {
  const first = b[start];
  // obs-fold (a line that continues the one before) is refused, as llhttp does.
  if (first === SP || first === HTAB) return refuse("invalid_header", "folded_header");
  const colon = run(b, start, end, TCHAR);
  if (colon === start || b[colon] !== COLON) return refuse("invalid_header", "header_name");
  let value = colon + 1;
  while (value < end && (b[value] === SP || b[value] === HTAB)) value++;
  const last = valueEnd(b, value, end);
  if (last < 0) return refuse("invalid_header", "header_value");
  if (++f.headers > HEAD_LIMITS.maxHeaders) return refuse("header_overflow", "too_many_headers");
  return f.remember(b, start, colon - start, value, last);
}

/** Where a scan stands: the head's end, a refusal, or the start of the line not yet ended. */
type Scan = { readonly end: number } | HeadRejection | { readonly more: number };

/**
 * Reads complete lines of `b` from `from` (the start of a line) up to `length`, looking for a
 * line's LF from `searched` on (bytes before it were looked at by an earlier call): each line is
 * checked as it is found, so a bad head is refused without waiting for its end, and no byte is
 * searched twice however small the reads.
 */
function scanLines(b: Buffer, from: number, searched: number, length: number, f: Fields): Scan {
  let start = from;
  let search = Math.max(from, searched);
  for (;;) {
    const lf = b.indexOf(LF, search);
    if (lf < 0 || lf >= length) {
      // A line not yet ended may end in its CR.
      if (length - start > HEAD_LIMITS.maxLineBytes + 1) return refuse("header_overflow", "line_too_long");
      return { more: start };
    }
    if (lf === 0 || b[lf - 1] !== CR) return refuse("invalid_header", "bare_lf");
    const end = lf - 1;
    if (end - start > HEAD_LIMITS.maxLineBytes) return refuse("header_overflow", "line_too_long");
    if (end === start) return start === 0 ? refuse("invalid_method", "empty_line_first") : { end: lf + 1 };
    const refused = start === 0 ? requestLine(b, start, end, f) : headerLine(b, start, end, f);
    if (refused !== undefined) return refused;
    start = lf + 1;
    search = start;
  }
}

/** What {@link HeadReader.push} answers: wait for more bytes, the head and what followed it, or a refusal. */
export type ReadStep =
  | { readonly state: "more" }
  | { readonly state: "done"; readonly head: RequestHead; readonly rest: Buffer }
  | { readonly state: "refused"; readonly rejection: HeadRejection };

const MORE: ReadStep = { state: "more" };
const TOO_LARGE: ReadStep = { state: "refused", rejection: refuse("header_overflow", "head_too_large") };

/**
 * Gathers one connection's head from its reads. The usual head arrives in one read and is read
 * in place; a head in pieces is copied into one buffer that doubles as it fills, up to the cap
 * (past it the head is refused). Bytes after the head are handed back whole, however the reads
 * fell.
 */
export class HeadReader {
  #buf: Buffer | undefined;
  #length = 0;
  /** Where the line not yet ended starts, and how far its LF was looked for. */
  #lineStart = 0;
  #searched = 0;
  readonly #fields = new Fields();

  /** Bytes gathered so far. */
  get length(): number {
    return this.#length;
  }

  push(chunk: Buffer): ReadStep {
    if (this.#length === 0) return this.#first(chunk);
    const taken = this.#append(chunk);
    const b = this.#buf as Buffer;
    const length = this.#length;
    const scan = scanLines(b, this.#lineStart, this.#searched, Math.min(length, HEAD_LIMITS.maxHeadBytes), this.#fields);
    if ("ok" in scan) return { state: "refused", rejection: scan };
    if ("end" in scan) {
      this.#buf = undefined;
      // Copied out (the gathering buffer can go), with what of this read was not gathered.
      const rest = Buffer.concat([b.subarray(scan.end, length), chunk.subarray(taken)]);
      return { state: "done", head: this.#fields.head(), rest };
    }
    if (length >= HEAD_LIMITS.maxHeadBytes) return TOO_LARGE;
    this.#lineStart = scan.more;
    this.#searched = length;
    return MORE;
  }

  /** The first read: the whole head, usually, read where it lies. */
  #first(chunk: Buffer): ReadStep {
    const length = Math.min(chunk.length, HEAD_LIMITS.maxHeadBytes);
    const scan = scanLines(chunk, 0, 0, length, this.#fields);
    if ("ok" in scan) return { state: "refused", rejection: scan };
    if ("end" in scan) return { state: "done", head: this.#fields.head(), rest: chunk.subarray(scan.end) };
    if (chunk.length >= HEAD_LIMITS.maxHeadBytes) return TOO_LARGE;
    // Part of a head: keep it (copied: the read's buffer is not ours).
    this.#append(chunk);
    this.#lineStart = scan.more;
    this.#searched = length;
    return MORE;
  }

  /** Copies as much of `chunk` as the cap leaves room for; answers how many bytes it took. */
  #append(chunk: Buffer): number {
    // Never more than the cap plus one byte: past the cap the head is refused anyway.
    const take = Math.min(chunk.length, HEAD_LIMITS.maxHeadBytes + 1 - this.#length);
    const need = this.#length + take;
    let buf = this.#buf;
    if (buf === undefined || buf.length < need) {
      const grown = Buffer.allocUnsafe(Math.min(HEAD_LIMITS.maxHeadBytes + 1, Math.max(1024, need * 2)));
      if (buf !== undefined) buf.copy(grown, 0, 0, this.#length);
      buf = grown;
      this.#buf = buf;
    }
    chunk.copy(buf, this.#length, 0, take);
    this.#length = need;
    return take;
  }
}

/** Reads a whole head from one buffer (tests and tables); bytes after the blank line are `rest`. */
export function readHead(bytes: Buffer): ReadStep {
  return new HeadReader().push(bytes);
}
