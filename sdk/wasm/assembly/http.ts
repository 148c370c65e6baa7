// HTTP through the host (docs/abi.md, host_call "http"): the host sends the request through the
// egress proxy with the plugin's own identity, only to the call's approved origins, and returns
// the answer, a redirect included (never followed). Failures are values with the guest's codes.
import { decodeBase64, encodeBase64 } from "./base64";
import { isUtf8 } from "./bytes";
import { exchange } from "./envelope";
import { JSONBool, JSONLimits, JSONObject } from "./json";
import { Code, Result } from "./result";

/** The largest response body a request accepts unless it says otherwise (4 MiB). */
export const DEFAULT_MAX_BODY_BYTES: i32 = 4 << 20;

const ANSWER_LIMITS = new JSONLimits(8, 10_000);

/** One HTTP request. */
export class HttpRequest {
  /** Request headers, by name. */
  headers: Map<string, string> = new Map<string, string>();
  /** The body, when there is one. */
  body: Uint8Array | null = null;
  /** A larger response body fails the request with http_failed, before anything reads it. */
  maxBodyBytes: i32 = DEFAULT_MAX_BODY_BYTES;
  /**
   * Asks the host for the body as base64 even when it is UTF-8 (`answerBase64`, docs/abi.md):
   * a text body full of quotes (XML) is then decoded in one pass, not unescaped character by
   * character out of a JSON string.
   */
  answerBase64: bool = false;
  /**
   * A body over `maxBodyBytes` comes back as a response with `overCap` set and an empty body
   * (never decoded), for a caller that reports it in its own words; by default it is http_failed.
   */
  overCapAsResponse: bool = false;

  constructor(
    /** GET, POST, … */
    public method: string,
    /** `https://host[:port]/path?query`: only https, and only an approved origin. */
    public url: string,
  ) {}

  /** Sets a header; returns this request. */
  header(name: string, value: string): HttpRequest {
    this.headers.set(name, value);
    return this;
  }
}

/** An HTTP response, a redirect included. */
export class HttpResponse {
  constructor(
    public status: i32,
    /** Response headers, names in lower case. */
    public headers: Map<string, string>,
    public body: Uint8Array,
    /** The body was over the request's cap and left out (only with `overCapAsResponse`). */
    public overCap: bool = false,
  ) {}

  /** The header's value (the name in any case), or null. */
  header(name: string): string | null {
    const key = name.toLowerCase();
    return this.headers.has(key) ? this.headers.get(key) : null;
  }

  /** The body as text, or null when it is not UTF-8. */
  text(): string | null {
    if (!isUtf8(this.body)) return null;
    return String.UTF8.decodeUnsafe(this.body.dataStart, <usize>this.body.length);
  }
}

function requestParams(req: HttpRequest): JSONObject {
  const params = new JSONObject();
  params.setString("method", req.method);
  params.setString("url", req.url);
  const headers = new JSONObject();
  const names = req.headers.keys();
  for (let i = 0; i < names.length; i++) headers.setString(names[i], req.headers.get(names[i]));
  params.set("headers", headers);
  const body = req.body;
  if (body !== null) {
    if (isUtf8(body)) params.setString("body", String.UTF8.decodeUnsafe(body.dataStart, <usize>body.length));
    else params.setString("bodyBase64", encodeBase64(body));
  }
  if (req.answerBase64) params.set("answerBase64", new JSONBool(true));
  return params;
}

/** The host's error codes, as the guest reports them on. */
function guestCode(hostCode: string): string {
  if (hostCode == Code.ORIGIN_NOT_APPROVED) return Code.ORIGIN_NOT_APPROVED;
  // The host found the request malformed: a bug in the plugin or the SDK, not the network's fault.
  if (hostCode == Code.INVALID_REQUEST) return Code.INTERNAL;
  return Code.HTTP_FAILED;
}

function failed(message: string): Result<HttpResponse> {
  return Result.err<HttpResponse>(Code.HTTP_FAILED, message);
}

/** A body over the request's cap: http_failed, or a response marked overCap when the request asks. */
function overCap(req: HttpRequest, status: i32, headers: Map<string, string>): Result<HttpResponse> {
  if (req.overCapAsResponse) return Result.ok<HttpResponse>(new HttpResponse(status, headers, new Uint8Array(0), true));
  return failed("the answer's body is over the cap of " + req.maxBodyBytes.toString() + " bytes");
}

/**
 * Sends `req` through the host. The answer's envelope is checked before it is used: in memory the
 * guest allocated, UTF-8, strict JSON, a status 100–599, string headers, a body of at most
 * `req.maxBodyBytes`.
 */
export function request(req: HttpRequest): Result<HttpResponse> {
  const answer = exchange("http", requestParams(req), ANSWER_LIMITS);
  if (!answer.ok) return Result.fail<HttpResponse>(answer.error);
  const o = answer.value;
  const err = o.get("error");
  if (err !== null) {
    const e = err.asObject();
    let code: string | null = null;
    let message: string | null = null;
    if (e !== null) {
      code = e.getString("code");
      message = e.getString("message");
    }
    return Result.err<HttpResponse>(guestCode(code === null ? Code.HTTP_FAILED : code), message === null ? "" : message);
  }
  const r = o.getObject("result");
  if (r === null) return Result.err<HttpResponse>(Code.INTERNAL, "the host's answer has neither result nor error");
  const status = r.getNumber("status");
  if (status === null || !status.isSafeInteger() || status.toI64() < 100 || status.toI64() > 599) return failed("the answer has no valid status");
  const headers = new Map<string, string>();
  const hv = r.get("headers");
  if (hv !== null) {
    const h = hv.asObject();
    if (h === null) return failed("the answer's headers are not an object");
    for (let i = 0; i < h.keys.length; i++) {
      const s = h.values[i].asString();
      if (s === null) return failed("the answer's header " + h.keys[i] + " is not a string");
      headers.set(h.keys[i].toLowerCase(), s.value);
    }
  }
  const text = r.get("body");
  const b64 = r.get("bodyBase64");
  if (text !== null && b64 !== null) return failed("the answer has both body and bodyBase64");
  let body = new Uint8Array(0);
  const code = <i32>status.toI64();
  if (text !== null) {
    const s = text.asString();
    if (s === null) return failed("the answer's body is not a string");
    // The UTF-8 length without encoding: the cap holds before a copy is made.
    if (<i64>String.UTF8.byteLength(s.value) > <i64>req.maxBodyBytes) return overCap(req, code, headers);
    body = Uint8Array.wrap(String.UTF8.encode(s.value));
  } else if (b64 !== null) {
    const s = b64.asString();
    if (s === null) return failed("the answer's bodyBase64 is not a string");
    if ((s.value.length / 4) * 3 - 2 > req.maxBodyBytes) return overCap(req, code, headers);
    const decoded = decodeBase64(s.value);
    if (!decoded.ok) return failed("the answer's bodyBase64 is not base64");
    body = decoded.value;
    if (body.length > req.maxBodyBytes) return overCap(req, code, headers);
  }
  return Result.ok<HttpResponse>(new HttpResponse(code, headers, body));
}

/** A GET of `url` with optional headers and body cap. */
export function get(url: string, headers: Map<string, string> | null = null, maxBodyBytes: i32 = DEFAULT_MAX_BODY_BYTES): Result<HttpResponse> {
  const req = new HttpRequest("GET", url);
  if (headers !== null) req.headers = headers;
  req.maxBodyBytes = maxBodyBytes;
  return request(req);
}
