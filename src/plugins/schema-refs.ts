/**
 * What a config schema's references may reach, and what they reach. A schema comes from a vendor,
 * so it must never make us read a file or fetch a URL, and it must be one document:
 *
 * - every `$ref`, `$dynamicRef` and `$recursiveRef` stays inside the schema (a fragment such as
 *   `#/definitions/x` or `#name`, or the schema's own `$id` with a fragment) or names a standard
 *   JSON Schema meta-schema (draft-07, 2019-09, 2020-12); a pointer must land on a subschema, not
 *   on data (`#/enum/0`) or on nothing;
 * - `$id` names the schema itself, only at its root, and never a standard meta-schema's address
 *   (which would shadow it); a subschema's `$id` may only be draft-07's anchor form `#name`.
 *   Embedded documents (a subschema with its own `$id` URL) are refused rather than resolved.
 *
 * Nothing is ever loaded: ajv compiles synchronously with no `loadSchema`.
 */
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import { isPlainObject } from "./json.js";
import type { SchemaNode } from "./schema-walk.js";
import type { JsonValue } from "./types.js";

/** The standard meta-schema documents a `$ref` may reach (compared without fragment). */
export const META_SCHEMAS: ReadonlySet<string> = new Set(
  [
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    ...["core", "applicator", "validation", "meta-data", "format", "content"].map((m) => `https://json-schema.org/draft/2019-09/meta/${m}`),
    "https://json-schema.org/draft/2020-12/schema",
    ...["core", "applicator", "unevaluated", "validation", "meta-data", "format-annotation", "content"].map(
      (m) => `https://json-schema.org/draft/2020-12/meta/${m}`,
    ),
  ].map((u) => new URL(u).href),
);

const REF_PREVIEW = 200;

/** The absolute URL of `ref` against `base`, without its fragment; undefined if there is none. */
export function resolveDocument(ref: string, base: string | undefined): string | undefined {
  try {
    const url = base === undefined ? new URL(ref) : new URL(ref, base);
    url.hash = "";
    return url.href;
  } catch {
    return undefined;
  }
}

/** The document the root's `$id` names, if it names one. */
export function rootDocument(schema: JsonValue): string | undefined {
  const id = isPlainObject(schema) ? schema["$id"] : undefined;
  return typeof id === "string" ? resolveDocument(id, undefined) : undefined;
}

/** Where one reference leads. */
export type RefTarget =
  | { readonly kind: "schema"; readonly pointers: readonly string[] }
  /** A standard meta-schema: a finite document of our own, not part of this schema. */
  | { readonly kind: "meta" }
  /** Outside the schema: a file, a URL, another document. */
  | { readonly kind: "outside" }
  /** Inside the schema, but at data or at nothing. */
  | { readonly kind: "dangling"; readonly why: string };

/** The subschemas of one document, by pointer and by anchor, to resolve references in. */
export class SchemaIndex {
  readonly #byPointer = new Map<string, SchemaNode>();
  readonly #anchors = new Map<string, string[]>();
  readonly #dynamicAnchors = new Map<string, string[]>();
  readonly #root: string | undefined;

