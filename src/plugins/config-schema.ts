/**
 * A plugin's config schema and the config checked against it, with ajv 8.
 *
 * A schema comes from a vendor, so nothing in it may stall or reach out from the control plane.
 * Before ajv sees a schema it is checked, in this order, each step bounded by the one before:
 *
 * 1. its size against the caps (bytes, depth, values, list and object sizes, strings: caps.ts),
 *    walking without recursion and stopping at the first excess; then the number of subschemas;
 * 2. JSON, an object or a boolean, a supported `$schema`;
 * 3. every `$ref` and `$id` inside the schema or naming a standard meta-schema (schema-refs.ts):
 *    nothing is ever loaded, we compile synchronously with no `loadSchema`;
 * 4. every pattern valid ECMAScript and RE2, within the caps (schema-patterns.ts, regex.ts);
 * 5. no reference loop that never descends into the config (schema-cycles.ts).
 *
 * ajv then runs with RE2 as its regular-expression engine (`pattern`, `patternProperties`), a
 * linear `uniqueItems`, formats whose quadratic checks are capped, references compiled as calls
 * rather than inlined (inlining copies a definition once per reference), and its code optimizer
 * off (it costs more than it saves on large schemas), so that compiling is linear in the schema.
 *
 * ajv runs in strict mode so that a schema ajv would only half understand is refused rather than
 * silently validating less than its author meant: unknown keywords, unknown formats, ignored
 * tuple items and invalid numbers all fail. Two of ajv's strict checks are left off because they
 * refuse schemas whose meaning is clear: `strictTypes` (a `properties` inside `if` without
 * `type: "object"`) and `strictRequired` (`then: {required: [...]}`).
 */
