// A strict, bounded JSON reader and a writer (RFC 8259). The reader takes UTF-8 bytes, refuses
// anything RFC 8259 does not allow (comments, trailing commas, leading zeros, lone surrogates,
// control characters in strings) and duplicate keys, and stops at a depth and a value count, so
// a hostile message can neither nest deep enough to overflow the stack nor make millions of
// values out of a few megabytes. Numbers keep their text, so a decimal string never goes through
// a double.
import { ByteWriter, invalidUtf8At } from "./bytes";
import { Result } from "./result";

/** What a JSON value is. */
export enum JSONKind {
  Null,
  Bool,
  Number,
  String,
  Array,
  Object,
  /** JSON text the SDK wrote itself (never parsed input), copied out as it is. */
  Raw,
}

/** A JSON value; narrow it with the `as…` methods, which return null for another kind. */
export class JSONValue {
  constructor(public readonly kind: JSONKind) {}

  isNull(): bool {
    return this.kind == JSONKind.Null;
  }

  asBool(): JSONBool | null {
    return this.kind == JSONKind.Bool ? changetype<JSONBool>(this) : null;
  }

  asNumber(): JSONNumber | null {
    return this.kind == JSONKind.Number ? changetype<JSONNumber>(this) : null;
  }

  asString(): JSONString | null {
    return this.kind == JSONKind.String ? changetype<JSONString>(this) : null;
  }

  asArray(): JSONArray | null {
    return this.kind == JSONKind.Array ? changetype<JSONArray>(this) : null;
  }

  asObject(): JSONObject | null {
    return this.kind == JSONKind.Object ? changetype<JSONObject>(this) : null;
  }

  /** This value as compact JSON text. */
  stringify(): string {
    const w = new ByteWriter();
    writeJSON(w, this);
    return w.toString();
  }
}

/**
 * JSON the SDK already wrote into bytes, such as a Delivery of many rates, so an answer is not
 * also held as a tree of values. Only writers that produce valid JSON make one.
 */
export class JSONRaw extends JSONValue {
  constructor(public readonly bytes: Uint8Array) {
    super(JSONKind.Raw);
  }
}

/** `null`. */
export class JSONNull extends JSONValue {
  constructor() {
    super(JSONKind.Null);
  }
}

/** `true` or `false`. */
export class JSONBool extends JSONValue {
  constructor(public readonly value: bool) {
    super(JSONKind.Bool);
  }
}

/** A number, as the text it was written with (RFC 8259's grammar, checked). */
export class JSONNumber extends JSONValue {
  constructor(public readonly text: string) {
    super(JSONKind.Number);
  }

  /** A number from an integer. */
  static of(n: i64): JSONNumber {
    return new JSONNumber(n.toString());
  }

  /** True when written as an integer (no fraction, no exponent) within ±2^53. */
  isSafeInteger(): bool {
    const t = this.text;
    const start = t.charCodeAt(0) == 0x2d ? 1 : 0;
    if (t.length - start > 16) return false;
    for (let i = start; i < t.length; i++) {
      const c = t.charCodeAt(i);
      if (c < 0x30 || c > 0x39) return false;
    }
    const v = I64.parseInt(t, 10);
    return v <= 9007199254740992 && v >= -9007199254740992;
  }

  /** The integer value; check isSafeInteger() first. */
  toI64(): i64 {
    return I64.parseInt(this.text, 10);
  }
}

/** A string. */
export class JSONString extends JSONValue {
  constructor(public readonly value: string) {
    super(JSONKind.String);
  }
}

/** An array. */
export class JSONArray extends JSONValue {
  readonly items: JSONValue[] = [];

  constructor() {
    super(JSONKind.Array);
  }

  get length(): i32 {
    return this.items.length;
  }

  at(i: i32): JSONValue {
    return this.items[i];
  }

  /** Appends `v`; returns this array. */
  push(v: JSONValue): JSONArray {
    this.items.push(v);
    return this;
  }
}

/** An object: its members in the order they were written or set, each key once. */
export class JSONObject extends JSONValue {
  readonly keys: string[] = [];
  readonly values: JSONValue[] = [];
  private index: Map<string, i32> = new Map<string, i32>();

  constructor() {
    super(JSONKind.Object);
  }

  get size(): i32 {
    return this.keys.length;
  }

  has(key: string): bool {
    return this.index.has(key);
  }

