/**
 * A strict JSON reader for the files and labels the trust policy reads. `JSON.parse` silently
 * keeps the last of two equal keys, so `{"subject": "a", "subject": "b"}` would mean whatever the
 * last writer wanted; here a repeated key, trailing data, a byte-order mark, a number too large
 * for a double or nesting deeper than {@link MAX_DEPTH} is a refusal.
 */
import { shown } from "./caps.js";
import { ErrorCode, fieldError, join, fail, ok } from "./errors.js";
import type { FieldError, Result } from "./errors.js";
import type { JsonValue } from "./types.js";

/** Deepest nesting accepted: deep enough for any config schema, shallow enough for the stack. */
export const MAX_DEPTH = 256;

/** A JSON object as parsed: own, enumerable keys only. */
export type JsonObject = { [key: string]: JsonValue };

class SyntaxStop extends Error {}

/** A decimal literal as sign, significant digits and the exponent of its last digit. */
function decimalParts(literal: string): { negative: boolean; digits: string; exponent: number } {
  const m = /^(-?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$/.exec(literal);
  if (m === null) return { negative: false, digits: literal, exponent: 0 };
  const fraction = m[3] ?? "";
  let digits = (m[2] ?? "") + fraction;
  let exponent = Number(m[4] ?? "0") - fraction.length;
  digits = digits.replace(/^0+/, "");
  while (digits.endsWith("0")) {
    digits = digits.slice(0, -1);
    exponent++;
  }
  if (digits === "") return { negative: false, digits: "0", exponent: 0 };
  return { negative: m[1] === "-", digits, exponent };
}

/** Whether two decimal literals (JSON's, or JavaScript's number form) denote the same number. */
export function sameDecimal(a: string, b: string): boolean {
  const x = decimalParts(a);
  const y = decimalParts(b);
  return x.negative === y.negative && x.digits === y.digits && x.exponent === y.exponent;
}

/**
 * Parses `text` as exactly one JSON value (RFC 8259) surrounded only by JSON whitespace.
 * Syntax errors are reported with `syntaxCode` at `path`; repeated keys as
 * {@link ErrorCode.Duplicate} at the path of the repeated key, all of them at once. Anything but a
 * string is {@link ErrorCode.InvalidType}. Never throws.
 */
export function parseStrictJson(
  text: string,
  path: string,
  syntaxCode: ErrorCode = ErrorCode.InvalidJSON,
): Result<JsonValue> {
  if (typeof text !== "string") return fail(fieldError(ErrorCode.InvalidType, path, "expected JSON text (a string)"));
  const duplicates: FieldError[] = [];
  let pos = 0;
  let syntaxError: FieldError | undefined;

  const stop = (message: string): never => {
    syntaxError = fieldError(syntaxCode, path, `${message} at offset ${pos}`);
    throw new SyntaxStop();
  };

  const skipWhitespace = (): void => {
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) pos++;
      else return;
    }
  };

  const expectLiteral = (word: string): void => {
    if (text.startsWith(word, pos)) pos += word.length;
    else stop("invalid JSON value");
  };

  const parseString = (): string => {
    // pos is at the opening quote.
    pos++;
    let out = "";
    let start = pos;
    for (;;) {
      if (pos >= text.length) stop("unterminated string");
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        out += text.slice(start, pos);
        pos++;
        return out;
      }
      if (c < 0x20) stop("control character in string");
      if (c !== 0x5c) {
        pos++;
        continue;
      }
      out += text.slice(start, pos);
      const e = text[pos + 1];
      switch (e) {
        case '"': out += '"'; pos += 2; break;
        case "\\": out += "\\"; pos += 2; break;
        case "/": out += "/"; pos += 2; break;
        case "b": out += "\b"; pos += 2; break;
        case "f": out += "\f"; pos += 2; break;
        case "n": out += "\n"; pos += 2; break;
        case "r": out += "\r"; pos += 2; break;
        case "t": out += "\t"; pos += 2; break;
        case "u": {
          const hex = text.slice(pos + 2, pos + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) stop("invalid \\u escape");
          out += String.fromCharCode(parseInt(hex, 16));
          pos += 6;
          break;
        }
        default:
          stop("invalid escape");
      }
      start = pos;
    }
  };

  const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
  const parseNumber = (): number => {
    NUMBER.lastIndex = pos;
    const m = NUMBER.exec(text);
    if (m === null) stop("invalid number");
    const literal = (m as RegExpExecArray)[0];
    const value = Number(literal);
    if (!Number.isFinite(value)) stop("number out of range");
    // Numbers are compared exactly (config schemas in Manifest.Equal): a literal whose decimal
    // value no double holds, such as 1.00000000000000001, would compare equal to another number.
    if (!sameDecimal(literal, String(value))) stop(`number ${literal} cannot be represented exactly`);
    pos += literal.length;
    return value;
  };

  const parseValue = (at: string, depth: number): JsonValue => {
    skipWhitespace();
    const c = text[pos];
    switch (c) {
      case "{": return parseObject(at, depth + 1);
      case "[": return parseArray(at, depth + 1);
      case '"': return parseString();
      case "t": expectLiteral("true"); return true;
      case "f": expectLiteral("false"); return false;
      case "n": expectLiteral("null"); return null;
      case undefined: return stop("unexpected end of input");
      default:
        if (c === "-" || (c >= "0" && c <= "9")) return parseNumber();
        return stop("invalid JSON value");
    }
  };

  const parseObject = (at: string, depth: number): JsonObject => {
    if (depth > MAX_DEPTH) stop("nested too deeply");
    pos++;
    const obj: JsonObject = {};
    const seen = new Set<string>();
    skipWhitespace();
    if (text[pos] === "}") {
      pos++;
      return obj;
    }
    for (;;) {
      skipWhitespace();
      if (text[pos] !== '"') stop("expected a string key");
      const key = parseString();
      const keyPath = join(at, shown(key));
      if (seen.has(key)) duplicates.push(fieldError(ErrorCode.Duplicate, keyPath, `duplicate key "${shown(key)}"`));
      seen.add(key);
      skipWhitespace();
      if (text[pos] !== ":") stop("expected ':'");
      pos++;
      const value = parseValue(keyPath, depth);
      // defineProperty, not assignment: a "__proto__" key must stay an ordinary own property.
      Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
      skipWhitespace();
      const next = text[pos];
      pos++;
      if (next === "}") return obj;
      if (next !== ",") {
        pos--;
        stop("expected ',' or '}'");
      }
    }
  };

  const parseArray = (at: string, depth: number): JsonValue[] => {
    if (depth > MAX_DEPTH) stop("nested too deeply");
    pos++;
    const arr: JsonValue[] = [];
    skipWhitespace();
    if (text[pos] === "]") {
      pos++;
      return arr;
    }
    for (;;) {
      arr.push(parseValue(join(at, arr.length), depth));
      skipWhitespace();
      const next = text[pos];
      pos++;
      if (next === "]") return arr;
      if (next !== ",") {
        pos--;
        stop("expected ',' or ']'");
      }
    }
  };

  let value: JsonValue;
  try {
    value = parseValue(path, 0);
    skipWhitespace();
    if (pos !== text.length) stop("trailing data after the JSON value");
  } catch (e) {
    if (e instanceof SyntaxStop && syntaxError !== undefined) return fail(syntaxError);
    throw e;
  }
  if (duplicates.length > 0) return fail(duplicates);
  return ok(value);
}

/** True for a JSON object (not an array, not null). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Own enumerable keys of `obj` that are not in `allowed`, each reported as an unknown field. */
export function unknownFields(obj: object, path: string, allowed: readonly string[]): FieldError[] {
  return Object.keys(obj)
    .filter((k) => !allowed.includes(k))
    .map((k) => fieldError(ErrorCode.UnknownField, join(path, shown(k)), `unknown field "${shown(k)}"`));
}

/** Reads an own property without reaching the prototype chain (`constructor`, `__proto__`). */
export function own(obj: object, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(obj, key) ? (obj as Record<string, unknown>)[key] : undefined;
}
