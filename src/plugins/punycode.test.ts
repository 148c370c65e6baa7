import { domainToASCII } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isCanonicalHostname } from "./egress-host.js";
import { punycodeDecode, punycodeEncode } from "./punycode.js";

describe("punycode", () => {
  it.each([
    ["münchen", "mnchen-3ya"],
    ["bücher", "bcher-kva"],
    ["例え", "r8jz45g"],
    ["ü", "tda"],
  ])("encodes %s as %s and decodes it back", (u, p) => {
    const points = [...u].map((c) => c.codePointAt(0) ?? 0);
    expect(punycodeEncode(points)).toBe(p);
    expect(punycodeDecode(p)).toEqual(points);
  });

  it.each([["a digit past z", "99999999999999"], ["an upper-case digit", "mnchen-3YA"], ["a truncated number", "mnchen-3y"]])(
    "refuses %s",
    (_what, p) => {
      const decoded = punycodeDecode(p);
      // A truncated or malformed string either fails or does not round-trip.
      expect(decoded === undefined || punycodeEncode(decoded) !== p).toBe(true);
    },
  );

  it("agrees with Node's IDNA for generated Unicode labels", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(..."aбвгдежзäöüßé例え中文é"), minLength: 1, maxLength: 12 }), (u) => {
        const ascii = domainToASCII(`${u}.de`);
        fc.pre(ascii !== "" && ascii.startsWith("xn--"));
        const label = ascii.slice(0, ascii.indexOf("."));
        const decoded = punycodeDecode(label.slice(4));
        expect(decoded).toBeDefined();
        expect(punycodeEncode(decoded ?? [])).toBe(label.slice(4));
        expect(isCanonicalHostname(ascii)).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});
