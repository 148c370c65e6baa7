// The ABI's call side (docs/abi.md, version 1): a table of handlers by method, and
// openfief_call, which reads the request the host wrote, dispatches it, and leaves the response
// in pinned memory until the next call.
import { ByteWriter } from "./bytes";
import { JSONLimits, JSONObject, JSONValue, parseJSON, parseJSONBytes, writeJSON, writeJSONString } from "./json";
import { allocPinned, takePinned } from "./pinned";
import { Code, Result } from "./result";

/** The ABI version this SDK speaks. */
export const ABI_VERSION: i32 = 1;

/** A method's handler: params in, a result value or a CallError out. */
export type Handler = (params: JSONValue) => Result<JSONValue>;

const handlers = new Map<string, Handler>();

/** The limits every call's request is parsed within. */
export const REQUEST_LIMITS = new JSONLimits(64, 100_000);

/** Registers the handler of `method`; call it at the top level of the plugin, once per method. */
export function register(method: string, handler: Handler): void {
  if (handlers.has(method)) abort("method " + method + " registered twice");
  handlers.set(method, handler);
}

/**
 * Registers `manifest`, answering with `manifestJson` (the plugin's manifest, exactly its signed
 * label). It is parsed now, so a plugin whose manifest is not strict JSON fails to start.
 */
export function registerManifest(manifestJson: string): void {
  const parsed = parseJSON(manifestJson, REQUEST_LIMITS);
  if (!parsed.ok) abort("the plugin's manifest is not JSON: " + parsed.error.message);
  if (parsed.value.asObject() === null) abort("the plugin's manifest is not a JSON object");
  manifestValue = parsed.value;
  register("manifest", answerManifest);
}

let manifestValue: JSONValue | null = null;

function answerManifest(params: JSONValue): Result<JSONValue> {
  const p = params.asObject();
  if (p === null || p.size != 0) return Result.err<JSONValue>(Code.INVALID_REQUEST, "manifest takes {} as params");
  return Result.ok<JSONValue>(manifestValue!);
}

/** True for a code a plugin may report: snake_case, and never one of the host's plugin_* codes. */
function isGuestCode(code: string): bool {
  if (code.length == 0 || code.length > 64 || code.startsWith("plugin_")) return false;
  for (let i = 0; i < code.length; i++) {
    const c = code.charCodeAt(i);
    const ok = (c >= 0x61 && c <= 0x7a) || c == 0x5f || (i > 0 && c >= 0x30 && c <= 0x39);
    if (!ok) return false;
  }
  return true;
}

function errorBytes(code: string, message: string): ByteWriter {
  const w = new ByteWriter();
  w.text('{"error":{"code":');
  writeJSONString(w, isGuestCode(code) ? code : Code.INTERNAL);
  w.text(',"message":');
  writeJSONString(w, message);
  w.text("}}");
  return w;
}

function dispatch(request: Uint8Array): ByteWriter {
  const parsed = parseJSONBytes(request, REQUEST_LIMITS);
  if (!parsed.ok) return errorBytes(Code.INVALID_REQUEST, parsed.error.message);
  const o = parsed.value.asObject();
  if (o === null) return errorBytes(Code.INVALID_REQUEST, "the request is not a JSON object");
  for (let i = 0; i < o.keys.length; i++) {
    const k = o.keys[i];
    if (k != "method" && k != "params") return errorBytes(Code.INVALID_REQUEST, "unknown request field " + k);
  }
  const method = o.getString("method");
  if (method === null) return errorBytes(Code.INVALID_REQUEST, "the request has no method string");
  const params = o.get("params");
  if (params === null) return errorBytes(Code.INVALID_REQUEST, "the request has no params");
  if (!handlers.has(method)) return errorBytes(Code.UNKNOWN_METHOD, "no method " + method);
  const handler = handlers.get(method);
  const result = handler(params);
  if (!result.ok) return errorBytes(result.error.code, result.error.message);
  const w = new ByteWriter(1024);
  w.text('{"result":');
  writeJSON(w, result.value);
  w.byte(0x7d);
  return w;
}

let lastResponse: usize = 0;

/** The ABI's openfief_abi_version: 1. */
export function abiVersion(): i32 {
  return ABI_VERSION;
}

/** The ABI's openfief_alloc. */
export function alloc(len: i32): i32 {
  return <i32>allocPinned(len);
}

/** The ABI's openfief_call: the request at ptr/len in, `(resPtr << 32) | resLen` out. */
export function call(ptr: i32, len: i32): i64 {
  // The previous response had to stay valid until this call; now it may go.
  if (lastResponse != 0) {
    __unpin(lastResponse);
    lastResponse = 0;
  }
  const request = takePinned(<usize>ptr, len);
  const w = request === null ? errorBytes(Code.INVALID_REQUEST, "the request is not in memory openfief_alloc returned") : dispatch(request);
  const out = w.toArrayBuffer();
  const p = changetype<usize>(out);
  __pin(p);
  lastResponse = p;
  return (<i64>p << 32) | <i64>out.byteLength;
}

/** Builds an object result: `Result.ok` of a new JSONObject, for handlers. */
export function okObject(o: JSONObject): Result<JSONValue> {
  return Result.ok<JSONValue>(o);
}
