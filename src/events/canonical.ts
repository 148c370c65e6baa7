/**
 * Canonical JSON (RFC 8785, JCS) on the append path. It produces the same text as
 * `json-canonicalize` for every JSON value (a property test checks this against the library)
 * but without the library's per-node path bookkeeping, which dominated the cost of an append.
 *
 * JCS: object members sorted by their names' UTF-16 code units (what `Array#sort` does with
 * strings), no whitespace, strings and numbers serialised as ECMAScript's `JSON.stringify` does.
 * Non-finite numbers and cycles (nesting deeper than 256) are refused. Like `JSON.stringify`, an object's `toJSON()` is
 * used, `undefined` members are left out and `undefined` in an array becomes `null`.
 */

/** The canonical JSON text of `value`; throws on values JSON cannot hold. */
export function canonicalJson(value: unknown): string {
  return write(value, 0);
}

/** Deeper than this is refused: it is a cycle, or no event anyone meant to write. */
const MAX_DEPTH = 256;

function write(v: unknown, depth: number): string {
  if (v === null) return "null";
  switch (typeof v) {
    case "string": return JSON.stringify(v);
    case "boolean": return v ? "true" : "false";
    case "number":
      if (!Number.isFinite(v)) throw new Error(`non-finite number ${v} is not JSON`);
      return JSON.stringify(v);
    case "object": break;
    default: throw new Error(`a ${typeof v} is not JSON`);
  }
  const obj = v as { toJSON?: unknown };
  if (typeof obj.toJSON === "function") return write((obj.toJSON as () => unknown)(), depth);
  if (depth > MAX_DEPTH) throw new Error(`nested deeper than ${MAX_DEPTH} levels (or circular): not accepted as JSON`);
  let out: string;
  if (Array.isArray(obj)) {
    out = "[";
    for (let i = 0; i < obj.length; i++) {
      const item: unknown = obj[i];
      if (i > 0) out += ",";
      out += item === undefined || typeof item === "function" || typeof item === "symbol" ? "null" : write(item, depth + 1);
    }
    out += "]";
  } else {
    const rec = obj as Record<string, unknown>;
    const keys = Object.keys(rec).sort();
    out = "{";
    let first = true;
    for (const k of keys) {
      const item = rec[k];
      if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
      if (!first) out += ",";
      first = false;
      out += JSON.stringify(k) + ":" + write(item, depth + 1);
    }
    out += "}";
  }
  return out;
}
