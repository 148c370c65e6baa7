import { describe, expect, it } from "vitest";
import { parseHttpParams, serveHostCall, type HostCallContext } from "./host-call.js";
import type { HttpCapability } from "./http.js";

const origins = new Set(["https://api.example.com", "https://api.example.com:8443"]);
const ctx = { origins, requestBodyBytes: 16 };

describe("parseHttpParams", () => {
  it.each([
    ["the default port", "https://api.example.com/a?b=1#frag", "https://api.example.com/a?b=1"],
    ["an explicit port", "https://api.example.com:8443/", "https://api.example.com:8443/"],
    ["upper case and :443", "https://API.example.com:443/x", "https://api.example.com/x"],
  ])("accepts an approved origin with %s", (_name, url, want) => {
    const r = parseHttpParams({ method: "GET", url }, ctx);
    expect(r.ok && r.request.url).toBe(want);
  });

  it.each([
    ["a GET whose body is null (Rust's None, Go's nil)", { method: "GET", url: "https://api.example.com/", body: null }],
    ["a GET whose bodyBase64 and headers are null", { method: "GET", url: "https://api.example.com/", bodyBase64: null, headers: null }],
    ["a DELETE whose body is null and bodyBase64 absent", { method: "DELETE", url: "https://api.example.com/", body: null }],
  ])("takes null for no body: %s", (_name, params) => {
    const r = parseHttpParams(params, ctx);
    expect(r.ok && r.request).toEqual({ method: params.method, url: "https://api.example.com/", headers: {} });
  });

  it("sends a body given beside a null bodyBase64", () => {
    const r = parseHttpParams({ method: "POST", url: "https://api.example.com/", body: "hi", bodyBase64: null }, ctx);
    expect(r.ok && r.request.body).toEqual(new TextEncoder().encode("hi"));
  });

  it.each([
    ["a body that is a number", { method: "POST", url: "https://api.example.com/", body: 1 }, "invalid_request"],
    ["another host", { method: "GET", url: "https://evil.example.com/" }, "origin_not_approved"],
    ["another port", { method: "GET", url: "https://api.example.com:444/" }, "origin_not_approved"],
    ["an IP literal", { method: "GET", url: "https://127.0.0.1/" }, "origin_not_approved"],
    ["a look-alike userinfo trick", { method: "GET", url: "https://api.example.com@evil.example.com/" }, "invalid_request"],
    ["http", { method: "GET", url: "http://api.example.com/" }, "invalid_request"],
    ["no params", null, "invalid_request"],
    ["an unknown field", { method: "GET", url: "https://api.example.com/", follow: true }, "invalid_request"],
    ["a huge URL", { method: "GET", url: `https://api.example.com/${"a".repeat(9000)}` }, "invalid_request"],
    ["a header twice in other case", { method: "GET", url: "https://api.example.com/", headers: { Accept: "a", accept: "b" } }, "invalid_request"],
    ["a non-token header name", { method: "GET", url: "https://api.example.com/", headers: { "a b": "x" } }, "invalid_request"],
    ["body and bodyBase64", { method: "POST", url: "https://api.example.com/", body: "a", bodyBase64: "YQ==" }, "invalid_request"],
    ["a body over the cap", { method: "POST", url: "https://api.example.com/", body: "x".repeat(17) }, "invalid_request"],
  ])("refuses %s", (_name, params, code) => {
    const r = parseHttpParams(params, ctx);
    expect(r.ok === false && r.refusal.code).toBe(code);
  });
});

describe("serveHostCall", () => {
  const sent: string[] = [];
  const http: HttpCapability = {
    send: (req) => {
      sent.push(req.url);
      return Promise.resolve({ ok: true, response: { status: 200, headers: {}, body: new TextEncoder().encode("hi") } });
    },
    close: () => Promise.resolve(),
  };
  const context: HostCallContext = { origins, egressToken: "t", http, signal: new AbortController().signal, messageBytes: 1024, requestBodyBytes: 16, responseBodyBytes: 16 };
  const call = async (text: string | Uint8Array) => JSON.parse(new TextDecoder().decode(await serveHostCall(typeof text === "string" ? new TextEncoder().encode(text) : text, context, () => undefined))) as unknown;

  it.each([
    ["not JSON", "{", "invalid_request"],
    ["not UTF-8", new Uint8Array([0x7b, 0xff, 0x7d]), "invalid_request"],
    ["no method", "{}", "invalid_request"],
    ["another method", '{"method":"exec","params":{}}', "unknown_method"],
  ])("answers a request that is %s with an error envelope", async (_name, text, code) => {
    expect(await call(text)).toEqual({ error: { code, message: expect.any(String) } });
  });

  it("answers an approved request with the port's response", async () => {
    expect(await call('{"method":"http","params":{"method":"GET","url":"https://api.example.com/x"}}')).toEqual({ result: { status: 200, headers: {}, body: "hi" } });
    expect(sent).toEqual(["https://api.example.com/x"]);
  });

  it("refuses a request larger than the cap before parsing it", async () => {
    const big = JSON.stringify({ method: "http", params: { method: "POST", url: "https://api.example.com/", body: "x".repeat(200_000) } });
    expect(await call(big)).toEqual({ error: { code: "invalid_request", message: expect.stringMatching(/larger than/) } });
  });
});