  /** The member's value, or null when absent. */
  get(key: string): JSONValue | null {
    if (!this.index.has(key)) return null;
    return this.values[this.index.get(key)];
  }

  /** The member's string, or null when absent or not a string. */
  getString(key: string): string | null {
    const v = this.get(key);
    if (v === null) return null;
    const s = v.asString();
    if (s === null) return null;
    return s.value;
  }

  /** The member's object, or null when absent or not an object. */
  getObject(key: string): JSONObject | null {
    const v = this.get(key);
    if (v === null) return null;
    return v.asObject();
  }

  /** The member's number, or null when absent or not a number. */
  getNumber(key: string): JSONNumber | null {
    const v = this.get(key);
    if (v === null) return null;
    return v.asNumber();
  }

  /** Sets a member (replacing one of the same key in place); returns this object. */
  set(key: string, value: JSONValue): JSONObject {
    if (this.index.has(key)) {
      this.values[this.index.get(key)] = value;
    } else {
      this.index.set(key, this.keys.length);
      this.keys.push(key);
      this.values.push(value);
    }
    return this;
  }

  /** Sets a string member; returns this object. */
  setString(key: string, value: string): JSONObject {
    return this.set(key, new JSONString(value));
  }

  /** Sets a string member unless `value` is empty (protobuf-JSON omits default values). */
  setStringIfNotEmpty(key: string, value: string): JSONObject {
    if (value.length > 0) this.set(key, new JSONString(value));
    return this;
  }
}

/** The limits of one parse. */
export class JSONLimits {
  constructor(
    /** Nesting depth of arrays and objects. */
    public maxDepth: i32 = 64,
    /** Values in the whole document, containers included. */
    public maxValues: i32 = 100_000,
  ) {}
}

const DEFAULT_LIMITS = new JSONLimits();

class Parser {
  pos: i32 = 0;
  values: i32 = 0;
  error: string | null = null;

  constructor(public ptr: usize, public len: i32, public limits: JSONLimits) {}

  fail(message: string): JSONValue {
    if (this.error === null) this.error = message + " at byte " + this.pos.toString();
    return new JSONNull();
  }

  peek(): i32 {
    return this.pos < this.len ? <i32>load<u8>(this.ptr + <usize>this.pos) : -1;
  }

  skipSpace(): void {
    while (this.pos < this.len) {
      const c = load<u8>(this.ptr + <usize>this.pos);
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
      this.pos++;
    }
  }

  literal(word: string, value: JSONValue): JSONValue {
    for (let i = 0; i < word.length; i++) {
      if (this.peek() != word.charCodeAt(i)) return this.fail("unexpected character");
      this.pos++;
    }
    return value;
  }

  value(depth: i32): JSONValue {
    if (++this.values > this.limits.maxValues) return this.fail("more than " + this.limits.maxValues.toString() + " values");
    this.skipSpace();
    const c = this.peek();
    if (c == 0x7b) return this.object(depth + 1);
    if (c == 0x5b) return this.array(depth + 1);
    if (c == 0x22) {
      const s = this.string();
      return s === null ? new JSONNull() : new JSONString(s);
    }
    if (c == 0x74) return this.literal("true", new JSONBool(true));
    if (c == 0x66) return this.literal("false", new JSONBool(false));
    if (c == 0x6e) return this.literal("null", new JSONNull());
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    if (c < 0) return this.fail("unexpected end of input");
    return this.fail("unexpected character");
  }

  digits(): i32 {
    const start = this.pos;
    while (this.peek() >= 0x30 && this.peek() <= 0x39) this.pos++;
    return this.pos - start;
  }

  number(): JSONValue {
    const start = this.pos;
    if (this.peek() == 0x2d) this.pos++;
    if (this.peek() == 0x30) {
      this.pos++;
      if (this.peek() >= 0x30 && this.peek() <= 0x39) return this.fail("a number with a leading zero");
    } else if (this.digits() == 0) {
      return this.fail("a number without digits");
    }
    if (this.peek() == 0x2e) {
      this.pos++;
      if (this.digits() == 0) return this.fail("a fraction without digits");
    }
    if (this.peek() == 0x65 || this.peek() == 0x45) {
      this.pos++;
      if (this.peek() == 0x2b || this.peek() == 0x2d) this.pos++;
      if (this.digits() == 0) return this.fail("an exponent without digits");
    }
    return new JSONNumber(String.UTF8.decodeUnsafe(this.ptr + <usize>start, <usize>(this.pos - start)));
  }

