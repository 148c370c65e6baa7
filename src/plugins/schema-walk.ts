/**
 * Where the subschemas of a config schema are: one walk, shared by the checks that run before ajv
 * (references, identifiers, patterns, reference cycles), so that they agree on what is a schema
 * and what is data. The walk fails closed: the value of a keyword it does not know is walked as if
 * it held schemas, so a `$ref` hidden under an unknown keyword is still seen.
 */
import { join } from "./errors.js";
import { isPlainObject } from "./json.js";
import type { JsonValue } from "./types.js";

/** Keywords whose value is data, not a schema: a `"$ref"` inside them is just a string. */
export const DATA_KEYWORDS: ReadonlySet<string> = new Set(["const", "enum", "default", "examples"]);
/** Keywords whose value maps names to schemas. */
export const MAP_KEYWORDS: ReadonlySet<string> = new Set(["properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"]);
/** Keywords holding a reference to another schema. */
export const REF_KEYWORDS: readonly string[] = ["$ref", "$dynamicRef", "$recursiveRef"];
/**
 * Keywords whose subschemas apply to the same value as the schema holding them, not to a part of
 * it: a loop through these and references never reaches a smaller part of the config.
 */
export const IN_PLACE_KEYWORDS: ReadonlySet<string> = new Set(["allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies"]);

/** One schema position: an object or boolean where a schema stands. */
export interface SchemaNode {
  readonly schema: JsonValue;
  /** Our field path (`configSchema.properties.a`). */
  readonly path: string;
  /** The JSON Pointer from the root (`/properties/a`), as a `$ref` fragment names it. */
  readonly pointer: string;
  /** The pointer of the schema holding this one, undefined for the root. */
  readonly parent: string | undefined;
  /** Whether this schema applies to the same value as its parent (see {@link IN_PLACE_KEYWORDS}). */
  readonly inPlace: boolean;
}

/** A JSON Pointer token (RFC 6901). */
export function pointerToken(key: string | number): string {
  return typeof key === "number" ? String(key) : key.replace(/~/g, "~0").replace(/\//g, "~1");
}

interface Visit {
  readonly value: JsonValue;
  readonly path: string;
  readonly pointer: string;
  readonly parent: string | undefined;
  readonly inPlace: boolean;
}

/**
 * Every schema position of `root`, parents before children (pre-order), without recursion. Values
 * that are neither objects nor booleans (the strings of `required`, say) are not schemas and are
 * left out; arrays are looked through.
 */
export function schemaNodes(root: JsonValue, path: string): SchemaNode[] {
  const out: SchemaNode[] = [];
  const stack: Visit[] = [{ value: root, path, pointer: "", parent: undefined, inPlace: false }];
  while (stack.length > 0) {
    const v = stack.pop() as Visit;
    if (Array.isArray(v.value)) {
      for (let i = v.value.length - 1; i >= 0; i--) {
        stack.push({ ...v, value: v.value[i] as JsonValue, path: join(v.path, i), pointer: `${v.pointer}/${i}` });
      }
      continue;
    }
    if (typeof v.value === "boolean") {
      out.push({ schema: v.value, path: v.path, pointer: v.pointer, parent: v.parent, inPlace: v.inPlace });
      continue;
    }
    if (!isPlainObject(v.value)) continue;
    const node = v.value as { [key: string]: JsonValue };
    out.push({ schema: node, path: v.path, pointer: v.pointer, parent: v.parent, inPlace: v.inPlace });
    const children: Visit[] = [];
    for (const [key, value] of Object.entries(node)) {
      if (DATA_KEYWORDS.has(key) || REF_KEYWORDS.includes(key)) continue;
      const at = join(v.path, key);
      const ptr = `${v.pointer}/${pointerToken(key)}`;
      const inPlace = IN_PLACE_KEYWORDS.has(key);
      if (MAP_KEYWORDS.has(key) && isPlainObject(value)) {
        for (const [name, sub] of Object.entries(value)) {
          children.push({ value: sub as JsonValue, path: join(at, name), pointer: `${ptr}/${pointerToken(name)}`, parent: v.pointer, inPlace });
        }
      } else {
        children.push({ value, path: at, pointer: ptr, parent: v.pointer, inPlace });
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as Visit);
  }
  return out;
}
