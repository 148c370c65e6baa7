/**
 * A plugin's config schema and the config checked against it, with ajv 8.
 *
 * A schema comes from a vendor, so it must never make us read a file or fetch a URL: every `$ref`,
 * `$dynamicRef` and `$recursiveRef` is checked before ajv sees the schema, and may reach only the
 * schema itself (a fragment such as `#/definitions/x`, or the schema's own `$id` with a fragment)
 * or a standard JSON Schema meta-schema (draft-07, 2019-09, 2020-12). Nothing is ever loaded:
 * we compile synchronously with no `loadSchema`, so an unresolvable reference is a compile error.
 *
 * ajv runs in strict mode so that a schema ajv would only half understand is refused rather than
 * silently validating less than its author meant: unknown keywords, unknown formats (no format
 * plugin is loaded), ignored tuple items and invalid numbers all fail. Two of ajv's strict checks
 * are left off because they refuse schemas whose meaning is clear: `strictTypes` (a `properties`
 * inside `if` without `type: "object"`) and `strictRequired` (`then: {required: [...]}`).
 */
import { Ajv } from "ajv";
import type { AnySchema, ErrorObject, Options, ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import draft07MetaSchema from "ajv/dist/refs/json-schema-draft-07.json" with { type: "json" };
import { formatNames, fullFormats } from "ajv-formats/dist/formats.js";
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import type { JsonValue } from "./types.js";
import { isJsonValue, isPlainObject } from "./json.js";

/** The `$schema` values accepted, each naming the dialect it selects. Absent means draft-07. */
export const SUPPORTED_DIALECTS: Readonly<Record<string, Dialect>> = {
  "http://json-schema.org/draft-07/schema#": "draft-07",
  "http://json-schema.org/draft-07/schema": "draft-07",
  "https://json-schema.org/draft/2019-09/schema": "2019-09",
  "https://json-schema.org/draft/2019-09/schema#": "2019-09",
  "https://json-schema.org/draft/2020-12/schema": "2020-12",
  "https://json-schema.org/draft/2020-12/schema#": "2020-12",
};

/** A JSON Schema dialect this module compiles. */
export type Dialect = "draft-07" | "2019-09" | "2020-12";

/** The standard meta-schema documents a `$ref` may reach (compared without fragment). */
const META_SCHEMAS = new Set(
  [
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    ...["core", "applicator", "validation", "meta-data", "format", "content"].map(
      (m) => `https://json-schema.org/draft/2019-09/meta/${m}`,
    ),
    "https://json-schema.org/draft/2020-12/schema",
    ...["core", "applicator", "unevaluated", "validation", "meta-data", "format-annotation", "content"].map(
      (m) => `https://json-schema.org/draft/2020-12/meta/${m}`,
    ),
  ].map((u) => new URL(u).href),
);

const REF_KEYWORDS = ["$ref", "$dynamicRef", "$recursiveRef"];
// Keywords whose value is data, not a schema: a "$ref" inside them is just a string.
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);
// Keywords whose value maps names to schemas.
const MAP_KEYWORDS = new Set(["properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"]);
/** Deeper schemas are refused rather than risk the stack. */
const MAX_SCHEMA_DEPTH = 128;
const MAX_MESSAGE = 300;

const AJV_OPTIONS: Options = {
  strict: true,
  strictTypes: false,
  strictRequired: false,
  allowUnionTypes: true,
  allErrors: true,
  logger: false,
  validateSchema: true,
};

function invalidSchema(path: string, message: string): FieldError {
  const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message;
  return fieldError(ErrorCode.InvalidConfigSchema, path, text);
}

/** The absolute URL of `ref` against `base`, without its fragment; undefined if it has none. */
function resolveDocument(ref: string, base: string | undefined): string | undefined {
  try {
    const url = base === undefined ? new URL(ref) : new URL(ref, base);
    url.hash = "";
    return url.href;
  } catch {
    return undefined;
  }
}

interface Walk {
  readonly root: string | undefined;
  readonly errors: FieldError[];
}

function checkRef(ref: string, base: string | undefined, walk: Walk, path: string): void {
  // A fragment stays inside the resource it appears in, which is inside this schema.
  if (ref.startsWith("#")) return;
  const doc = resolveDocument(ref, base);
  if (doc !== undefined && (META_SCHEMAS.has(doc) || doc === walk.root)) return;
  walk.errors.push(
    fieldError(
      ErrorCode.ForbiddenSchemaRef,
      path,
      `reference ${JSON.stringify(ref.slice(0, 200))} reaches outside the schema: only the schema itself and the standard meta-schemas may be referenced`,
    ),
  );
}

function walkSchema(node: JsonValue, path: string, base: string | undefined, walk: Walk, depth: number): void {
  if (node === null || typeof node !== "object") return;
  if (depth > MAX_SCHEMA_DEPTH) {
    walk.errors.push(invalidSchema(path, `the config schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`));
    return;
  }
  if (Array.isArray(node)) {
    node.forEach((item, i) => walkSchema(item, join(path, i), base, walk, depth + 1));
    return;
  }
  let here = base;
  const id = node["$id"];
  if (typeof id === "string") here = resolveDocument(id, base) ?? base;
  for (const [key, value] of Object.entries(node)) {
    const at = join(path, key);
    if (REF_KEYWORDS.includes(key)) {
      if (typeof value === "string") checkRef(value, here, walk, at);
    } else if (DATA_KEYWORDS.has(key)) {
      continue;
    } else if (MAP_KEYWORDS.has(key) && isPlainObject(value)) {
      for (const [name, sub] of Object.entries(value)) walkSchema(sub as JsonValue, join(at, name), here, walk, depth + 2);
    } else {
      // Known subschema keywords and anything unknown alike: fail closed on a "$ref" anywhere.
      walkSchema(value, at, here, walk, depth + 1);
    }
  }
}

