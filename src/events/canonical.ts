/**
 * Canonical JSON (RFC 8785, JCS) on the append path. It produces the same text as
 * `json-canonicalize` for every JSON value (a property test checks this against the library)
 * but without the library's per-node path bookkeeping, which dominated the cost of an append.
 *
 * JCS: object members sorted by their names' UTF-16 code units (what `Array#sort` does with
 * strings), no whitespace, strings and numbers serialised as ECMAScript's `JSON.stringify` does.
 * Non-finite numbers, bigints and cycles (nesting deeper than 256) are refused. Like
 * `JSON.stringify`, an object's `toJSON()` is used, `undefined` members are left out and
 * `undefined` in an array becomes `null`.
 *
 * How it is fast: one walk builds a plain copy of the value whose objects have their members
 * inserted in canonical order, then V8's native `JSON.stringify` writes the copy (it keeps
 * insertion order). The copy is also what a `JSON.parse` of the text would give, so the store
 * returns it as the appended event's data instead of parsing the text again. The one case
 * insertion order cannot express is a member name that is an array index ("0", "10"): V8 always
 * enumerates those first, in numeric order. Any name starting with a digit sends the text
 * through the sorting serializer instead.
 */

/** A value in canonical form: its RFC 8785 text and the plain JSON value that text denotes. */
export interface Canonical {
  /** The canonical JSON text. */
  readonly text: string;
  /** Equal to `JSON.parse(text)`: plain objects, arrays and primitives only, `-0` read as `0`. */
  readonly value: unknown;
}

/** The canonical JSON text of `value`; throws on values JSON cannot hold. */
export function canonicalJson(value: unknown): string {
  return canonicalForm(value).text;
}

/** The canonical text of `value` and the plain value it denotes; throws on values JSON cannot hold. */
export function canonicalForm(value: unknown): Canonical {
  const walk: Walk = { digitKeys: false };
  const plain = copy(value, 0, walk);
  if (plain === undefined) throw new Error(`${describe(value)} is not JSON`);
  return { text: walk.digitKeys ? write(plain) : JSON.stringify(plain), value: plain };
}

/** Deeper than this is refused: it is a cycle, or no event anyone meant to write. */
const MAX_DEPTH = 256;

interface Walk { digitKeys: boolean }

function describe(v: unknown): string {
  return typeof v === "function" ? "a function" : `a ${typeof v}`;
}

/** Left out as a member, `null` in an array (as `JSON.stringify` does). */
function skipped(v: unknown): boolean {
  return v === undefined || typeof v === "function" || typeof v === "symbol";
}

/** The plain copy, members in canonical order; undefined for a value JSON leaves out. */
function copy(v: unknown, depth: number, walk: Walk): unknown {
  if (typeof v !== "object") {
    switch (typeof v) {
      case "string": case "boolean": return v;
      case "number":
        if (!Number.isFinite(v)) throw new Error(`non-finite number ${v} is not JSON`);
        return v === 0 ? 0 : v;
      case "undefined": case "function": case "symbol": return undefined;
      default: throw new Error(`${describe(v)} is not JSON`);
    }
  }
  if (v === null) return null;
  if (depth > MAX_DEPTH) throw new Error(`nested deeper than ${MAX_DEPTH} levels (or circular): not accepted as JSON`);
  const obj = v as { toJSON?: unknown };
  if (typeof obj.toJSON === "function") return copy((obj.toJSON as () => unknown)(), depth + 1, walk);
  if (Array.isArray(obj)) {
    const n = obj.length;
    const out = new Array<unknown>(n);
    for (let i = 0; i < n; i++) {
      const item: unknown = obj[i];
      out[i] = skipped(item) ? null : copy(item, depth + 1, walk);
    }
    return out;
  }
  const rec = obj as Record<string, unknown>;
  const keys = Object.keys(rec);
  const n = keys.length;
  // Insertion sort: objects have few members, often nearly sorted; `>` on strings compares
  // UTF-16 code units, as JCS orders names (and as the default Array#sort does, more slowly).
  for (let i = 1; i < n; i++) {
    const k = keys[i] as string;
    let j = i - 1;
    if (!((keys[j] as string) > k)) continue;
    do { keys[j + 1] = keys[j] as string; j--; } while (j >= 0 && (keys[j] as string) > k);
    keys[j + 1] = k;
  }
  const out: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    const k = keys[i] as string;
    const item = rec[k];
    if (skipped(item)) continue;
    const c = k.charCodeAt(0);
    if (c >= 48 && c <= 57) walk.digitKeys = true;
    if (k === "__proto__") Object.defineProperty(out, k, { value: copy(item, depth + 1, walk), enumerable: true, writable: true, configurable: true });
    else out[k] = copy(item, depth + 1, walk);
  }
  return out;
}

/** Serializes a plain copy, sorting every object's members (the slow path, for digit-led names). */
function write(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) out += (i > 0 ? "," : "") + write(v[i]);
    return out + "]";
  }
  const rec = v as Record<string, unknown>;
  let out = "{";
  let first = true;
  for (const k of Object.keys(rec).sort()) {
    out += (first ? "" : ",") + JSON.stringify(k) + ":" + write(rec[k]);
    first = false;
  }
  return out + "}";
}
