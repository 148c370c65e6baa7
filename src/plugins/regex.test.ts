import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CAPS } from "./caps.js";
import { compileRe2, compileSchemaPattern, re2RegExp, toRe2Syntax } from "./regex.js";

const FUZZ_RUNS = Number(process.env["FUZZ_RUNS"] ?? 300);

function compiled(pattern: string): { test(s: string): boolean } {
  const c = compileSchemaPattern(pattern);
  if (!c.ok) throw new Error(`${pattern}: ${c.message}`);
  return c.regex;
}

describe("compileSchemaPattern", () => {
  it("matches a nested quantifier against thirty a's and a '!' without backtracking", () => {
    // Native RegExp needs about 2^30 steps here; RE2 one pass.
    expect(compiled("^(a+)+$").test(`${"a".repeat(30)}!`)).toBe(false);
    expect(compiled("^(a+)+$").test("a".repeat(30))).toBe(true);
  });

  it.each<[string, string, string, boolean]>([
    ["a \\u escape", "^\\u00e9$", "é", true],
    ["a braced \\u escape", "^\\u{1F600}$", "😀", true],
    ["a surrogate pair written as two escapes, one code point", "^\\uD83D\\uDE00$", "😀", true],
    ["\\u escapes in a class range", "^[\\u0061-\\u0063]+$", "abc", true],
    ["a control escape", "^\\cJ$", "\n", true],
    ["a dot, which does not match \\r", "^.$", "\r", false],
    ["a dot, which does not match U+2028", "^.$", "\u2028", false],
    ["a dot, which matches one astral code point", "^.$", "😀", true],
    ["\\s, which matches a no-break space", "^\\s$", "\u00a0", true],
    ["\\s, which matches a vertical tab", "^\\s$", "\v", true],
    ["\\s, which matches a byte-order mark", "^\\s$", "\ufeff", true],
    ["\\S, which does not match a no-break space", "^\\S$", "\u00a0", false],
    ["\\s in a negated class", "^[^\\s]$", "\u3000", false],
    ["\\S in a class with other members", "^[\\S\\n]+$", "a\nb", true],
    ["\\S in a class, which still refuses white space", "^[\\Sx]$", "\u2003", false],
    ["[\\s\\S], which matches anything", "^[\\s\\S]$", "\n", true],
    ["a class whose only other member is ^", "^[\\S^]$", "^", true],
    ["an empty class, which matches nothing", "a[]", "a", false],
    ["[^], which matches anything", "^[^]$", "\n", true],
    ["[\\b], a backspace", "^[\\b]$", "\b", true],
    ["$, which does not match before a final newline", "^a$", "a\n", false],
    ["\\d, ASCII only", "^\\d$", "٣", false],
    ["\\w, ASCII only", "^\\w$", "é", false],
    ["a short Unicode property name", "^\\p{Lu}$", "É", true],
    ["a named group", "^(?<y>[0-9]{4})$", "2026", true],
    ["an unanchored pattern, which searches anywhere", "b+", "abbc", true],
  ])("translates %s", (_what, pattern, subject, want) => {
    expect(compiled(pattern).test(subject)).toBe(want);
    expect(new RegExp(pattern, "u").test(subject)).toBe(want);
  });

  it.each<[string, string, string]>([
    ["a lookahead", "^(?=a)a$", "RE2 cannot compile"],
    ["a negative lookahead", "^(?!a)b$", "RE2 cannot compile"],
    ["a lookbehind", "(?<=a)b", "RE2 cannot compile"],
    ["a backreference", "^(a)\\1$", "RE2 cannot compile"],
    ["a named backreference", "^(?<x>a)\\k<x>$", "RE2 cannot compile"],
    ["a repetition count over 1000", "a{1001}", "RE2 cannot compile"],
    ["a long Unicode property name", "\\p{Letter}", "RE2 cannot compile"],
    ["a script property", "\\p{Script=Greek}", "RE2 cannot compile"],
    ["\\S inside a negated class", "[^\\Sa]", "no RE2 equivalent"],
    ["\\B, on which the two disagree around astral characters", "a\\B", "not supported"],
    ["RE2-only syntax that ECMAScript refuses", "(?P<n>x)", "not a valid ECMAScript"],
    ["an inline flag", "(?i)a", "not a valid ECMAScript"],
    ["a syntax error", "(", "not a valid ECMAScript"],
    ["a program over the cap", "a{1000}a{1000}", "RE2 instructions"],
    ["a pattern over the length cap", "a".repeat(CAPS.patternLength + 1), "characters long"],
  ])("refuses %s", (_what, pattern, reason) => {
    const c = compileSchemaPattern(pattern);
    expect(c.ok).toBe(false);
    expect(c.ok ? "" : c.message).toContain(reason);
  });

  it.each<[string, string, boolean]>([
    ["a program over the cap", "a{1000}a{1000}", true],
    ["a pattern over the length cap", "a".repeat(CAPS.patternLength + 1), true],
    ["a lookahead", "(?=a)", false],
  ])("says whether %s is refused for its size", (_what, pattern, tooLarge) => {
    const c = compileSchemaPattern(pattern);
    expect(!c.ok && c.tooLarge).toBe(tooLarge);
  });

  it("never repeats the pattern in its refusal", () => {
    const c = compileSchemaPattern("(?=secret-looking-text)");
    expect(c.ok ? "" : c.message).not.toContain("secret-looking-text");
  });
});

