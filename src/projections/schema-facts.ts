/**
 * What the log already says about a plugin's config schema and config, so that a reader need not
 * load and run the config-schema checks to say it again (docs/adr/0186).
 *
 * The reconciler records, for each version it sees, a `config.verdict` (the config checked against
 * the schema, which compiles the schema first) and a `signature.verdict` naming the digest of the
 * manifest it parsed (schema checked). So a schema is known to pass when:
 * - the latest config verdict for the spec's image was made on an observed spec with the same
 *   image, schema and config, and carries no schema error; or
 * - a signature verdict names the image's digest and the digest of this very manifest.
 * Otherwise the checks are loaded and run, as before.
 */
import { manifestDigest, pluginStream } from "../events/index.js";
import type { EventLog, EventOf } from "../events/index.js";
import { ErrorCode, jsonEqual, loadSchemaChecks, parsePluginUnchecked, rememberCheckedSchema, schemaCheckReady, SchemaChecksNotLoaded } from "../plugins/index.js";
import type { JsonValue } from "../plugins/index.js";
import { imageDigest, specImage } from "./images.js";

function field(spec: JsonValue | null | undefined, key: string): JsonValue | undefined {
  return spec !== null && spec !== undefined && typeof spec === "object" && !Array.isArray(spec) ? spec[key] : undefined;
}

function schemaOf(spec: JsonValue | null): JsonValue | undefined {
  return field(field(spec, "manifest"), "configSchema");
}

/**
 * The config verdict the reconciler recorded for exactly this spec's image, schema and config
 * (what `validateConfig` would answer now), or null when none was.
 */
export async function recordedConfigVerdict(store: EventLog, name: string, spec: JsonValue): Promise<EventOf<"config.verdict"> | null> {
  const image = specImage(spec);
  if (image === null) return null;
  const stream = pluginStream(name);
  const verdict = await store.lookups.configVerdict(stream, image, Number.MAX_SAFE_INTEGER);
  if (verdict === null || verdict.causedBy === null) return null;
  const cause = await store.lookups.lastOf(stream, ["plugin.observed"], verdict.causedBy + 1);
  if (cause === null || cause.seq !== verdict.causedBy) return null;
  const same = (k: (s: JsonValue) => JsonValue | undefined): boolean => jsonEqual(k(cause.data.spec) ?? null, k(spec) ?? null);
  return same((s) => field(s, "image")) && same(schemaOf) && same((s) => field(s, "config")) ? verdict : null;
}

/**
 * Makes parsing plugin `name`'s observed `spec` safe without the checks loaded when the log shows
 * its schema passed them (the schema is remembered); otherwise loads them. Nothing to do for a
 * spec without a schema.
 */
export async function readySchemaCheck(store: EventLog, name: string, spec: JsonValue | null): Promise<void> {
  const schema = schemaOf(spec);
  if (schema === undefined || schemaCheckReady(schema)) return;
  if (spec !== null && (await vouchedFor(store, name, spec, schema))) {
    rememberCheckedSchema(schema);
    return;
  }
  await loadSchemaChecks();
}

async function vouchedFor(store: EventLog, name: string, spec: JsonValue, schema: JsonValue): Promise<boolean> {
  const config = await recordedConfigVerdict(store, name, spec);
  if (config !== null && config.data.errors.every((e) => e.code !== ErrorCode.InvalidConfigSchema)) return true;
  const digest = imageDigest(specImage(spec));
  const shape = parsePluginUnchecked({ name, spec });
  if (digest === null || !shape.ok || !jsonEqual(shape.value.spec.manifest.configSchema ?? null, schema)) return false;
  return (await store.lookups.signatureVerdict(digest, manifestDigest(shape.value.spec.manifest))) !== null;
}

/**
 * Runs a read that parses plugins with the checks possibly not loaded; if it meets a schema no
 * fact vouched for, loads them and runs it again (a read has no effect to repeat).
 */
export async function withSchemaChecks<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (!(e instanceof SchemaChecksNotLoaded)) throw e;
    await loadSchemaChecks();
    return read();
  }
}