  hex4(): i32 {
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = this.peek();
      let d = -1;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
      if (d < 0) return -1;
      v = (v << 4) | d;
      this.pos++;
    }
    return v;
  }

  /**
   * A string token at pos (which is its opening quote); null after fail(). Unescaped runs and
   * escapes are copied as UTF-8 into one buffer, decoded once at the end: no object per escape,
   * so a string of escapes costs time linear in its length (an array of parts, growing while the
   * incremental collector rescans it, made that quadratic).
   */
  string(): string | null {
    this.pos++;
    let runStart = this.pos;
    let out: ByteWriter | null = null;
    while (true) {
      const c = this.peek();
      if (c < 0) {
        this.fail("an unterminated string");
        return null;
      }
      if (c < 0x20) {
        this.fail("a control character in a string");
        return null;
      }
      if (c == 0x22) {
        if (out === null) {
          const run = String.UTF8.decodeUnsafe(this.ptr + <usize>runStart, <usize>(this.pos - runStart));
          this.pos++;
          return run;
        }
        out.raw(this.ptr + <usize>runStart, this.pos - runStart);
        this.pos++;
        return out.toString();
      }
      if (c != 0x5c) {
        this.pos++;
        continue;
      }
      if (out === null) out = new ByteWriter(this.pos - runStart + 64);
      out.raw(this.ptr + <usize>runStart, this.pos - runStart);
      this.pos++;
      const e = this.peek();
      this.pos++;
      if (e == 0x22) out.byte(0x22);
      else if (e == 0x5c) out.byte(0x5c);
      else if (e == 0x2f) out.byte(0x2f);
      else if (e == 0x62) out.byte(0x08);
      else if (e == 0x66) out.byte(0x0c);
      else if (e == 0x6e) out.byte(0x0a);
      else if (e == 0x72) out.byte(0x0d);
      else if (e == 0x74) out.byte(0x09);
      else if (e == 0x75) {
        const u = this.hex4();
        if (u < 0) {
          this.fail("a bad \\u escape");
          return null;
        }
        if (u >= 0xdc00 && u <= 0xdfff) {
          this.fail("a lone low surrogate");
          return null;
        }
        if (u >= 0xd800 && u <= 0xdbff) {
          if (this.peek() != 0x5c) {
            this.fail("a lone high surrogate");
            return null;
          }
          this.pos++;
          if (this.peek() != 0x75) {
            this.fail("a lone high surrogate");
            return null;
          }
          this.pos++;
          const lo = this.hex4();
          if (lo < 0xdc00 || lo > 0xdfff) {
            this.fail("a lone high surrogate");
            return null;
          }
          out.codePoint(0x10000 + (((<u32>u - 0xd800) << 10) | (<u32>lo - 0xdc00)));
        } else {
          out.codePoint(<u32>u);
        }
      } else {
        this.pos--;
        this.fail("an unknown escape");
        return null;
      }
      runStart = this.pos;
    }
    return null;
  }

  array(depth: i32): JSONValue {
    if (depth > this.limits.maxDepth) return this.fail("nested deeper than " + this.limits.maxDepth.toString());
    this.pos++;
    const out = new JSONArray();
    this.skipSpace();
    if (this.peek() == 0x5d) {
      this.pos++;
      return out;
    }
    while (true) {
      const v = this.value(depth);
      if (this.error !== null) return out;
      out.push(v);
      this.skipSpace();
      const c = this.peek();
      if (c == 0x2c) {
        this.pos++;
        continue;
      }
      if (c == 0x5d) {
        this.pos++;
        return out;
      }
      return this.fail("expected , or ]");
    }
    return out;
  }

  object(depth: i32): JSONValue {
    if (depth > this.limits.maxDepth) return this.fail("nested deeper than " + this.limits.maxDepth.toString());
    this.pos++;
    const out = new JSONObject();
    this.skipSpace();
    if (this.peek() == 0x7d) {
      this.pos++;
      return out;
    }
    while (true) {
      this.skipSpace();
      if (this.peek() != 0x22) return this.fail("expected a key");
      const keyAt = this.pos;
      const key = this.string();
      if (key === null) return out;
      if (out.has(key)) {
        this.pos = keyAt;
        return this.fail("a duplicate key");
      }
      this.skipSpace();
      if (this.peek() != 0x3a) return this.fail("expected :");
      this.pos++;
      const v = this.value(depth);
      if (this.error !== null) return out;
      out.set(key, v);
      this.skipSpace();
      const c = this.peek();
      if (c == 0x2c) {
        this.pos++;
        continue;
      }
      if (c == 0x7d) {
        this.pos++;
        return out;
      }
      return this.fail("expected , or }");
    }
    return out;
  }
}

