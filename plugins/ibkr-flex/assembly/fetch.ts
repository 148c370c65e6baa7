// A GET through the host's http call that asks for the answer's body as base64 (answerBase64,
// docs/abi.md): a Flex statement is XML full of double quotes, which as a JSON string would need
// one unescape per quote; base64 decodes in one linear pass whatever the body holds.
import { ByteWriter, Code, HttpResponse, JSONBool, JSONLimits, JSONObject, Result, decodeBase64, parseJSONBytes, writeJSON } from "@openfief/sdk-wasm/assembly";
import { takePinned } from "@openfief/sdk-wasm/assembly/pinned";

// @ts-ignore: decorator
@external("openfief", "host_call")
declare function host_call(ptr: usize, len: usize): i64;

/** GETs `url`; a body over `maxBodyBytes` fails before it is decoded. Codes as the SDK's `get`. */
export function getBase64(url: string, headers: Map<string, string>, maxBodyBytes: i32): Result<HttpResponse> {
  const params = new JSONObject();
  params.setString("method", "GET");
  params.setString("url", url);
  const h = new JSONObject();
  const names = headers.keys();
  for (let i = 0; i < names.length; i++) h.setString(names[i], headers.get(names[i]));
  params.set("headers", h);
  params.set("answerBase64", new JSONBool(true));
  const envelope = new JSONObject();
  envelope.setString("method", "http");
  envelope.set("params", params);
  const w = new ByteWriter();
  writeJSON(w, envelope);
  const out = w.toArrayBuffer();
  const packed = host_call(changetype<usize>(out), <usize>out.byteLength);
  const answer = takePinned(<usize>(<u64>packed >>> 32), <i32>(<u32>(packed & 0xffffffff)));
  if (answer === null) return Result.err<HttpResponse>(Code.INTERNAL, "the host answered outside memory openfief_alloc returned");
  const parsed = parseJSONBytes(answer, new JSONLimits(8, 10_000));
  if (!parsed.ok) return Result.err<HttpResponse>(Code.INTERNAL, "the host's answer is not JSON: " + parsed.error.message);
  const o = parsed.value.asObject();
  if (o === null) return Result.err<HttpResponse>(Code.INTERNAL, "the host's answer is not an object");
  const err = o.getObject("error");
  if (err !== null) {
    const code = err.getString("code");
    const message = err.getString("message");
    const c = code == Code.ORIGIN_NOT_APPROVED ? Code.ORIGIN_NOT_APPROVED : code == Code.INVALID_REQUEST ? Code.INTERNAL : Code.HTTP_FAILED;
    return Result.err<HttpResponse>(c, message === null ? "" : message);
  }
  const r = o.getObject("result");
  if (r === null) return Result.err<HttpResponse>(Code.INTERNAL, "the host's answer has neither result nor error");
  const status = r.getNumber("status");
  if (status === null || !status.isSafeInteger() || status.toI64() < 100 || status.toI64() > 599) return Result.err<HttpResponse>(Code.HTTP_FAILED, "the answer has no valid status");
  let body = new Uint8Array(0);
  const b64 = r.getString("bodyBase64");
  const text = r.getString("body");
  if (b64 !== null) {
    if ((b64.length / 4) * 3 - 2 > maxBodyBytes) return Result.ok<HttpResponse>(new HttpResponse(<i32>status.toI64(), new Map<string, string>(), new Uint8Array(maxBodyBytes + 1)));
    const decoded = decodeBase64(b64);
    if (!decoded.ok) return Result.err<HttpResponse>(Code.HTTP_FAILED, "the answer's bodyBase64 is not base64");
    body = decoded.value;
  } else if (text !== null) {
    // A host that does not know answerBase64 answers text as before.
    body = Uint8Array.wrap(String.UTF8.encode(text));
  }
  return Result.ok<HttpResponse>(new HttpResponse(<i32>status.toI64(), new Map<string, string>(), body));
}
