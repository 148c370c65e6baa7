/**
 * Regular expressions from vendors and signers, matched in linear time by RE2 (re2js), never by
 * JavaScript's backtracking engine: `^(a+)+$` against thirty `a`s and a `!` takes microseconds,
 * not minutes. Every pattern is capped before it is compiled (length, then the size of its RE2
 * program, which bounds the steps per character matched).
 *
 * A config schema's patterns are ECMAScript regular expressions (JSON Schema says so) with the
 * `u` flag, as ajv would use them. They are accepted only when they are valid ECMAScript AND
 * mean the same under RE2 once the few differences in syntax are translated:
 *
 * - `\uXXXX`, `\u{X…}` (and a surrogate pair written as two `\u` escapes) become RE2's `\x{X…}`;
 *   `\cX` becomes the control character it names; `[\b]` becomes backspace.
 * - `.` becomes `[^\n\r\u2028\u2029]`: RE2's dot matches `\r` and the two separators.
 * - `\s` and `\S` become ECMAScript's set of white space and line terminators (RE2's `\s` is
 *   ASCII only); `\S` inside a negated class has no RE2 spelling and is refused.
 * - `[]` (matches nothing) and `[^]` (matches anything) are spelled out.
 *
 * What RE2 cannot do is refused, never approximated: lookahead and lookbehind, backreferences
 * (`\1`, `\k<name>`), repetition counts over 1000, `\B` (V8 finds a non-boundary inside a
 * surrogate pair, RE2 does not), and Unicode property names RE2 does not know
 * (`\p{Letter}`, `\p{Script=Greek}`; the short names `\p{L}`, `\p{Lu}` work in both). `\d`, `\w`,
 * `\b` and `$` already mean the same in both (ASCII digits and word characters; `$` only at the
 * very end without the `m` flag). ADR 0040 lists these differences.
 */
import type { RE2JS } from "re2js";
import { CAPS } from "./caps.js";
import { patternEngine } from "./re2-engine.js";

/** A compiled pattern, or why it was refused (one sentence, never the pattern itself). */
export type CompiledPattern =
  | { readonly ok: true; readonly regex: RE2JS; readonly program: number }
  | { readonly ok: false; readonly message: string; readonly tooLarge: boolean };

// ECMAScript's \s: WhiteSpace and LineTerminator, as the members of an RE2 class.
const ES_SPACE = "\\t\\n\\x{b}\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}";
const ES_DOT = "[^\\n\\r\\x{2028}\\x{2029}]";
const NOTHING = "[^\\x{0}-\\x{10ffff}]";
const ANYTHING = "[\\x{0}-\\x{10ffff}]";

const HEX4 = /^[0-9A-Fa-f]{4}$/;
const HEX_BRACED = /^\{([0-9A-Fa-f]{1,6})\}/;

class Untranslatable extends Error {}

/** Reads one `\u` escape at `i` (the backslash): the code point and where the escape ends. */
function unicodeEscape(p: string, i: number): { cp: number; end: number } | undefined {
  if (p[i + 1] !== "u") return undefined;
  const braced = HEX_BRACED.exec(p.slice(i + 2, i + 11));
  if (braced !== null) return { cp: parseInt(braced[1] as string, 16), end: i + 2 + (braced[0] as string).length };
  const hex = p.slice(i + 2, i + 6);
  if (!HEX4.test(hex)) return undefined;
  const cp = parseInt(hex, 16);
  // A surrogate pair written as two escapes is one code point under the u flag.
  if (cp >= 0xd800 && cp <= 0xdbff && p[i + 6] === "\\" && p[i + 7] === "u") {
    const low = p.slice(i + 8, i + 12);
    if (HEX4.test(low)) {
      const lo = parseInt(low, 16);
      if (lo >= 0xdc00 && lo <= 0xdfff) return { cp: 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00), end: i + 12 };
    }
  }
  return { cp, end: i + 6 };
}

const hexEscape = (cp: number): string => `\\x{${cp.toString(16)}}`;

/** One escape at `i`, translated for use inside (`inClass`) or outside a class, and where it ends. */
function escape(p: string, i: number, inClass: boolean): { text: string; end: number; notSpace?: true } {
  const next = p[i + 1];
  const u = unicodeEscape(p, i);
  if (u !== undefined) return { text: hexEscape(u.cp), end: u.end };
  if (next === "c" && /^[A-Za-z]$/.test(p[i + 2] ?? "")) {
    return { text: hexEscape((p.charCodeAt(i + 2) as number) % 32), end: i + 3 };
  }
  if (next === "s") return { text: inClass ? ES_SPACE : `[${ES_SPACE}]`, end: i + 2 };
  if (next === "S") return inClass ? { text: "", end: i + 2, notSpace: true } : { text: `[^${ES_SPACE}]`, end: i + 2 };
  if (next === "b" && inClass) return { text: hexEscape(8), end: i + 2 };
  // V8 also tries \B between the two halves of an astral character, where RE2 (by code point) cannot.
  if (next === "B" && !inClass) throw new Untranslatable("\\B is not supported: ECMAScript and RE2 disagree on it next to characters outside the BMP");
  if (next === undefined) return { text: "\\", end: i + 1 };
  // Everything else means the same in both, or RE2 refuses it (\1, \k<name>): copied as written.
  const cp = p.codePointAt(i + 1) as number;
  const width = cp > 0xffff ? 2 : 1;
  return { text: p.slice(i, i + 1 + width), end: i + 1 + width };
}

