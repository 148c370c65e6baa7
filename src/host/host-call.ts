/**
 * Serving a guest's `host_call` (docs/abi.md): the request is size-capped before it is parsed,
 * checked field by field, and its URL's origin must be one of the call's approved origins before
 * the HTTP port is asked. The answer is always an envelope the guest can read: `{"result": ...}`
 * or `{"error": {code, message}}` with one of the ABI's guest codes, never a host `plugin_*` code.
 */
import { GuestErrorCode } from "./errors.js";
import type { HttpCapability, HttpOutcome, PluginHttpRequest } from "./http.js";
import { serveSecret, serveWait, type GrantedSecretValues } from "./secret-call.js";

/** What the host knows about the call a `host_call` belongs to. */
export interface HostCallContext {
  /** Approved origins (`https://host[:port]`, canonical); empty when the call is not granted HTTP. */
  readonly origins: ReadonlySet<string>;
  readonly egressToken: string | undefined;
  readonly http: HttpCapability | undefined;
  readonly signal: AbortSignal;
  readonly messageBytes: number;
  readonly requestBodyBytes: number;
  readonly responseBodyBytes: number;
  /** The Secrets granted to the instance, by role, key and value (`secret`); none when absent. */
  readonly secrets?: GrantedSecretValues;
  /** Milliseconds left before the call's deadline, for `wait`; no pause is served without it. */
  readonly remainingMs?: () => number;
}

/** What happened, for the host's log line (never a body, a header value or a token). */
export interface HostCallRecord {
  readonly method: string;
  readonly origin?: string;
  readonly status?: number;
  readonly code?: string;
}

const METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
// Headers that shape the connection or the proxy hop, which the host and undici own.
const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set([
  "host", "connection", "content-length", "transfer-encoding", "te", "trailer", "upgrade", "keep-alive",
  "proxy-authorization", "proxy-connection", "proxy-authenticate", "expect", "http2-settings",
]);
const TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const MAX_URL = 8192;
const MAX_HEADERS = 100;
const MAX_HEADER_BYTES = 64 * 1024;
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });
const ENCODER = new TextEncoder();

/** An RFC 9110 token of at most 256 characters (no regex over what a plugin sends). */
function isToken(name: string): boolean {
  if (name.length === 0 || name.length > 256) return false;
  for (const c of name) if (!TOKEN_CHARS.includes(c)) return false;
  return true;
}

/** True when `value` holds CR, LF or NUL. */
function hasLineBreakOrNul(value: string): boolean {
  return value.includes("\r") || value.includes("\n") || value.includes("\0");
}

/**
 * The largest `host_call` request worth parsing: the largest body (base64), plus headers and URL.
 * @param requestBodyBytes the cap on a request body
 */
export function hostCallRequestCap(requestBodyBytes: number): number {
  return Math.ceil(requestBodyBytes / 3) * 4 + MAX_HEADER_BYTES + MAX_URL + 4096;
}

type Refusal = { readonly code: (typeof GuestErrorCode)[keyof typeof GuestErrorCode]; readonly message: string };

function envelope(value: unknown): Uint8Array {
  return ENCODER.encode(JSON.stringify(value));
}

function errorReply(r: Refusal): Uint8Array {
  return envelope({ error: { code: r.code, message: r.message } });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Canonical base64 with padding; undefined when it is not. */
function strictBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : undefined;
}

type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly refusal: Refusal };

function bad(message: string): { ok: false; refusal: Refusal } {
  return { ok: false, refusal: { code: GuestErrorCode.InvalidRequest, message } };
}

const PARAM_FIELDS: ReadonlySet<string> = new Set(["method", "url", "headers", "body", "bodyBase64", "answerBase64"]);