describe("toRe2Syntax", () => {
  it.each<[string, string]>([
    ["\\u00e9", "\\x{e9}"],
    ["\\u{1f600}", "\\x{1f600}"],
    ["a.b", "a[^\\n\\r\\x{2028}\\x{2029}]b"],
    ["[.]", "[.]"],
    ["\\.", "\\."],
    ["\\\\.", "\\\\[^\\n\\r\\x{2028}\\x{2029}]"],
    ["[[:a]", "[\\[:a]"],
  ])("writes %s as %s", (pattern, re2) => {
    expect(toRe2Syntax(pattern)).toEqual({ ok: true, source: re2 });
  });
});

describe("compileRe2", () => {
  it("caps a signer's subject pattern by its program", () => {
    expect(compileRe2("[a-z]{900}").ok).toBe(true);
    expect(compileRe2("[a-z]{1000}x{100}").ok).toBe(false);
  });
});

describe("re2RegExp, ajv's engine", () => {
  it("tests anywhere in a string, as RegExp#test does", () => {
    const rx = re2RegExp("b", "u");
    expect([rx.test("abc"), rx.test("ac")]).toEqual([true, false]);
  });

  it("keys each compiled pattern by its source, so ajv never confuses two", () => {
    expect(String(re2RegExp("a", "u"))).not.toBe(String(re2RegExp("b", "u")));
  });

  it("throws for a pattern RE2 cannot take, so ajv's compile fails", () => {
    expect(() => re2RegExp("(?=a)", "u")).toThrow(/RE2 cannot compile/);
  });
});

// --- RE2, after the translation, means what ECMAScript means ----------------------------------

const ATOMS = [
  "a", "b", "é", "😀", " ", "-", ".", "\\s", "\\S", "\\d", "\\D", "\\w", "\\W", "\\u00e9", "\\u{1F600}", "\\uD83D\\uDE00",
  "\\x41", "\\n", "\\r", "\\t", "\\v", "\\f", "\\0", "\\cJ", "\\b", "\\B", "^", "$", "\\.", "\\u2028", "[]", "[^]",
];
const CLASS_ITEMS = ["a", "b-d", "\\s", "\\S", "\\d", "\\w", "\\u00e9", ".", "\\b", "^", "😀", "\\n", "[", ":", "\\u00a0-\\u00ff", "\\-"];

const classArb = fc
  .tuple(fc.boolean(), fc.array(fc.constantFrom(...CLASS_ITEMS), { minLength: 1, maxLength: 4 }))
  .map(([negated, items]) => `[${negated ? "^" : ""}${items.join("")}]`);
const atomArb = fc.oneof(fc.constantFrom(...ATOMS), classArb);
const patternArb: fc.Arbitrary<string> = fc.letrec<{ p: string }>((tie) => ({
  p: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    atomArb,
    fc.tuple(tie("p"), tie("p")).map(([x, y]) => x + y),
    fc.tuple(tie("p"), tie("p")).map(([x, y]) => `${x}|${y}`),
    tie("p").map((x) => `(${x})`),
    tie("p").map((x) => `(?:${x})`),
    fc.tuple(tie("p"), fc.constantFrom("*", "+", "?", "{1,2}", "*?", "{2}")).map(([x, q]) => `(?:${x})${q}`),
  ),
})).p;
const subjectArb = fc
  .array(fc.constantFrom("a", "b", "c", "é", "😀", " ", "\n", "\r", "\u2028", "\u00a0", "\v", "\t", "1", "_", "\b", "\u0000", "A", "\ufeff", "-", "^", "[", ":", "."), {
    maxLength: 8,
  })
  .map((xs) => xs.join(""));

describe("the translation, as a property", () => {
  it("gives the same answer as ECMAScript for every pattern both accept", () => {
    fc.assert(
      fc.property(patternArb, fc.array(subjectArb, { minLength: 1, maxLength: 6 }), (pattern, subjects) => {
        let native: RegExp;
        try {
          native = new RegExp(pattern, "u");
        } catch {
          return true;
        }
        const c = compileSchemaPattern(pattern);
        if (!c.ok) {
          // Refused outright: only for what has no RE2 meaning (never silently approximated).
          expect(c.message).toMatch(/no RE2 equivalent|not supported|RE2 cannot compile|RE2 instructions/);
          return true;
        }
        for (const s of subjects) expect([pattern, s, c.regex.test(s)]).toEqual([pattern, s, native.test(s)]);
        return true;
      }),
      { numRuns: FUZZ_RUNS * 3 },
    );
  });
});