  constructor(nodes: readonly SchemaNode[], root: string | undefined) {
    this.#root = root;
    for (const n of nodes) {
      this.#byPointer.set(n.pointer, n);
      if (!isPlainObject(n.schema)) continue;
      const anchor = n.schema["$anchor"];
      const dynamic = n.schema["$dynamicAnchor"];
      const id = n.schema["$id"];
      if (typeof anchor === "string") add(this.#anchors, anchor, n.pointer);
      if (typeof dynamic === "string") {
        add(this.#anchors, dynamic, n.pointer);
        add(this.#dynamicAnchors, dynamic, n.pointer);
      }
      // draft-07: `"$id": "#name"` is a plain-name anchor.
      if (typeof id === "string" && id.startsWith("#") && id.length > 1) add(this.#anchors, id.slice(1), n.pointer);
    }
  }

  /** The schema at `pointer`, if one stands there. */
  node(pointer: string): SchemaNode | undefined {
    return this.#byPointer.get(pointer);
  }

  /** Where `ref`, the value of `keyword`, leads. */
  resolve(keyword: string, ref: string): RefTarget {
    let fragment: string;
    if (ref.startsWith("#")) {
      fragment = ref.slice(1);
    } else {
      const doc = resolveDocument(ref, this.#root);
      if (doc !== undefined && META_SCHEMAS.has(doc)) return { kind: "meta" };
      if (doc === undefined || doc !== this.#root) return { kind: "outside" };
      const hash = new URL(ref, this.#root).hash;
      fragment = hash.startsWith("#") ? hash.slice(1) : hash;
    }
    // $recursiveRef "#" reaches the root, or an outer $recursiveAnchor: in one document, the root.
    if (fragment === "") return { kind: "schema", pointers: [""] };
    if (fragment.startsWith("/")) {
      let pointer: string;
      try {
        pointer = decodeURIComponent(fragment);
      } catch {
        return { kind: "dangling", why: "its fragment is not valid percent-encoding" };
      }
      return this.#byPointer.has(pointer)
        ? { kind: "schema", pointers: [pointer] }
        : { kind: "dangling", why: "it does not point at a subschema of this schema" };
    }
    const targets = [...(this.#anchors.get(fragment) ?? [])];
    // A $dynamicRef may land on any $dynamicAnchor of that name in scope: all of them, to be safe.
    if (keyword === "$dynamicRef") targets.push(...(this.#dynamicAnchors.get(fragment) ?? []));
    // An anchor nobody declares is left for ajv, which refuses the schema for it.
    return { kind: "schema", pointers: [...new Set(targets)] };
  }
}

function add(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/**
 * Every reference that leaves the schema ({@link ErrorCode.ForbiddenSchemaRef} at the reference's
 * path) or lands on data or nothing ({@link ErrorCode.InvalidConfigSchema}, there too), and every
 * `$id` that names another document
 * ({@link ErrorCode.ForbiddenSchemaId} at the `$id`'s path).
 */
export function referenceProblems(nodes: readonly SchemaNode[], index: SchemaIndex): FieldError[] {
  const errors: FieldError[] = [];
  for (const n of nodes) {
    if (!isPlainObject(n.schema)) continue;
    const id = n.schema["$id"];
    if (typeof id === "string") {
      const problem = n.parent === undefined ? rootIdProblem(id) : id.startsWith("#") ? undefined : "a subschema's $id would name another document inside this one";
      if (problem !== undefined) {
        errors.push(fieldError(ErrorCode.ForbiddenSchemaId, join(n.path, "$id"), `$id ${preview(id)}: ${problem}; only the schema's root may have an $id, and it names the schema itself`));
      }
    }
    for (const keyword of ["$ref", "$dynamicRef", "$recursiveRef"]) {
      const ref = n.schema[keyword];
      if (typeof ref !== "string") continue;
      const target = index.resolve(keyword, ref);
      const at = join(n.path, keyword);
      if (target.kind === "outside") {
        errors.push(
          fieldError(
            ErrorCode.ForbiddenSchemaRef,
            at,
            `reference ${preview(ref)} reaches outside the schema: only the schema itself and the standard meta-schemas may be referenced`,
          ),
        );
      } else if (target.kind === "dangling") {
        errors.push(fieldError(ErrorCode.InvalidConfigSchema, at, `reference ${preview(ref)} leads nowhere: ${target.why}`));
      }
    }
  }
  return errors;
}

function rootIdProblem(id: string): string | undefined {
  const doc = resolveDocument(id, undefined);
  return doc !== undefined && META_SCHEMAS.has(doc) ? "it names a standard meta-schema" : undefined;
}

function preview(text: string): string {
  return JSON.stringify(text.length > REF_PREVIEW ? `${text.slice(0, REF_PREVIEW)}…` : text);
}
