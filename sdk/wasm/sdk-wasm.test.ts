/**
 * @openfief/sdk-wasm as a plugin sees it, through its committed example (examples/echo): the ABI's
 * exports, the strict and bounded JSON reader and writer, the request envelope, logging, HTTP
 * over host_call and how each host answer maps to the guest's codes, and pinned memory that is
 * handed back. The example is rebuilt by `npm run build` here; its SHA-256 is checked below.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TestGuest, type HostCallAnswer, type HostCallRequest } from "./testing/guest.js";

const here = import.meta.dirname;
const MODULE = readFileSync(join(here, "examples/echo/build/echo.wasm"));

const load = (hostCall?: (r: HostCallRequest) => HostCallAnswer) => TestGuest.load(MODULE, hostCall === undefined ? {} : { hostCall });
const raw = (g: TestGuest, text: string | Buffer) => JSON.parse(g.callRaw(typeof text === "string" ? Buffer.from(text, "utf8") : text)) as { result?: unknown; error?: { code: string; message: string } };

describe("the ABI exports", () => {
  it("import nothing but wasi_snapshot_preview1.fd_write and openfief.host_call", () => {
    expect(TestGuest.imports(MODULE)).toEqual([
      { module: "wasi_snapshot_preview1", name: "fd_write", kind: "function" },
      { module: "openfief", name: "host_call", kind: "function" },
    ]);
  });

  it("are memory, _initialize, openfief_abi_version, openfief_alloc and openfief_call", () => {
    expect(TestGuest.exports(MODULE).map((e) => e.name).sort()).toEqual(["_initialize", "memory", "openfief_abi_version", "openfief_alloc", "openfief_call"]);
  });

  it("report ABI version 1", async () => {
    expect((await load()).abiVersion()).toBe(1);
  });

  it("answer a request that is not in memory openfief_alloc returned with invalid_request", async () => {
    const g = await load();
    expect(JSON.parse(g.callAt(16, 20))).toMatchObject({ error: { code: "invalid_request" } });
  });

  it("hand every pinned buffer back: none is held between calls", async () => {
    const g = await load(() => ({ result: { status: 200, headers: {}, body: "ok" } }));
    for (let i = 0; i < 50; i++) g.call("fetch", { url: `https://example.com/${i}` });
    expect(g.call("pinned", {})).toEqual({ result: { pinned: 0 } });
  });
});

describe("the JSON reader and writer", () => {
  it.each([
    ["an object, members in order", '{"b":1,"a":[true,false,null],"c":{}}'],
    ["numbers as written", '[0,-0,1.50,2.5e3,-1E-7,12345678901234567890123]'],
    ["escapes, written back minimally", '["quote \\" backslash \\\\ slash / tab \\t newline \\n"]'],
    ["a control character, written as \\u", '"\\u0001\\u001f"'],
    ["non-ASCII as UTF-8", '"zażółć 日本 \\u00e9"'],
    ["a surrogate pair", '"\\ud83d\\ude00 😀"'],
    ["deep but within 64 levels", `${"[".repeat(63)}${"]".repeat(63)}`],
  ])("round-trips %s", async (_name, text) => {
    const g = await load();
    const response = g.callRaw(Buffer.from(`{"method":"echo","params":${text}}`, "utf8"));
    expect(JSON.parse(response)).toEqual({ result: JSON.parse(text) });
  });

  it("keeps a number's text exactly, never through a double", async () => {
    const g = await load();
    expect(g.callRaw(Buffer.from('{"method":"echo","params":[1.50,2.5e3,12345678901234567890123]}'))).toBe('{"result":[1.50,2.5e3,12345678901234567890123]}');
  });

  it("reads and writes a long string of escapes in time linear in its length", async () => {
    // 200,000 escapes (a quoted XML statement is this): one array part per escape made this
    // quadratic (80,000 took 10 s, 200,000 a minute); read into one buffer it takes well under a
    // second quiet (the bound leaves room for a loaded machine).
    const n = 200_000;
    const text = 'a"\\é\n😀'.repeat(n / 5);
    const g = await load();
    const started = performance.now();
    const out = g.callRaw(Buffer.from(`{"method":"echo","params":${JSON.stringify(text)}}`, "utf8"));
    const ms = performance.now() - started;
    expect(JSON.parse(out)).toEqual({ result: text });
    expect(ms).toBeLessThan(10_000);
    // \u escapes (a surrogate pair among them) decode to the same UTF-8 as the characters.
    const escaped = "\\u0041\\u00e9\\u65e5\\ud83d\\ude00\\u0000".repeat(1000);
    expect(JSON.parse(g.callRaw(Buffer.from(`{"method":"echo","params":"${escaped}"}`, "utf8")))).toEqual({ result: "Aé日😀\u0000".repeat(1000) });
  });

  it.each([
    ["a trailing comma", "[1,]"],
    ["a leading zero", "[01]"],
    ["a bare fraction", "[.5]"],
    ["a comment", "[1 /* one */]"],
    ["NaN", "[NaN]"],
    ["single quotes", "['a']"],
    ["an unquoted key", "{a:1}"],
    ["a duplicate key", '{"a":1,"a":2}'],
    ["a raw control character in a string", '"a\u0001b"'],
    ["a lone high surrogate", '"\\ud800"'],
    ["a lone low surrogate", '"\\udc00"'],
    ["an unknown escape", '"\\x41"'],
    ["nesting deeper than 64", `${"[".repeat(65)}${"]".repeat(65)}`],
    ["more than 100,000 values", `[${"0,".repeat(100_000)}0]`],
    ["content after the value", "1 2"],
  ])("refuses %s with invalid_request", async (_name, params) => {
    const g = await load();
    expect(raw(g, `{"method":"echo","params":${params}}`).error?.code).toBe("invalid_request");
  });

  it.each([
    ["an overlong encoding", [0xc0, 0xaf]],
    ["a surrogate encoded in UTF-8", [0xed, 0xa0, 0x80]],
    ["a truncated sequence", [0xe2, 0x82]],
    ["a code point above U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
  ])("refuses a request with %s", async (_name, bytes) => {
    const g = await load();
    const request = Buffer.concat([Buffer.from('{"method":"echo","params":"'), Buffer.from(bytes), Buffer.from('"}')]);
    expect(raw(g, request).error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^invalid UTF-8 at byte \d+$/) });
  });
});

