import { describe, expect, it } from "vitest";
import { parseResponse } from "./response.js";

const enc = (s: string) => new TextEncoder().encode(s);

describe("parseResponse", () => {
  it.each([
    ['{"result":{"a":1}}', { ok: true, result: { a: 1 } }],
    ['{"result":null}', { ok: true, result: null }],
    ['{"error":{"code":"unknown_method","message":"no"}}', { ok: false, error: { source: "plugin", code: "unknown_method", message: "no" } }],
  ])("reads %s", (text, want) => {
    expect(parseResponse(enc(text))).toEqual(want);
  });

  it.each([
    ["not JSON", "nope"],
    ["an array", "[1]"],
    ["both fields", '{"result":1,"error":{"code":"internal","message":""}}'],
    ["no field", "{}"],
    ["a host code", '{"error":{"code":"plugin_failed","message":"x"}}'],
    ["an unknown code", '{"error":{"code":"teapot","message":"x"}}'],
    ["an error without a message", '{"error":{"code":"internal"}}'],
  ])("refuses %s as plugin_failed", (_name, text) => {
    const r = parseResponse(enc(text));
    expect(r.ok === false && r.error).toMatchObject({ source: "host", code: "plugin_failed" });
  });

  it("refuses bytes that are not UTF-8", () => {
    expect(parseResponse(new Uint8Array([0x7b, 0xff, 0x7d])).ok).toBe(false);
  });
});
