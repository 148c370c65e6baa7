/**
 * The config-schema check as the parsers reach it, without loading it (docs/adr/0186).
 *
 * Checking a config schema needs ajv, RE2 and the precompiled meta-schema validators: most of the
 * code a command that reads plugins would load, and tens of milliseconds to compile and run. The
 * parsers (parse.ts) ask this module instead of importing config-schema.ts, so the code loads only
 * where a schema must really be checked:
 *
 * - config-schema.ts hands its checks over here as it loads ({@link provideSchemaChecks}): every
 *   process that imports it (the reconciler, `apply`, the console, the tests) checks as before;
 * - a read command loads it with {@link loadSchemaChecks} (an `import()`, its own chunk in the
 *   bundle) unless the log already says what the check would: a schema the log shows was checked
 *   is remembered with {@link rememberCheckedSchema}, and the parsers take that answer.
 *
 * A parser asked to check a schema that is neither remembered nor checkable throws
 * {@link SchemaChecksNotLoaded}, which the parsers let through: a reader that forgot to load the
 * checks fails loudly instead of reading a valid plugin as invalid. Pure: no I/O.
 */
import type { FieldError } from "./errors.js";
import type { JsonValue } from "./types.js";

/** What config-schema.ts provides. */
export interface SchemaChecks {
  readonly validateConfigSchema: (schema: unknown, path: string) => FieldError[];
  readonly validateConfig: (schema: JsonValue, config: JsonValue | undefined, path: string) => FieldError[];
}

/** Thrown by {@link checkConfigSchema} when the checks were never loaded and the schema is not remembered. */
export class SchemaChecksNotLoaded extends Error {
  constructor() {
    super("the config-schema checks are not loaded: await loadSchemaChecks() before parsing a plugin whose schema the log does not vouch for");
    this.name = "SchemaChecksNotLoaded";
  }
}

let checks: SchemaChecks | undefined;

/** Schemas (by their JSON text) the log shows passed the check; capped like the compiled schemas. */
const remembered = new Set<string>();
const REMEMBERED_CAP = 256;

/** Called by config-schema.ts as it loads. */
export function provideSchemaChecks(c: SchemaChecks): void {
  checks = c;
}

/** Loads the checks (once); what `import()` costs is paid only by the process that calls this. */
export async function loadSchemaChecks(): Promise<SchemaChecks> {
  if (checks === undefined) {
    const { validateConfigSchema, validateConfig } = await import("./config-schema.js");
    provideSchemaChecks({ validateConfigSchema, validateConfig });
  }
  return checks as SchemaChecks;
}

/** Whether the checks are loaded in this process (the start-up tests ask). */
export function schemaChecksLoaded(): boolean {
  return checks !== undefined;
}

function textOf(schema: unknown): string | undefined {
  try {
    return JSON.stringify(schema);
  } catch {
    return undefined;
  }
}

/**
 * Remembers that `schema` passed the check, as a recorded fact shows (a `config.verdict` or a
 * `signature.verdict` naming the digest of a manifest that holds it): parsing it then needs no
 * checks loaded. Only for facts the check itself produced.
 */
export function rememberCheckedSchema(schema: JsonValue): void {
  const text = textOf(schema);
  if (text === undefined) return;
  if (remembered.size >= REMEMBERED_CAP) remembered.clear();
  remembered.add(text);
}

/** Whether the parsers can check `schema` without loading anything: remembered, or the checks loaded. */
export function schemaCheckReady(schema: unknown): boolean {
  if (checks !== undefined) return true;
  const text = textOf(schema);
  return text !== undefined && remembered.has(text);
}

/** The parsers' check of a manifest's config schema: the remembered answer, else the check itself. */
export function checkConfigSchema(schema: unknown, path: string): FieldError[] {
  if (checks !== undefined) return checks.validateConfigSchema(schema, path);
  const text = textOf(schema);
  if (text !== undefined && remembered.has(text)) return [];
  throw new SchemaChecksNotLoaded();
}

/** Forgets what was loaded and remembered: for tests that start as a fresh command does. */
export function resetSchemaChecksForTests(c?: SchemaChecks): void {
  checks = c;
  remembered.clear();
}
