import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cloneJson, isJsonValue, isPlainObject } from "./json.js";

class Point {
  x = 1;
}

const cyclic: Record<string, unknown> = { a: 1 };
cyclic["self"] = cyclic;
const cyclicArray: unknown[] = [1];
cyclicArray.push(cyclicArray);
const shared = { k: 1 };
const withGetter = Object.defineProperty({}, "x", { get: () => 1, enumerable: true });
const throwingGetter = Object.defineProperty({}, "x", {
  get: () => {
    throw new Error("boom");
  },
  enumerable: true,
});
const withHiddenKey = Object.defineProperty({}, "x", { value: 1, enumerable: false });
const arrayWithExtra = Object.assign([1, 2], { extra: true });
const nullProto = Object.assign(Object.create(null) as object, { a: 1 });
const protoKey = JSON.parse('{"__proto__": {"a": 1}}') as unknown;

/** Structural equality where -0 equals 0, as JSON makes it. */
function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Reflect.ownKeys(a);
  const kb = Reflect.ownKeys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJson((a as never)[k], (b as never)[k]));
}

describe("isJsonValue", () => {
  it.each([
    ["null", null],
    ["true", true],
    ["a string", "x"],
    ["zero", 0],
    ["a negative fraction", -1.5],
    ["an empty object", {}],
    ["an empty array", []],
    ["nested values", { a: [1, { b: null }], c: "d" }],
    ["an object without a prototype", nullProto],
    ["an own __proto__ key as JSON.parse makes it", protoKey],
    ["the same object reached twice without a cycle", { a: shared, b: shared }],
  ])("accepts %s", (_what, value) => {
    expect(isJsonValue(value)).toBe(true);
  });

  it.each([
    ["undefined", undefined],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["a bigint", 1n],
    ["a function", () => 1],
    ["a symbol", Symbol("x")],
    ["a Date", new Date(0)],
    ["a Map", new Map()],
    ["a class instance", new Point()],
    ["an object holding undefined", { a: undefined }],
    // eslint-disable-next-line no-sparse-arrays
    ["a sparse array", [1, , 3]],
    ["an array with an extra property", arrayWithExtra],
    ["an object with a symbol key", { [Symbol("k")]: 1 }],
    ["an object with a getter", withGetter],
    ["an object whose getter throws", throwingGetter],
    ["an object with a non-enumerable property", withHiddenKey],
    ["a cyclic object", cyclic],
    ["a cyclic array", cyclicArray],
    ["a Uint8Array", new Uint8Array(2)],
  ])("refuses %s", (_what, value) => {
    expect(isJsonValue(value)).toBe(false);
  });

  it("accepts everything JSON.parse produces", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(isJsonValue(JSON.parse(JSON.stringify(v)))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it("never throws, and accepts only values that survive a JSON round trip", () => {
    fc.assert(
      fc.property(fc.anything(), (v) => {
        if (isJsonValue(v)) expect(sameJson(JSON.parse(JSON.stringify(v)), v)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe("isPlainObject", () => {
  it.each([
    [{}, true],
    [nullProto, true],
    [[], false],
    [null, false],
    [new Point(), false],
    ["x", false],
  ])("classifies %o as %s", (value, expected) => {
    expect(isPlainObject(value)).toBe(expected);
  });
});

describe("cloneJson", () => {
  it("copies deeply, sharing nothing with its input", () => {
    const input = { a: [1, { b: "c" }] };
    const copy = cloneJson(input);
    expect(copy).toEqual(input);
    expect(copy).not.toBe(input);
    (input.a[1] as { b: string }).b = "changed";
    expect(copy).toEqual({ a: [1, { b: "c" }] });
  });

  it("keeps an own __proto__ key as data", () => {
    const copy = cloneJson(protoKey as { [k: string]: null });
    expect(Object.keys(copy as object)).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
  });
});
