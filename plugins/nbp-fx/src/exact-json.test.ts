import { describe, expect, it } from "vitest";
import { JsonNumber, parseExactJson, toDecimalString } from "./exact-json.js";

describe("parseExactJson", () => {
  it("keeps every number's source text", () => {
    expect(parseExactJson('{"a":[4.3434, 0.027990, 1.62E-4, -0, 10]}')).toEqual({
      a: [new JsonNumber("4.3434"), new JsonNumber("0.027990"), new JsonNumber("1.62E-4"), new JsonNumber("-0"), new JsonNumber("10")],
    });
  });

  it("reads strings with escapes, literals and a __proto__ key as plain data", () => {
    const v = parseExactJson('{"s":"dolar ameryka\\u0144ski","t":true,"f":false,"n":null,"__proto__":1}') as Record<string, unknown>;
    expect(v.s).toBe("dolar amerykański");
    expect([v.t, v.f, v.n]).toEqual([true, false, null]);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toContain("__proto__");
  });

  it.each([["[1,]"], ["{\"a\":1} x"], ["01"], ["1."], [".5"], ["NaN"], ["\"unterminated"], ["{'a':1}"], [""], ["[" .repeat(100) + "]".repeat(100)]])(
    "refuses %s",
    (text) => {
      expect(() => parseExactJson(text)).toThrow(SyntaxError);
    },
  );
});

describe("toDecimalString", () => {
  it.each([
    ["4.3434", "4.3434"],
    ["0.027990", "0.027990"],
    ["1.62E-4", "0.000162"],
    ["2.5e3", "2500"],
    ["1.25E+1", "12.5"],
    ["12", "12"],
    ["-3.1e-2", "-0.031"],
  ])("writes %s as %s", (text, decimal) => {
    expect(toDecimalString(new JsonNumber(text))).toBe(decimal);
  });
});