describe("the request envelope", () => {
  it.each([
    ["not an object", '["echo"]', "invalid_request"],
    ["no method", '{"params":{}}', "invalid_request"],
    ["a method that is not a string", '{"method":1,"params":{}}', "invalid_request"],
    ["no params", '{"method":"echo"}', "invalid_request"],
    ["an extra field", '{"method":"echo","params":{},"id":1}', "invalid_request"],
    ["a method nobody registered", '{"method":"sync","params":{}}', "unknown_method"],
  ])("answers %s with %s", async (_name, request, code) => {
    expect(raw(await load(), request).error?.code).toBe(code);
  });

  it("answers manifest with the registered manifest", async () => {
    expect((await load()).call("manifest", {})).toEqual({ result: { capabilities: ["connector"], egress: [{ host: "example.com" }], secrets: [], dataTiers: [] } });
  });
});

describe("logging", () => {
  it("writes info to stdout and errors to stderr, one line per call even when the message holds newlines", async () => {
    const g = await load();
    expect(g.call("log", { message: "line one\nline two\r\nend" })).toEqual({ result: {} });
    expect(g.stdout).toEqual(["info: line one line two  end\n"]);
    expect(g.stderr).toEqual(["error: line one line two  end\n"]);
  });
});

describe("HTTP over host_call", () => {
  it("sends the request envelope the ABI describes and reads the answer", async () => {
    const g = await load(() => ({ result: { status: 200, headers: { "Content-Type": "text/plain; charset=utf-8" }, body: "grüß" } }));
    expect(g.call("fetch", { url: "https://example.com/a?b=c" })).toEqual({ result: { status: 200, contentType: "text/plain; charset=utf-8", body: "grüß" } });
    expect(g.hostCalls).toEqual([{ method: "http", params: { method: "GET", url: "https://example.com/a?b=c", headers: { accept: "text/plain" } } }]);
  });

  it("reads a body sent as bodyBase64", async () => {
    const g = await load(() => ({ result: { status: 200, headers: {}, bodyBase64: Buffer.from("über").toString("base64") } }));
    expect(g.call("fetch", { url: "https://example.com/" }).result).toEqual({ status: 200, body: "über" });
  });

  it("asks for the body as base64 with answerBase64, and decodes it", async () => {
    const xml = `<a b="1">${"&quot;".repeat(1000)}</a>`;
    const g = await load((r) => ({ result: { status: 200, headers: {}, ...((r.params as { answerBase64?: boolean }).answerBase64 === true ? { bodyBase64: Buffer.from(xml).toString("base64") } : { body: xml }) } }));
    expect(g.call("fetch", { url: "https://example.com/s.xml", answerBase64: true }).result).toEqual({ status: 200, body: xml });
    expect(g.hostCalls[0]?.params).toEqual({ method: "GET", url: "https://example.com/s.xml", headers: { accept: "text/plain" }, answerBase64: true });
  });

  it.each([
    ["as text", { body: "x".repeat((1 << 20) + 1) }],
    ["as base64", { bodyBase64: Buffer.alloc((1 << 20) + 1, 0x78).toString("base64") }],
  ])("hands a body over the cap %s back as a response marked overCap, when asked, without decoding it", async (_name, body) => {
    const g = await load(() => ({ result: { status: 200, headers: { "content-type": "text/xml" }, ...body } }));
    expect(g.call("fetch", { url: "https://example.com/", overCapAsResponse: true }).result).toEqual({ status: 200, contentType: "text/xml", body: "", overCap: true });
    expect(g.call("fetch", { url: "https://example.com/" }).error).toEqual({ code: "http_failed", message: "the answer's body is over the cap of 1048576 bytes" });
  });

  it("returns a redirect as a response, with its status", async () => {
    const g = await load(() => ({ result: { status: 302, headers: { location: "https://elsewhere.example/" } } }));
    expect(g.call("fetch", { url: "https://example.com/" }).result).toEqual({ status: 302, body: "" });
    expect(g.hostCalls).toHaveLength(1);
  });

  it.each([
    ["http_failed", { error: { code: "http_failed", message: "connection reset" } }, "http_failed"],
    ["origin_not_approved", { error: { code: "origin_not_approved", message: "https://x is pending approval" } }, "origin_not_approved"],
    ["invalid_request (the plugin's own bug)", { error: { code: "invalid_request", message: "bad url" } }, "internal"],
    ["a code the ABI does not list", { error: { code: "plugin_failed", message: "x" } }, "http_failed"],
    ["a status outside 100-599", { result: { status: 700, headers: {} } }, "http_failed"],
    ["a status that is not an integer", { result: { status: 200.5, headers: {} } }, "http_failed"],
    ["a header that is not a string", { result: { status: 200, headers: { a: 1 } } }, "http_failed"],
    ["both body and bodyBase64", { result: { status: 200, headers: {}, body: "a", bodyBase64: "YQ==" } }, "http_failed"],
    ["bodyBase64 that is not base64", { result: { status: 200, headers: {}, bodyBase64: "YQ=" } }, "http_failed"],
    ["a body over the request's 1 MiB cap", { result: { status: 200, headers: {}, body: "x".repeat((1 << 20) + 1) } }, "http_failed"],
    ["neither result nor error", { status: 200 }, "internal"],
    ["bytes that are not JSON", { raw: Buffer.from("{not json") }, "internal"],
  ] as [string, HostCallAnswer, string][])("maps the host answering %s to %s", async (_name, answer, code) => {
    const g = await load(() => answer);
    const response = g.call("fetch", { url: "https://example.com/" });
    expect(response.error?.code).toBe(code);
    expect(g.call("pinned", {})).toEqual({ result: { pinned: 0 } });
  });

  it("passes the host's message on with the code", async () => {
    const g = await load(() => ({ error: { code: "origin_not_approved", message: "https://example.com is pending approval" } }));
    expect(g.call("fetch", { url: "https://example.com/" }).error).toEqual({ code: "origin_not_approved", message: "https://example.com is pending approval" });
  });
});

describe("the example's build", () => {
  it("is the module whose SHA-256 examples/echo/build/echo.wasm.sha256 records", () => {
    const hex = createHash("sha256").update(MODULE).digest("hex");
    expect(readFileSync(join(here, "examples/echo/build/echo.wasm.sha256"), "utf8")).toBe(`${hex}  echo.wasm\n`);
  });
});