/** Parses `len` bytes of UTF-8 JSON at `ptr` within `limits`; the error says what and where. */
export function parseJSONAt(ptr: usize, len: i32, limits: JSONLimits = DEFAULT_LIMITS): Result<JSONValue> {
  const bad = invalidUtf8At(ptr, len);
  if (bad >= 0) return Result.err<JSONValue>("invalid_request", "invalid UTF-8 at byte " + bad.toString());
  const p = new Parser(ptr, len, limits);
  const v = p.value(0);
  if (p.error === null) {
    p.skipSpace();
    if (p.pos != len) p.fail("content after the value");
  }
  const e = p.error;
  if (e !== null) return Result.err<JSONValue>("invalid_request", "invalid JSON: " + e);
  return Result.ok<JSONValue>(v);
}

/** Parses UTF-8 JSON bytes within `limits`. */
export function parseJSONBytes(bytes: Uint8Array, limits: JSONLimits = DEFAULT_LIMITS): Result<JSONValue> {
  return parseJSONAt(bytes.dataStart, bytes.length, limits);
}

/** Parses JSON text within `limits`. */
export function parseJSON(text: string, limits: JSONLimits = DEFAULT_LIMITS): Result<JSONValue> {
  const bytes = Uint8Array.wrap(String.UTF8.encode(text));
  return parseJSONAt(bytes.dataStart, bytes.length, limits);
}

const HEX = "0123456789abcdef";

/** Writes `s` as a JSON string: quotes, backslashes and control characters escaped. */
export function writeJSONString(w: ByteWriter, s: string): void {
  w.byte(0x22);
  let runStart = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc: string | null = null;
    if (c == 0x22) esc = '\\"';
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c < 0x20 || c == 0x2028 || c == 0x2029) {
      esc = "\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
      if (c >= 0x100) esc = "\\u" + HEX.charAt(c >> 12) + HEX.charAt((c >> 8) & 15) + HEX.charAt((c >> 4) & 15) + HEX.charAt(c & 15);
    }
    if (esc !== null) {
      w.textRange(s, runStart, i);
      w.text(esc);
      runStart = i + 1;
    }
  }
  w.textRange(s, runStart, s.length);
  w.byte(0x22);
}

/** Writes `v` as compact JSON. */
export function writeJSON(w: ByteWriter, v: JSONValue): void {
  switch (v.kind) {
    case JSONKind.Null:
      w.text("null");
      break;
    case JSONKind.Bool:
      w.text(changetype<JSONBool>(v).value ? "true" : "false");
      break;
    case JSONKind.Number:
      w.text(changetype<JSONNumber>(v).text);
      break;
    case JSONKind.String:
      writeJSONString(w, changetype<JSONString>(v).value);
      break;
    case JSONKind.Array: {
      const a = changetype<JSONArray>(v);
      w.byte(0x5b);
      for (let i = 0; i < a.items.length; i++) {
        if (i > 0) w.byte(0x2c);
        writeJSON(w, a.items[i]);
      }
      w.byte(0x5d);
      break;
    }
    case JSONKind.Object: {
      const o = changetype<JSONObject>(v);
      w.byte(0x7b);
      for (let i = 0; i < o.keys.length; i++) {
        if (i > 0) w.byte(0x2c);
        writeJSONString(w, o.keys[i]);
        w.byte(0x3a);
        writeJSON(w, o.values[i]);
      }
      w.byte(0x7d);
      break;
    }
    case JSONKind.Raw:
      w.bytes(changetype<JSONRaw>(v).bytes);
      break;
  }
}

/** `v` as compact UTF-8 JSON bytes. */
export function toJSONBytes(v: JSONValue): Uint8Array {
  const w = new ByteWriter();
  writeJSON(w, v);
  return w.toBytes();
}
