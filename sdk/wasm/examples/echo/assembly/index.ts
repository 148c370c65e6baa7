// The smallest useful plugin: it answers `manifest`, echoes its params back through the SDK's
// strict JSON reader and writer, logs, and fetches a URL over host_call. The SDK's tests run it.
export * from "../../../assembly/exports";
import { JSONBool, JSONKind, JSONObject, JSONNumber, JSONValue, Code, HttpRequest, Result, log, okObject, pinnedCount, register, registerManifest, request } from "../../../assembly/index";

registerManifest('{"capabilities":["connector"],"egress":[{"host":"example.com"}],"secrets":[],"dataTiers":[]}');

/** `echo`: the params, as parsed and written again. */
function echo(params: JSONValue): Result<JSONValue> {
  return Result.ok<JSONValue>(params);
}

/** `log`: writes params.message once as info (stdout) and once as error (stderr). */
function logTwice(params: JSONValue): Result<JSONValue> {
  const p = params.asObject();
  if (p === null) return Result.err<JSONValue>(Code.INVALID_REQUEST, "log takes {message: string}");
  const message = p.getString("message");
  if (message === null) return Result.err<JSONValue>(Code.INVALID_REQUEST, "log takes {message: string}");
  log.info(message);
  log.error(message);
  return okObject(new JSONObject());
}

/** The boolean params.`key`, false when absent. */
function flag(p: JSONObject, key: string): bool {
  const v = p.get(key);
  return v !== null && v.kind == JSONKind.Bool && changetype<JSONBool>(v).value;
}

/**
 * `fetch`: GET params.url (with params.answerBase64 and params.overCapAsResponse, when true);
 * answers the status, the content-type, the body as text, and overCap when the body was over the cap.
 */
function fetch(params: JSONValue): Result<JSONValue> {
  const p = params.asObject();
  if (p === null) return Result.err<JSONValue>(Code.INVALID_REQUEST, "fetch takes {url: string}");
  const url = p.getString("url");
  if (url === null) return Result.err<JSONValue>(Code.INVALID_REQUEST, "fetch takes {url: string}");
  const req = new HttpRequest("GET", url).header("accept", "text/plain");
  req.maxBodyBytes = 1 << 20;
  req.answerBase64 = flag(p, "answerBase64");
  req.overCapAsResponse = flag(p, "overCapAsResponse");
  const res = request(req);
  if (!res.ok) return Result.fail<JSONValue>(res.error);
  const r = res.value;
  const out = new JSONObject().set("status", JSONNumber.of(r.status));
  const type = r.header("Content-Type");
  if (type !== null) out.setString("contentType", type);
  const text = r.text();
  if (text !== null) out.setString("body", text);
  if (r.overCap) out.set("overCap", new JSONBool(true));
  return okObject(out);
}

/** `pinned`: how many buffers the host holds (0 between calls when nothing leaks). */
function pinned(_params: JSONValue): Result<JSONValue> {
  return okObject(new JSONObject().set("pinned", JSONNumber.of(pinnedCount())));
}

register("echo", echo);
register("log", logTwice);
register("fetch", fetch);
register("pinned", pinned);