import { Ajv } from "ajv";
import type { AnySchema, ErrorObject, KeywordDefinition, Options, ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import draft07MetaSchema from "ajv/dist/refs/json-schema-draft-07.json" with { type: "json" };
import { CAPS, CONFIG_LIMITS, SCHEMA_LIMITS, jsonLimitProblem, tooLarge } from "./caps.js";
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import type { JsonValue } from "./types.js";
import { isJsonValue, isPlainObject } from "./json.js";
import { re2RegExp } from "./regex.js";
import { RE2JS } from "re2js";
import { providePatternEngine } from "./re2-engine.js";
import { referenceCycleProblems } from "./schema-cycles.js";
import { SCHEMA_FORMATS } from "./schema-formats.js";
import { patternProblems } from "./schema-patterns.js";
import { SchemaIndex, referenceProblems, rootDocument } from "./schema-refs.js";
import { schemaNodes } from "./schema-walk.js";
import { duplicatePair, UNIQUE_ITEMS } from "./unique-items.js";
import { provideSchemaChecks } from "./schema-check.js";
import { META_VALIDATORS } from "../gen/config-meta-schemas.js";
import type { MetaValidate } from "../gen/config-meta-schemas.js";

// The schema checks compile patterns: whoever loads them has the RE2 engine (docs/adr/0188).
providePatternEngine(RE2JS);

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

/** The meta-schema each dialect checks a schema against. */
export const META_SCHEMA_IDS: Readonly<Record<Dialect, string>> = {
  "draft-07": "http://json-schema.org/draft-07/schema",
  "2019-09": "https://json-schema.org/draft/2019-09/schema",
  "2020-12": "https://json-schema.org/draft/2020-12/schema",
};

const MAX_MESSAGE = 300;

const AJV_OPTIONS: Options = {
  strict: true,
  strictTypes: false,
  strictRequired: false,
  allowUnionTypes: true,
  allErrors: true,
  logger: false,
  validateSchema: true,
  inlineRefs: false,
  code: { regExp: re2RegExp, optimize: false },
};

function invalidSchema(path: string, message: string): FieldError {
  const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message;
  return fieldError(ErrorCode.InvalidConfigSchema, path, text);
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

/**
 * What scripts/gen-meta-schemas.ts changes to write a validator out as code: where that code finds
 * the formats and RE2, and a `uniqueItems` written as code that calls the same {@link duplicatePair}.
 */
export interface Precompiling {
  readonly code: NonNullable<Options["code"]>;
  readonly uniqueItems: KeywordDefinition;
}

/**
 * A fresh ajv for `dialect`, set up as the module comment says. Exported for the tests that check
 * it runs patterns on RE2, and for the precompiler of the meta-schema validators.
 */
export function newAjv(dialect: Dialect, validateSchema = true, precompiling?: Precompiling): Ajv {
  const base: Options = validateSchema ? AJV_OPTIONS : { ...AJV_OPTIONS, validateSchema: false };
  const options: Options = precompiling === undefined ? base : { ...base, code: { ...base.code, ...precompiling.code } };
  const ajv = dialect === "draft-07" ? new Ajv(options) : dialect === "2019-09" ? new Ajv2019(options) : new Ajv2020(options);
  ajv.removeKeyword("uniqueItems");
  ajv.addKeyword(precompiling?.uniqueItems ?? UNIQUE_ITEMS);
  for (const [name, format] of SCHEMA_FORMATS) ajv.addFormat(name, format);
  if (dialect === "draft-07") return ajv;
  // So that a newer schema may still reference the draft-07 meta-schema, as the rule allows.
  ajv.addMetaSchema(draft07MetaSchema);
  return ajv;
}

type Compiled = { readonly ok: true; readonly validate: ValidateFunction } | { readonly ok: false; readonly errors: FieldError[] };

/** Every check before ajv, in order; the first step with problems ends the list. */
function precheck(schema: unknown, path: string): { ok: true; schema: JsonValue; dialect: Dialect } | { ok: false; errors: FieldError[] } {
  const excess = jsonLimitProblem(schema, path, "the config schema", SCHEMA_LIMITS);
  if (excess !== undefined) return { ok: false, errors: [excess] };
  if (!isJsonValue(schema)) return { ok: false, errors: [fieldError(ErrorCode.InvalidJSON, path, "a config schema must be JSON")] };
  if (typeof schema !== "boolean" && !isPlainObject(schema)) {
    return { ok: false, errors: [invalidSchema(path, "a config schema must be a JSON object or a boolean")] };
  }
  const errors: FieldError[] = [];
  const dialect = dialectOf(schema, path);
  if (typeof dialect !== "string") errors.push(dialect);
  const nodes = schemaNodes(schema, path);
  if (nodes.length > CAPS.schemaSubschemas) {
    return { ok: false, errors: [tooLarge(path, `the config schema has ${nodes.length} subschemas; at most ${CAPS.schemaSubschemas} are allowed`)] };
  }
  const index = new SchemaIndex(nodes, rootDocument(schema));
  errors.push(...referenceProblems(nodes, index), ...patternProblems(nodes, path));
  // Loops are looked for only among references that resolve inside the schema.
  if (errors.length === 0) errors.push(...referenceCycleProblems(nodes, index));
  if (errors.length > 0 || typeof dialect !== "string") return { ok: false, errors };
  return { ok: true, schema, dialect };
}

/**
 * Per dialect, the check of a schema against the dialect's meta-schema, precompiled by
 * scripts/gen-meta-schemas.ts from exactly the ajv {@link newAjv} builds: compiling a meta-schema
 * costs more than most vendor schemas (tens of milliseconds, on every command that reads a
 * plugin), and the precompiled check answers the same (config-meta-schemas.test.ts).
 */
const metaValidators = new Map<Dialect, MetaValidate>();

function metaValidator(dialect: Dialect): MetaValidate {
  let validate = metaValidators.get(dialect);
  if (validate === undefined) {
    validate = META_VALIDATORS[dialect]({ formats: Object.fromEntries(SCHEMA_FORMATS), regExp: re2RegExp, duplicatePair });
    metaValidators.set(dialect, validate);
  }
  return validate;
}

/** ajv's `errorsText`, over the precompiled check's errors. */
function errorsText(errors: MetaValidate["errors"]): string {
  if (errors === null || errors === undefined || errors.length === 0) return "No errors";
  return errors.map((e) => `data${e.instancePath} ${e.message ?? ""}`).join(", ");
}

/** Whether `schema` passes its dialect's meta-schema, and ajv's words when it does not (as `validateSchema` gives them). */
export function checkMetaSchema(schema: JsonValue, dialect: Dialect): { ok: true } | { ok: false; text: string } {
  // ajv's validateSchema passes a boolean schema without looking.
  if (typeof schema === "boolean") return { ok: true };
  const validate = metaValidator(dialect);
  return validate(schema) ? { ok: true } : { ok: false, text: errorsText(validate.errors) };
}

/** How many compiled schemas are kept. */
const COMPILED_CACHE = 64;

/**
 * Schemas that compiled, by dialect and text, the least recently used dropped first: one plugin's
 * schema is checked on every listing and every page (its spec parsed, its config checked), and
 * ajv's compile costs milliseconds where a lookup costs microseconds. Only a schema that passed
 * every check is kept, and it is keyed by its whole text, so a hit is the same schema.
 */
const compiled = new Map<string, ValidateFunction>();

function compile(schema: unknown, path: string): Compiled {
  const checked = precheck(schema, path);
  if (!checked.ok) return checked;
  const key = `${checked.dialect}\n${JSON.stringify(checked.schema)}`;
  const hit = compiled.get(key);
  if (hit !== undefined) {
    compiled.delete(key);
    compiled.set(key, hit);
    return { ok: true, validate: hit };
  }
  try {
    const meta = checkMetaSchema(checked.schema, checked.dialect);
    // ajv's own words when `validateSchema` is on, so a refusal reads as it always did.
    if (!meta.ok) {
      return { ok: false, errors: [invalidSchema(path, `the config schema does not compile: schema is invalid: ${meta.text}`)] };
    }
    const validate = newAjv(checked.dialect, false).compile(checked.schema as AnySchema);
    compiled.set(key, validate);
    if (compiled.size > COMPILED_CACHE) compiled.delete(compiled.keys().next().value ?? "");
    return { ok: true, validate };
  } catch (e) {
    const reason = e instanceof Error ? e.message : "unknown error";
    return { ok: false, errors: [invalidSchema(path, `the config schema does not compile: ${reason}`)] };
  }
}

/**
 * Checks a config schema: within the caps ({@link ErrorCode.TooLarge} at the part too large), JSON,
 * an object or a boolean, every reference inside the schema or to a standard meta-schema
 * ({@link ErrorCode.ForbiddenSchemaRef} at the reference's path), `$id` only naming the schema
 * itself ({@link ErrorCode.ForbiddenSchemaId}), every pattern one RE2 runs the same
 * ({@link ErrorCode.InvalidConfigSchema} at the pattern's path), no reference loop that can never
 * check a config ({@link ErrorCode.SchemaRefCycle}), and compiling cleanly under ajv's strict mode
 * ({@link ErrorCode.InvalidConfigSchema}). Never throws and never fetches anything.
 */
export function validateConfigSchema(schema: unknown, path: string): FieldError[] {
  // Whoever has the checks has the engine, whatever was reset since this module loaded.
  providePatternEngine(RE2JS);
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
 * at `path` plus the value's position (`config.a[1].b`); a config over the caps
 * ({@link CONFIG_LIMITS}) is {@link ErrorCode.TooLarge} and is not
 * checked further. An absent config is checked as `{}`, the
 * config a plugin that was given none reads. A schema that does not pass
 * {@link validateConfigSchema} matches no config ({@link ErrorCode.InvalidConfigSchema} at `path`).
 * Messages name keys and schema constraints, never config values. Never throws.
 */
export function validateConfig(schema: JsonValue, config: JsonValue | undefined, path: string): FieldError[] {
  providePatternEngine(RE2JS);
  try {
    const compiled = compile(schema, "configSchema");
    if (!compiled.ok) {
      return [invalidSchema(path, "the config schema is invalid, so no config can match it")];
    }
    const value: JsonValue = config === undefined ? {} : config;
    const excess = jsonLimitProblem(value, path, "the config", CONFIG_LIMITS);
    if (excess !== undefined) return [excess];
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

// The parsers check schemas through schema-check.ts; from now on in this process they check them here.
provideSchemaChecks({ validateConfigSchema, validateConfig });