/** The URL, `https` only, without credentials or fragment. */
function checkUrl(raw: unknown): Checked<URL> {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > MAX_URL) return bad(`params.url must be a URL of at most ${MAX_URL} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return bad("params.url is not a URL");
  }
  if (url.protocol !== "https:") return bad("only https URLs: plugins reach their origins through the CONNECT-only egress proxy");
  if (url.username !== "" || url.password !== "") return bad("params.url must not carry credentials");
  url.hash = "";
  return { ok: true, value: url };
}

/** One header, or why it is refused. */
function headerProblem(name: string, value: unknown, seen: Readonly<Record<string, string>>): string | undefined {
  if (!isToken(name)) return "a header name is not a token";
  const lower = name.toLowerCase();
  if (FORBIDDEN_HEADERS.has(lower)) return `header ${lower} is set by the host, not the plugin`;
  if (typeof value !== "string" || hasLineBreakOrNul(value)) return `header ${lower} must be a string without CR, LF or NUL`;
  if (Object.hasOwn(seen, lower)) return `header ${lower} is given twice`;
  return undefined;
}

/** The headers, lower-cased, each checked, all within the size cap; null is none (a Go nil map). */
function checkHeaders(raw: unknown): Checked<Record<string, string>> {
  const headers: Record<string, string> = {};
  if (raw === undefined || raw === null) return { ok: true, value: headers };
  if (!isObject(raw)) return bad("params.headers must be an object of strings");
  const entries = Object.entries(raw);
  if (entries.length > MAX_HEADERS) return bad(`at most ${MAX_HEADERS} headers`);
  let size = 0;
  for (const [name, value] of entries) {
    const problem = headerProblem(name, value, headers);
    if (problem !== undefined) return bad(problem);
    size += name.length + (value as string).length;
    if (size > MAX_HEADER_BYTES) return bad(`the headers are larger than ${MAX_HEADER_BYTES} bytes`);
    headers[name.toLowerCase()] = value as string;
  }
  return { ok: true, value: headers };
}

/**
 * The body from `body` (UTF-8) or `bodyBase64`, within the cap; none for GET and HEAD. A field that
 * is null is absent: Rust's and Go's JSON encoders write an absent body (`None`, a nil slice) so.
 */
function checkBody(params: Record<string, unknown>, method: string, cap: number): Checked<Uint8Array | undefined> {
  const body = params.body ?? undefined;
  const bodyBase64 = params.bodyBase64 ?? undefined;
  if (body !== undefined && bodyBase64 !== undefined) return bad("give body or bodyBase64, not both");
  let bytes: Uint8Array | undefined;
  if (body !== undefined) {
    if (typeof body !== "string") return bad("params.body must be a string");
    bytes = ENCODER.encode(body);
  } else if (bodyBase64 !== undefined) {
    if (typeof bodyBase64 !== "string") return bad("params.bodyBase64 must be a string");
    if (bodyBase64.length > Math.ceil(cap / 3) * 4 + 4) return bad(`the request body is larger than the cap of ${cap} bytes`);
    bytes = strictBase64(bodyBase64);
    if (bytes === undefined) return bad("params.bodyBase64 is not canonical base64");
  }
  if (bytes === undefined) return { ok: true, value: undefined };
  if (bytes.length > cap) return bad(`the request body is larger than the cap of ${cap} bytes`);
  if (method === "GET" || method === "HEAD") return bad(`a ${method} request has no body`);
  return { ok: true, value: bytes };
}

/** Parses and checks an `http` request; a refusal names what is wrong. */
export function parseHttpParams(params: unknown, ctx: Pick<HostCallContext, "origins" | "requestBodyBytes">): { ok: true; request: PluginHttpRequest; origin: string; answerBase64?: boolean } | { ok: false; refusal: Refusal; origin?: string } {
  if (!isObject(params)) return bad("params must be an object");
  const unknown = Object.keys(params).find((k) => !PARAM_FIELDS.has(k));
  if (unknown !== undefined) return bad(`params.${unknown} is not a field of an http request`);
  const method = params.method;
  if (typeof method !== "string" || !METHODS.has(method)) return bad("params.method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS");
  const url = checkUrl(params.url);
  if (!url.ok) return url;
  const origin = url.value.origin;
  if (!ctx.origins.has(origin)) {
    return { ok: false, origin, refusal: { code: GuestErrorCode.OriginNotApproved, message: ctx.origins.size === 0 ? "this call is not granted HTTP" : `origin ${origin} is not approved for this plugin` } };
  }
  const headers = checkHeaders(params.headers);
  if (!headers.ok) return headers;
  const body = checkBody(params, method, ctx.requestBodyBytes);
  if (!body.ok) return body;
  // answerBase64: the answer's body as bodyBase64 even when it is UTF-8 (a large text body then
  // needs no JSON unescaping in the guest).
  const answerBase64 = params.answerBase64 ?? false;
  if (typeof answerBase64 !== "boolean") return bad("params.answerBase64 must be a boolean");
  return { ok: true, origin, ...(answerBase64 ? { answerBase64 } : {}), request: { method, url: url.value.href, headers: headers.value, ...(body.value === undefined ? {} : { body: body.value }) } };
}

function responseReply(outcome: Extract<HttpOutcome, { ok: true }>, messageBytes: number, base64: boolean): Uint8Array | Refusal {
  const { status, headers, body } = outcome.response;
  let text: string | undefined;
  try {
    text = base64 ? undefined : STRICT_UTF8.decode(body);
  } catch {
    text = undefined;
  }
  const result = text === undefined ? { status, headers, bodyBase64: Buffer.from(body).toString("base64") } : { status, headers, body: text };
  const bytes = envelope({ result });
  if (bytes.length > messageBytes) return { code: GuestErrorCode.HttpFailed, message: `the response does not fit in a host_call answer of ${messageBytes} bytes` };
  return bytes;
}

/** The `http` params of a request, or the refusal of a request that is not an `http` call. */
function readEnvelope(requestBytes: Uint8Array, cap: number): { ok: true; method: string; params: unknown } | { ok: false; refusal: Refusal; method: string } {
  if (requestBytes.length > cap) return { ok: false, method: "?", refusal: { code: GuestErrorCode.InvalidRequest, message: `the request is larger than ${cap} bytes` } };
  let message: unknown;
  try {
    message = JSON.parse(STRICT_UTF8.decode(requestBytes));
  } catch {
    return { ok: false, method: "?", refusal: { code: GuestErrorCode.InvalidRequest, message: "the request is not UTF-8 JSON" } };
  }
  if (!isObject(message) || typeof message.method !== "string") {
    return { ok: false, method: "?", refusal: { code: GuestErrorCode.InvalidRequest, message: 'the request must be {"method": string, "params": ...}' } };
  }
  if (message.method !== "http" && message.method !== "secret" && message.method !== "wait") {
    return { ok: false, method: message.method.slice(0, 64), refusal: { code: GuestErrorCode.UnknownMethod, message: "host_call serves only the methods http, secret and wait" } };
  }
  return { ok: true, method: message.method, params: message.params };
}

/** Serves one `host_call`; always resolves with the answer's bytes. */
export async function serveHostCall(requestBytes: Uint8Array, ctx: HostCallContext, record: (r: HostCallRecord) => void): Promise<Uint8Array> {
  const refuse = (refusal: Refusal, r: HostCallRecord): Uint8Array => {
    record(r);
    return errorReply(refusal);
  };
  const envelopeRead = readEnvelope(requestBytes, Math.min(ctx.messageBytes, hostCallRequestCap(ctx.requestBodyBytes)));
  if (!envelopeRead.ok) return refuse(envelopeRead.refusal, { method: envelopeRead.method, code: envelopeRead.refusal.code });
  if (envelopeRead.method === "secret") return serveSecret(envelopeRead.params, ctx.secrets, record);
  if (envelopeRead.method === "wait") return serveWait(envelopeRead.params, ctx.signal, ctx.remainingMs, record);
  const parsed = parseHttpParams(envelopeRead.params, ctx);
  if (!parsed.ok) return refuse(parsed.refusal, { method: "http", code: parsed.refusal.code, ...(parsed.origin === undefined ? {} : { origin: parsed.origin }) });
  const origin = parsed.origin;
  if (ctx.http === undefined || ctx.egressToken === undefined) {
    return refuse({ code: GuestErrorCode.OriginNotApproved, message: "this call is not granted HTTP" }, { method: "http", origin, code: GuestErrorCode.OriginNotApproved });
  }
  const outcome = await ctx.http.send(parsed.request, { egressToken: ctx.egressToken, signal: ctx.signal, maxResponseBytes: ctx.responseBodyBytes });
  if (!outcome.ok) return refuse({ code: GuestErrorCode.HttpFailed, message: outcome.message }, { method: "http", origin, code: GuestErrorCode.HttpFailed });
  const reply = responseReply(outcome, ctx.messageBytes, parsed.answerBase64 === true);
  if (!(reply instanceof Uint8Array)) return refuse(reply, { method: "http", origin, code: reply.code });
  record({ method: "http", origin, status: outcome.response.status });
  return reply;
}