/** The members of a class from `j` up to its `]`, translated; whether `\S` was among them; where they end. */
function classBody(p: string, start: number): { body: string; notSpace: boolean; end: number } {
  let body = "";
  let notSpace = false;
  let j = start;
  while (j < p.length && p[j] !== "]") {
    if (p[j] === "\\") {
      const e = escape(p, j, true);
      body += e.text;
      notSpace ||= e.notSpace === true;
      j = e.end;
    } else if (p[j] === "[" && p[j + 1] === ":") {
      // RE2 reads [:alpha:] inside a class as a POSIX class; ECMAScript as the characters.
      body += "\\[";
      j++;
    } else {
      const width = (p.codePointAt(j) as number) > 0xffff ? 2 : 1;
      body += p.slice(j, j + width);
      j += width;
    }
  }
  return { body, notSpace, end: j };
}

/** A class starting at `i` (the `[`), translated, and where it ends. */
function characterClass(p: string, i: number): { text: string; end: number } {
  const negated = p[i + 1] === "^";
  const { body, notSpace, end: close } = classBody(p, negated ? i + 2 : i + 1);
  // An unterminated class is left for RE2 (and ECMAScript) to refuse.
  const end = close < p.length ? close + 1 : close;
  if (!notSpace) {
    if (body === "") return { text: negated ? ANYTHING : NOTHING, end };
    return { text: `[${negated ? "^" : ""}${body}]`, end };
  }
  if (negated) throw new Untranslatable("\\S inside a negated character class has no RE2 equivalent");
  // Without the \S in front, a literal '^' could come first and negate the class.
  const rest = body.startsWith("^") ? `\\${body}` : body;
  return { text: body === "" ? `[^${ES_SPACE}]` : `(?:[${rest}]|[^${ES_SPACE}])`, end };
}

/**
 * Translates an ECMAScript pattern (`u` flag) into RE2 syntax with the same meaning, as the module
 * comment lists; constructs RE2 lacks are left as written, so that compiling the result refuses them.
 */
export function toRe2Syntax(pattern: string): { ok: true; source: string } | { ok: false; message: string; tooLarge: false } {
  try {
    let out = "";
    for (let i = 0; i < pattern.length; ) {
      const c = pattern[i];
      if (c === "\\") {
        const e = escape(pattern, i, false);
        out += e.text;
        i = e.end;
      } else if (c === "[") {
        const k = characterClass(pattern, i);
        out += k.text;
        i = k.end;
      } else if (c === ".") {
        out += ES_DOT;
        i++;
      } else {
        out += c;
        i++;
      }
    }
    return { ok: true, source: out };
  } catch (e) {
    if (e instanceof Untranslatable) return { ok: false, message: e.message, tooLarge: false };
    throw e;
  }
}

/** Why RE2 refused a pattern, in a sentence that does not repeat the pattern. */
function re2Reason(e: unknown): string {
  const error = e instanceof Error ? (e as Error & { error?: unknown }).error : undefined;
  return typeof error === "string" ? error : "it does not compile";
}

function tooLong(length: number): CompiledPattern {
  return { ok: false, message: `the pattern is ${length} characters long; at most ${CAPS.patternLength} are allowed`, tooLarge: true };
}

/** Compiles RE2 syntax under the caps: at most {@link CAPS.patternLength} characters and {@link CAPS.patternProgram} instructions. */
export function compileRe2(source: string, length = source.length): CompiledPattern {
  if (length > CAPS.patternLength) return tooLong(length);
  // Outside the try: an engine not loaded is not a pattern RE2 refuses.
  const engine = patternEngine();
  let regex: RE2JS;
  try {
    regex = engine.compile(source);
  } catch (e) {
    return { ok: false, message: `RE2 cannot compile the pattern: ${re2Reason(e)}`, tooLarge: false };
  }
  const program = regex.programSize();
  if (program > CAPS.patternProgram) {
    return { ok: false, message: `the pattern compiles to ${program} RE2 instructions; at most ${CAPS.patternProgram} are allowed`, tooLarge: true };
  }
  return { ok: true, regex, program };
}

/**
 * Compiles a config schema's pattern: capped, valid ECMAScript with the `u` flag, translated to
 * RE2 and compiled there. The result's `test` searches anywhere in a string, as `RegExp#test` does.
 */
export function compileSchemaPattern(pattern: string): CompiledPattern {
  if (pattern.length > CAPS.patternLength) return tooLong(pattern.length);
  try {
    // Compiling only: V8 parses the pattern in linear time and never runs it here.
    new RegExp(pattern, "u");
  } catch {
    return { ok: false, message: "the pattern is not a valid ECMAScript regular expression (with the u flag)", tooLarge: false };
  }
  const translated = toRe2Syntax(pattern);
  if (!translated.ok) return translated;
  return compileRe2(translated.source, pattern.length);
}

/** What ajv's `code.regExp` option takes: a function building a tester, with a name for standalone code. */
export interface RegExpEngine {
  (pattern: string, flags: string): { test(s: string): boolean; toString(): string };
  code: string;
}

/**
 * ajv's regular-expression engine (its `code.regExp` option), so that `pattern` and
 * `patternProperties` run on RE2. The flags ajv passes (`u`) are what the translation assumes.
 * A pattern that does not compile throws, which makes ajv's compile fail: the schema checks have
 * refused such a pattern, with its path, before ajv sees it.
 */
export const re2RegExp: RegExpEngine = Object.assign(
  (pattern: string): { test(s: string): boolean; toString(): string } => {
    const compiled = compileSchemaPattern(pattern);
    if (!compiled.ok) throw new Error(compiled.message);
    const regex = compiled.regex;
    // ajv keys compiled patterns by their toString().
    const key = `re2:${pattern}`;
    return { test: (s: string): boolean => regex.test(s), toString: (): string => key };
  },
  { code: "re2RegExp" },
);
