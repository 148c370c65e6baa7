/**
 * What counts as JSON for config and config schemas: a value that survives a trip through
 * `JSON.stringify` and `JSON.parse` unchanged. Anything else (NaN, Infinity, undefined, functions,
 * class instances, sparse arrays, symbol keys, getters, cycles) is refused rather than silently
 * dropped or rewritten on the way to the cluster.
 */
import type { JsonValue } from "./types.js";

/** True for a plain object (prototype `Object.prototype` or null): not an array, class instance or null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Reads an own property only, never one inherited (`constructor`, `toString`, `__proto__`). */
export function ownValue(obj: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/**
 * True when `v` is a JSON value: null, a boolean, a string, a finite number, an array without
 * holes or extra properties, or a plain object whose own properties are all enumerable string-keyed
 * data properties, with no cycles. Shared (acyclic) references are fine. Never throws: a value
 * whose inspection throws (a proxy, a getter) or nests too deeply is simply not JSON.
 */
export function isJsonValue(v: unknown): v is JsonValue {
  try {
    return check(v, new Set());
  } catch {
    return false;
  }
}

function check(v: unknown, ancestors: Set<object>): boolean {
  switch (typeof v) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(v);
    case "object":
      break;
    default:
      return false;
  }
  if (v === null) return true;
  if (ancestors.has(v)) return false;
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype) return false;
    const keys = Reflect.ownKeys(v);
    // Own keys of a dense array without extras: "0".."n-1" and "length".
    if (keys.length !== v.length + 1) return false;
    ancestors.add(v);
    for (let i = 0; i < v.length; i++) {
      const d = Object.getOwnPropertyDescriptor(v, i);
      if (d === undefined || !("value" in d) || !check(d.value, ancestors)) return false;
    }
    ancestors.delete(v);
    return true;
  }
  if (!isPlainObject(v)) return false;
  ancestors.add(v);
  for (const key of Reflect.ownKeys(v)) {
    if (typeof key !== "string") return false;
    const d = Object.getOwnPropertyDescriptor(v, key);
    if (d === undefined || !d.enumerable || !("value" in d) || !check(d.value, ancestors)) return false;
  }
  ancestors.delete(v);
  return true;
}

/** A deep copy of a JSON value, so a parsed result shares nothing with its input. */
export function cloneJson(v: JsonValue): JsonValue {
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(cloneJson);
  const out: { [key: string]: JsonValue } = {};
  for (const [key, value] of Object.entries(v)) {
    // defineProperty, not assignment: a "__proto__" key must stay an own data property.
    Object.defineProperty(out, key, { value: cloneJson(value), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
