/** A JSON number kept as its source text, so a rate like 4.3434 never becomes a float. */
export class JsonNumber {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }
}

/** A JSON value whose numbers are JsonNumber. */
export type ExactJson = null | boolean | string | JsonNumber | ExactJson[] | { [key: string]: ExactJson };

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const MAX_DEPTH = 64;

/**
 * Parses JSON keeping every number's source text (Node 20's JSON.parse reviver cannot see it).
 * Strict RFC 8259: throws SyntaxError on anything else, including trailing data.
 */
export function parseExactJson(text: string): ExactJson {
  let i = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at offset ${i}`);
  };
  const ws = (): void => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const str = (): string => {
    const start = i;
    i++; // opening quote
    for (;;) {
      const c = text[i];
      if (c === undefined) fail("unterminated string");
      if (c === '"') break;
      if (c === "\\") i++;
      else if (c !== undefined && c < " ") fail("control character in string");
      i++;
    }
    i++;
    return JSON.parse(text.slice(start, i)) as string; // JSON.parse handles the escapes
  };
  const value = (depth: number): ExactJson => {
    if (depth > MAX_DEPTH) fail("nesting too deep");
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const out: { [key: string]: ExactJson } = {};
      ws();
      if (text[i] === "}") {
        i++;
        return out;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a key");
        const key = str();
        ws();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        Object.defineProperty(out, key, { value: value(depth + 1), enumerable: true, writable: true, configurable: true });
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return out;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const out: ExactJson[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return out;
      }
      for (;;) {
        out.push(value(depth + 1));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return out;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) return fail("unexpected character");
    i += m[0].length;
    return new JsonNumber(m[0]);
  };
  const result = value(0);
  ws();
  if (i !== text.length) fail("trailing data");
  return result;
}

/**
 * A JSON number's text as a plain decimal string ("1.5E-3" → "0.0015"), without going through
 * floating point.
 */
export function toDecimalString(n: JsonNumber): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(n.text);
  if (m === null) throw new SyntaxError("not a JSON number");
  const sign = m[1] ?? "";
  const int = m[2] ?? "0";
  const frac = m[3] ?? "";
  const exp = Number(m[4] ?? "0");
  if (Math.abs(exp) > 1000) throw new RangeError("exponent out of range");
  let digits = int + frac;
  let point = int.length + exp;
  if (point <= 0) {
    digits = "0".repeat(1 - point) + digits;
    point = 1;
  } else if (point > digits.length) {
    digits = digits + "0".repeat(point - digits.length);
  }
  let whole = digits.slice(0, point).replace(/^0+(?=\d)/, "");
  const fraction = digits.slice(point);
  if (whole === "") whole = "0";
  return sign + whole + (fraction === "" ? "" : `.${fraction}`);
}
