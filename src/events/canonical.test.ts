import fc from "fast-check";
import { canonicalize } from "json-canonicalize";
import { describe, expect, it } from "vitest";
import { canonicalForm, canonicalJson } from "./canonical.js";

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

describe("canonicalForm", () => {
  it("gives the value its text denotes, for any JSON value", () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => {
      const c = canonicalForm(v);
      expect(c.value).toEqual(JSON.parse(c.text));
      return c.text === canonicalize(v);
    }), { numRuns: 200 });
  });

  it("orders member names that look like array indexes as text, as RFC 8785 wants", () => {
    fc.assert(fc.property(fc.dictionary(fc.oneof(fc.nat({ max: 100_000 }).map(String), fc.string()), fc.jsonValue({ maxDepth: 2 })), (v) => canonicalForm(v).text === canonicalize(v)), { numRuns: 200 });
  });

  it.each([
    ["index-like names", { 10: "a", 9: "b", a: "c", "01": "d" }, '{"01":"d","10":"a","9":"b","a":"c"}'],
    ["index-like names in a nested object", { z: { 2: true, 10: false } }, '{"z":{"10":false,"2":true}}'],
    ["an own __proto__ member", JSON.parse('{"b":1,"__proto__":{"x":1}}') as unknown, '{"__proto__":{"x":1},"b":1}'],
    ["a Date (through toJSON)", { at: new Date("2026-01-01T00:00:00Z") }, '{"at":"2026-01-01T00:00:00.000Z"}'],
    ["toJSON inside an array", [{ toJSON: () => ({ b: 2, a: 1 }) }], '[{"a":1,"b":2}]'],
    ["members left out", { f: () => 1, u: undefined, s: Symbol("x"), k: 1 }, '{"k":1}'],
  ])("writes %s like json-canonicalize and reads back the same value", (_what, value, text) => {
    const c = canonicalForm(value);
    expect(c.text).toBe(text);
    expect(c.value).toEqual(JSON.parse(text));
    expect(Object.keys(c.value as object)).toEqual(Object.keys(JSON.parse(text) as object));
  });

  it("reads -0 back as 0, as JSON.parse of its text does", () => {
    expect(Object.is((canonicalForm({ z: -0 }).value as { z: number }).z, 0)).toBe(true);
  });

  it("copies: changing the input afterwards leaves the value alone", () => {
    const input = { a: { b: [1] } };
    const c = canonicalForm(input);
    input.a.b.push(2);
    expect(c.value).toEqual({ a: { b: [1] } });
  });

  it.each([
    ["a bigint", { n: 1n }],
    ["a symbol", Symbol("x")],
    ["undefined", undefined],
    ["an infinite number in an array", [Number.POSITIVE_INFINITY]],
  ])("refuses %s", (_what, value) => {
    expect(() => canonicalForm(value)).toThrow();
  });
});