function dialectOf(schema: JsonValue, path: string): Dialect | FieldError {
  if (!isPlainObject(schema) || !Object.prototype.hasOwnProperty.call(schema, "$schema")) return "draft-07";
  const declared = schema["$schema"];
  if (typeof declared === "string" && Object.prototype.hasOwnProperty.call(SUPPORTED_DIALECTS, declared)) {
    return SUPPORTED_DIALECTS[declared] as Dialect;
  }
  return invalidSchema(
    join(path, "$schema"),
    `unsupported $schema ${JSON.stringify(String(declared).slice(0, 200))}: use draft-07, 2019-09 or 2020-12`,
  );
}

function newAjv(dialect: Dialect): Ajv {
  const ajv = dialect === "draft-07" ? new Ajv(AJV_OPTIONS) : dialect === "2019-09" ? new Ajv2019(AJV_OPTIONS) : new Ajv2020(AJV_OPTIONS);
  // The standard formats (uri, email, date-time, …) are checked, not refused as unknown; the
  // definitions come from ajv-formats, with no network access of any kind.
  for (const name of formatNames) ajv.addFormat(name, fullFormats[name]);
  if (dialect === "draft-07") return ajv;
  // So that a newer schema may still reference the draft-07 meta-schema, as the rule allows.
  ajv.addMetaSchema(draft07MetaSchema);
  return ajv;
}

type Compiled = { readonly ok: true; readonly validate: ValidateFunction } | { readonly ok: false; readonly errors: FieldError[] };

function compile(schema: unknown, path: string): Compiled {
  if (!isJsonValue(schema)) return { ok: false, errors: [fieldError(ErrorCode.InvalidJSON, path, "a config schema must be JSON")] };
  if (typeof schema !== "boolean" && !isPlainObject(schema)) {
    return { ok: false, errors: [invalidSchema(path, "a config schema must be a JSON object or a boolean")] };
  }
  const rootId = isPlainObject(schema) ? schema["$id"] : undefined;
  const root = typeof rootId === "string" ? resolveDocument(rootId, undefined) : undefined;
  const errors: FieldError[] = [];
  const dialect = dialectOf(schema, path);
  if (typeof dialect !== "string") errors.push(dialect);
  walkSchema(schema, path, root, { root, errors }, 0);
  if (errors.length > 0 || typeof dialect !== "string") return { ok: false, errors };
  try {
    return { ok: true, validate: newAjv(dialect).compile(schema as AnySchema) };
  } catch (e) {
    const reason = e instanceof Error ? e.message : "unknown error";
    return { ok: false, errors: [invalidSchema(path, `the config schema does not compile: ${reason}`)] };
  }
}

/**
 * Checks a config schema: JSON, an object or a boolean, every reference inside the schema or to a
 * standard meta-schema ({@link ErrorCode.ForbiddenSchemaRef} otherwise, at the reference's path),
 * and compiling cleanly under ajv's strict mode ({@link ErrorCode.InvalidConfigSchema}).
 * Never throws and never fetches anything.
 */
export function validateConfigSchema(schema: unknown, path: string): FieldError[] {
  try {
    const compiled = compile(schema, path);
    return compiled.ok ? [] : compiled.errors;
  } catch {
    return [invalidSchema(path, "the config schema could not be checked")];
  }
}

/** Turns ajv's JSON Pointer into our field path, using the config to tell indexes from keys. */
function instancePath(base: string, pointer: string, config: JsonValue): string {
  if (pointer === "") return base;
  let path = base;
  let node: JsonValue | undefined = config;
  for (const raw of pointer.slice(1).split("/")) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(node) && /^(?:0|[1-9][0-9]*)$/.test(seg)) {
      path = join(path, Number(seg));
      node = node[Number(seg)];
    } else {
      path = join(path, seg);
      node = isPlainObject(node) ? (node[seg] as JsonValue | undefined) : undefined;
    }
  }
  return path;
}

function describe(e: ErrorObject): string {
  const message = e.message ?? `fails "${e.keyword}"`;
  const extra: unknown = e.params["additionalProperty"] ?? e.params["unevaluatedProperty"];
  return typeof extra === "string" ? `${message}: ${JSON.stringify(extra.slice(0, 200))}` : message;
}

/**
 * Checks a config against its schema, returning one {@link ErrorCode.ConfigMismatch} per problem
 * at `path` plus the value's position (`config.a[1].b`). An absent config is checked as `{}`, the
 * config a plugin that was given none reads. A schema that does not pass
 * {@link validateConfigSchema} matches no config ({@link ErrorCode.InvalidConfigSchema} at `path`).
 * Messages name keys and schema constraints, never config values. Never throws.
 */
export function validateConfig(schema: JsonValue, config: JsonValue | undefined, path: string): FieldError[] {
  try {
    const compiled = compile(schema, "configSchema");
    if (!compiled.ok) {
      return [invalidSchema(path, "the config schema is invalid, so no config can match it")];
    }
    const value: JsonValue = config === undefined ? {} : config;
    if (!isJsonValue(value)) return [fieldError(ErrorCode.InvalidJSON, path, "a config must be JSON")];
    if (compiled.validate(value)) return [];
    const errors = (compiled.validate.errors ?? []).map((e) =>
      fieldError(ErrorCode.ConfigMismatch, instancePath(path, e.instancePath, value), describe(e)),
    );
    return errors.length > 0 ? errors : [fieldError(ErrorCode.ConfigMismatch, path, "the config does not match its schema")];
  } catch {
    return [fieldError(ErrorCode.ConfigMismatch, path, "the config could not be checked against its schema")];
  }
}
