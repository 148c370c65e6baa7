import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ErrorCode } from "./errors.js";
import { MAX_DEPTH, parseStrictJson, sameDecimal } from "./strict-json.js";

describe("parseStrictJson reads what JSON.parse reads", () => {
  it.each([
    { text: "{}", want: {} },
    { text: " [1, 2.5, -0.5e2, 1E3] ", want: [1, 2.5, -50, 1000] },
    { text: '{"a": {"b": [true, false, null]}}', want: { a: { b: [true, false, null] } } },
    { text: '"\\u00e9\\n\\"\\\\\\/\\b\\f\\r\\t"', want: 'é\n"\\/\b\f\r\t' },
    { text: '"\\ud83d\\ude00"', want: "😀" },
    { text: "\t\r\n0\n", want: 0 },
  ])("parses $text", ({ text, want }) => {
    const r = parseStrictJson(text, "x");
    expect(r).toEqual({ ok: true, value: want });
  });

  it("keeps a __proto__ key as an ordinary own property", () => {
    const r = parseStrictJson('{"__proto__": {"polluted": true}}', "");
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Object.getPrototypeOf(r.value)).toBe(Object.prototype);
    expect(Object.keys(r.value as object)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("agrees with JSON.parse on every JSON text without repeated keys", () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        const r = parseStrictJson(text, "");
        expect(r).toEqual({ ok: true, value: JSON.parse(text) });
      }),
      { numRuns: 200 },
    );
  });
});

describe("parseStrictJson refuses what a lenient reader would let through", () => {
  it.each([
    { name: "trailing data after the value", text: '{"a": 1} {"a": 2}', code: ErrorCode.InvalidJSON },
    { name: "a trailing comma in an object", text: '{"a": 1,}', code: ErrorCode.InvalidJSON },
    { name: "a trailing comma in an array", text: "[1,]", code: ErrorCode.InvalidJSON },
    { name: "a byte-order mark", text: '\ufeff{"a": 1}', code: ErrorCode.InvalidJSON },
    { name: "a single-quoted string", text: "{'a': 1}", code: ErrorCode.InvalidJSON },
    { name: "a comment", text: '{"a": 1 /* x */}', code: ErrorCode.InvalidJSON },
    { name: "a leading zero", text: "01", code: ErrorCode.InvalidJSON },
    { name: "a bare decimal point", text: "1.", code: ErrorCode.InvalidJSON },
    { name: "a number too large for a double", text: "1e400", code: ErrorCode.InvalidJSON },
    { name: "NaN", text: "NaN", code: ErrorCode.InvalidJSON },
    { name: "a raw newline in a string", text: '"a\nb"', code: ErrorCode.InvalidJSON },
    { name: "an unknown escape", text: '"\\x41"', code: ErrorCode.InvalidJSON },
    { name: "an unterminated string", text: '"abc', code: ErrorCode.InvalidJSON },
    { name: "empty input", text: "", code: ErrorCode.InvalidJSON },
    { name: "a non-JSON space (NBSP) around the value", text: "\u00a01", code: ErrorCode.InvalidJSON },
    { name: "nesting deeper than the limit", text: "[".repeat(MAX_DEPTH + 1) + "]".repeat(MAX_DEPTH + 1), code: ErrorCode.InvalidJSON },
  ])("refuses $name", ({ text, code }) => {
    const r = parseStrictJson(text, "file");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => [e.code, e.path])).toEqual([[code, "file"]]);
  });

  it("accepts nesting exactly at the limit", () => {
    expect(parseStrictJson("[".repeat(MAX_DEPTH) + "]".repeat(MAX_DEPTH), "").ok).toBe(true);
  });

  it("reports the syntax error with the code it is given", () => {
    const r = parseStrictJson("{", "label", ErrorCode.InvalidManifestLabel);
    expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual([ErrorCode.InvalidManifestLabel]);
  });

  it.each([
    { name: "a repeated top-level key", text: '{"a": 1, "a": 2}', paths: ["a"] },
    { name: "a repeated nested key", text: '{"p": [{"s": "x", "t": 1, "s": "y"}]}', paths: ["p[0].s"] },
    { name: "keys equal only after unescaping", text: '{"ab": 1, "a\\u0062": 2}', paths: ["ab"] },
    { name: "every repeat at once", text: '{"a": 1, "a": 2, "b": {"c": 1, "c": 1}, "a": 3}', paths: ["a", "b.c", "a"] },
  ])("refuses $name, naming each repeated key", ({ text, paths }) => {
    const r = parseStrictJson(text, "");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => e.path)).toEqual(paths);
    for (const e of r.errors) expect(e.code).toBe(ErrorCode.Duplicate);
  });
});

describe("exact numbers", () => {
  it.each(["1", "1.0", "1e2", "100", "0.1", "-0.5", "1.5E-7", "123456789012345", "0", "-0", "2.5e+3", "9007199254740991"])(
    "accepts %s, whose decimal value a double holds exactly",
    (literal) => {
      const r = parseStrictJson(`{"n": ${literal}}`, "");
      expect(r.ok).toBe(true);
    },
  );

  it.each(["1.00000000000000001", "9007199254740993", "0.30000000000000000001", "1e400"])(
    "refuses %s, which no double holds, so it could never be compared exactly",
    (literal) => {
      const r = parseStrictJson(`{"n": ${literal}}`, "");
      expect(r.ok).toBe(false);
    },
  );

  it.each([
    ["1", "1.0", true],
    ["1e2", "100", true],
    ["-0.50", "-5e-1", true],
    ["1", "2", false],
    ["0.1", "0.01", false],
    ["-1", "1", false],
  ])("sameDecimal(%s, %s) is %s", (a, b, expected) => {
    expect(sameDecimal(a, b)).toBe(expected);
  });
});
