/**
 * What keeps the version a plugin asks for from running whatever its grant approves: an invalid
 * spec (its manifest among it), a refused signature, a config its own schema refuses. `why` reads
 * them from the facts that fed a decision; {@link standingBlockers} reads them as the log stands
 * now, so an approval is offered (and `approve` accepted) only for a version that would then run.
 * Both list them in one order — spec, signature, config — and the faces word them
 * (`src/app/wording.ts`).
 */
import { manifestDigest } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import { loadSchemaChecks, parsePlugin } from "../plugins/index.js";
import type { FieldError, JsonValue } from "../plugins/index.js";
import { imageDigest, specImage } from "./images.js";
import { verdictFor } from "./lookup.js";
import { readySchemaCheck, recordedConfigVerdict } from "./schema-facts.js";

/** One reason the version asked for could not run, as a code and the facts behind it. */
export type Blocker =
  | { readonly code: "plugin_missing" }
  | { readonly code: "plugin_deleted" }
  | { readonly code: "spec_invalid"; readonly errors: readonly FieldError[] }
  | { readonly code: "config_verdict_missing"; readonly image: string }
  | { readonly code: "config_mismatch"; readonly image: string; readonly errors: readonly { readonly code: string; readonly path: string; readonly message: string }[] }
  | { readonly code: "signature_verdict_missing"; readonly image: string }
  | { readonly code: "signature_refused"; readonly digest: string; readonly reason: string | null };

/** Every code a {@link Blocker} can have, for the tables that word each of them. */
export const BLOCKER_CODES = [
  "plugin_missing", "plugin_deleted", "spec_invalid", "config_verdict_missing", "config_mismatch", "signature_verdict_missing", "signature_refused",
] as const satisfies readonly Blocker["code"][];

/**
 * The blockers no approval can lift: the version is wrong as written or as signed. A verdict not
 * recorded yet is not one of them (the check may still pass), nor is a deleted Plugin (nothing is
 * asked for).
 */
export type HardBlocker = Extract<Blocker, { code: "spec_invalid" | "signature_refused" | "config_mismatch" }>;

/** Whether a blocker is one no approval can lift. */
export function isHardBlocker(b: Blocker): b is HardBlocker {
  return b.code === "spec_invalid" || b.code === "signature_refused" || b.code === "config_mismatch";
}

/**
 * What keeps `spec` (the Plugin spec as observed) of plugin `name` from running whatever is
 * approved, as the log stands now: the spec does not validate; the signature verdict that stands
 * for its image and manifest refused it; its config fails its manifest's schema (checked here, as
 * the reconciler checks it, so an owner learns it before the next pass). Empty when nothing is
 * known against it — a signature not checked yet included.
 */
export async function standingBlockers(store: EventLog, name: string, spec: JsonValue): Promise<HardBlocker[]> {
  await readySchemaCheck(store, name, spec);
  const p = parsePlugin({ name, spec });
  if (!p.ok) return [{ code: "spec_invalid", errors: p.errors }];
  const out: HardBlocker[] = [];
  const image = specImage(spec) ?? p.value.spec.image;
  const digest = imageDigest(image);
  const verdict = digest === null ? null : await verdictFor(store.lookups, digest, manifestDigest(p.value.spec.manifest), Number.MAX_SAFE_INTEGER);
  if (verdict?.data.outcome === "refused") out.push({ code: "signature_refused", digest: verdict.data.digest, reason: verdict.data.reason ?? null });
  const schema = p.value.spec.manifest.configSchema;
  const errors = schema === undefined ? [] : await configErrors(store, name, spec, schema, p.value.spec.config);
  if (errors.length > 0) out.push({ code: "config_mismatch", image, errors: errors.map((e) => ({ code: e.code, path: e.path, message: e.message })) });
  return out;
}


/**
 * What `validateConfig` answers for this spec's config: the config verdict the reconciler recorded
 * for exactly this image, schema and config when there is one (docs/adr/0186), else the check run here.
 */
async function configErrors(store: EventLog, name: string, spec: JsonValue, schema: JsonValue, config: JsonValue | undefined): Promise<readonly { code: string; path: string; message: string }[]> {
  const recorded = await recordedConfigVerdict(store, name, spec);
  if (recorded !== null) return recorded.data.errors;
  return (await loadSchemaChecks()).validateConfig(schema, config, "spec.config");
}
