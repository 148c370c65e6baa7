// The one host_call envelope every host call goes through (docs/abi.md): `{method, params}`
// written as compact JSON, the host's answer taken back from pinned memory, checked as strict,
// bounded JSON and handed over as its top-level object. http, secret and wait read their own
// `result` and `error` members from it; nothing else in the SDK or a plugin calls host_call.
import { ByteWriter } from "./bytes";
import { JSONLimits, JSONObject, parseJSONBytes, writeJSON } from "./json";
import { takePinned } from "./pinned";
import { Code, Result } from "./result";

// @ts-ignore: decorator
@external("openfief", "host_call")
declare function host_call(ptr: usize, len: usize): i64;

/**
 * Sends `{method, params}` to the host; the answer's top-level object (holding `result` or
 * `error`), or `internal` when the answer is outside memory openfief_alloc returned, not JSON
 * within `limits`, or not an object.
 */
export function exchange(method: string, params: JSONObject, limits: JSONLimits): Result<JSONObject> {
  const envelope = new JSONObject();
  envelope.setString("method", method);
  envelope.set("params", params);
  const w = new ByteWriter();
  writeJSON(w, envelope);
  const out = w.toArrayBuffer();
  const packed = host_call(changetype<usize>(out), <usize>out.byteLength);
  const answer = takePinned(<usize>(<u64>packed >>> 32), <i32>(<u32>(packed & 0xffffffff)));
  if (answer === null) return Result.err<JSONObject>(Code.INTERNAL, "the host answered outside memory openfief_alloc returned");
  const parsed = parseJSONBytes(answer, limits);
  if (!parsed.ok) return Result.err<JSONObject>(Code.INTERNAL, "the host's answer is not JSON: " + parsed.error.message);
  const o = parsed.value.asObject();
  if (o === null) return Result.err<JSONObject>(Code.INTERNAL, "the host's answer is not an object");
  return Result.ok<JSONObject>(o);
}
