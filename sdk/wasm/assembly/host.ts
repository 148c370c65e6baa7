// The host calls besides http (docs/abi.md, "secret" and "wait"): a value of one of the Secrets
// the owner granted the instance, read by the host on every call, and a pause the host serves
// within the call's deadline (WASI preview 1 has no sleep the host answers).
import { exchange } from "./envelope";
import { JSONLimits, JSONNumber, JSONObject } from "./json";
import { CallError, Code, Result } from "./result";

const ANSWER_LIMITS = new JSONLimits(4, 16);

/** Sends `{method, params}` through host_call; the answer's result object, or its error. */
function call(method: string, params: JSONObject): Result<JSONObject> {
  const answer = exchange(method, params, ANSWER_LIMITS);
  if (!answer.ok) return answer;
  const o = answer.value;
  const err = o.getObject("error");
  if (err !== null) {
    const code = err.getString("code");
    const message = err.getString("message");
    // A host without the method is older than the plugin: the plugin cannot work there.
    const c = code === null || code == Code.UNKNOWN_METHOD ? Code.INTERNAL : code;
    return Result.err<JSONObject>(c, message === null ? "" : message);
  }
  const r = o.getObject("result");
  if (r === null) return Result.err<JSONObject>(Code.INTERNAL, "the host's answer has neither result nor error");
  return Result.ok<JSONObject>(r);
}

/**
 * The value of `key` in the Secret the owner granted this instance for `role` (a role the
 * manifest names). The host reads it on every call, so a rotated token is used at once, and
 * redacts it from everything the plugin logs or reports. A role not granted, or a key the Secret
 * does not hold, is `invalid_request` with a message naming the role and key (never a value).
 */
export function secret(role: string, key: string): Result<string> {
  const params = new JSONObject();
  params.setString("role", role);
  params.setString("key", key);
  const r = call("secret", params);
  if (!r.ok) return Result.fail<string>(r.error);
  const value = r.value.getString("value");
  if (value === null) return Result.err<string>(Code.INTERNAL, "the host's secret answer has no value");
  return Result.ok<string>(value);
}

/**
 * Pauses the call for `ms` milliseconds (1–5,000), within its deadline: null once waited, or why
 * not (a pause that would not end before the call's deadline is refused at once).
 */
export function wait(ms: i32): CallError | null {
  const params = new JSONObject();
  params.set("ms", JSONNumber.of(<i64>ms));
  const r = call("wait", params);
  return r.ok ? null : r.error;
}
