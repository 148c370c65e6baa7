// The smallest useful plugin: it answers `manifest`, echoes its params back through the SDK's
// strict JSON reader and writer, logs, and fetches a URL over host_call. The SDK's tests run it.
export * from "../../../assembly/exports";
import { JSONObject, JSONNumber, JSONValue, Code, Result, get, log, okObject, pinnedCount, register, registerManifest } from "../../../assembly/index";

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

/** `fetch`: GET params.url; answers the status, the content-type and the body as text. */
function fetch(params: JSONValue): Result<JSONValue> {
  const p = params.asObject();
  if (p === null) return Result.err<JSONValue>(Code.INVALID_REQUEST, "fetch takes {url: string}");
  const url = p.getString("url");
  if (url === null) return Result.err<JSONValue>(Code.INVALID_REQUEST, "fetch takes {url: string}");
  const headers = new Map<string, string>();
  headers.set("accept", "text/plain");
  const res = get(url, headers, 1 << 20);
  if (!res.ok) return Result.fail<JSONValue>(res.error);
  const r = res.value;
  const out = new JSONObject().set("status", JSONNumber.of(r.status));
  const type = r.header("Content-Type");
  if (type !== null) out.setString("contentType", type);
  const text = r.text();
  if (text !== null) out.setString("body", text);
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
