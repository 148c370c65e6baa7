import fc from "fast-check";
import { canonicalize } from "json-canonicalize";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "./canonical.js";

describe("canonicalJson", () => {
  it("produces the same text as json-canonicalize for any JSON value", () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => canonicalJson(v) === canonicalize(v)), { numRuns: 200 });
  });

  it.each([
    [{ b: 1, a: [true, null, "x"] }, '{"a":[true,null,"x"],"b":1}'],
    [{ "é": 1, e: 2, "\u20ac": 3, "\ud83d\ude00": 4 }, '{"e":2,"é":1,"€":3,"😀":4}'],
    [{ n: 1e21, m: 0.1, z: -0 }, '{"m":0.1,"n":1e+21,"z":0}'],
    [{ keep: 1, gone: undefined }, '{"keep":1}'],
    [[undefined], "[null]"],
    [{ image: { toJSON: () => "registry.example/x@sha256:aa" } }, '{"image":"registry.example/x@sha256:aa"}'],
  ])("writes %j as %s", (value, text) => {
    expect(canonicalJson(value)).toBe(text);
  });

  it.each([
    ["a non-finite number", { x: Number.NaN }],
    ["a function", () => 1],
    ["a cycle", (() => { const o: Record<string, unknown> = {}; o.self = o; return o; })()],
  ])("refuses %s", (_what, value) => {
    expect(() => canonicalJson(value)).toThrow();
  });
});
