/**
 * Manifest equality (seed 000, "Manifest.Equal"): the Plugin's declared manifest must equal the
 * image's signed label (D-42), so a Plugin cannot ask for more than its vendor signed.
 */
import { sameRules } from "./rbac.js";
import type { JsonValue, Manifest } from "./types.js";

/**
 * True when `a` and `b` ask for the same things: capabilities, egress hosts (`host:port`), Secret
 * mounts (name and mount path) and data tiers compared as sets; config schemas compared as JSON
 * values with exact numbers (object key order ignored, array order kept; an absent schema differs
 * from `{}` and from `true`); PolicyRules compared as sets of rules whose lists are sets; the UI
 * bundle's digest and entry exactly.
 */
export function manifestEqual(a: Manifest, b: Manifest): boolean {
  return (
    sameSet(a.capabilities, b.capabilities, (c) => c) &&
    sameSet(a.egress, b.egress, (e) => `${e.host}:${e.port}`) &&
    // A mount path never contains NUL, so it separates the pair unambiguously.
    sameSet(a.secrets, b.secrets, (s) => `${s.name}\u0000${s.mountPath}`) &&
    sameSet(a.dataTiers, b.dataTiers, (t) => t) &&
    sameSchema(a.configSchema, b.configSchema) &&
    sameRules(a.rbac, b.rbac) &&
    a.ui?.bundle === b.ui?.bundle &&
    a.ui?.entry === b.ui?.entry
  );
}

function sameSet<T>(a: readonly T[], b: readonly T[], key: (item: T) => string): boolean {
  const left = new Set(a.map(key));
  const right = new Set(b.map(key));
  if (left.size !== right.size) return false;
  for (const k of left) if (!right.has(k)) return false;
  return true;
}

function sameSchema(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return jsonEqual(a, b);
}

/**
 * Structural JSON equality. Numbers compare by value (`1` and `1.0` parse to the same number;
 * `1` and `1.0000000000000002` do not), objects by their own keys regardless of order, arrays
 * element by element.
 */
export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a !== "object" || typeof b !== "object") return typeof a === typeof b && a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i] as JsonValue));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every(
    (k) =>
      Object.prototype.hasOwnProperty.call(b, k) &&
      jsonEqual(a[k] as JsonValue, b[k] as JsonValue),
  );
}
