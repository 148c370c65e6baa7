/**
 * The rules of the verdicts by version (docs/adr/0191), as the rollout and egress rules are kept
 * (docs/adr/0150): every `signature.verdict`, `config.verdict` and `grant.verdict` names the
 * version of its family's rules that made it, and each released version stays here as a pure
 * function, so `check-decisions` re-decides a verdict under the rules it names (a difference is a
 * divergence: a bug or tampering) and, when those are older, under today's (an upgrade's effect).
 *
 * - `signature`: the catalog step of the trust policy, the part of a signature verdict the log
 *   holds every input of (the catalog it cites and the identities that verified): which catalog
 *   publishers signed the image and which entry, if any, makes it verified.
 * - `config`: a plugin's config against its manifest's config schema.
 * - `grant`: the Secrets a grant maps that are another installed instance's (docs/adr/0161).
 */
import type { Catalog, CatalogEntry } from "./catalog.js";
import type { FieldError } from "./errors.js";
import { rulesRegistry, type RulesRegistry } from "./rules.js";
import { foreignSecretProblems, type InstanceSecrets } from "./secret-claims.js";
import { identityMatches, type VerifiedIdentity } from "./signers.js";
import type { JsonValue, Manifest } from "./types.js";

/** What the catalog makes of an image whose signatures by `identities` verified. */
export interface CatalogAnswer {
  /** The catalog publishers among the identities, by name, sorted, each once. */
  readonly publishers: readonly string[];
  /** The entry that pins the digest and whose publisher signed it (the first by name), or null: then the image is not verified. */
  readonly entry: CatalogEntry | null;
}

/** The signature rules' catalog step. */
export type SignatureCatalogStep = (catalog: Catalog, digest: string, identities: readonly VerifiedIdentity[]) => CatalogAnswer;

/** The config check the config rules run (the pure model's `validateConfig`, loaded on demand: ADR 0186). */
export type ConfigCheck = (schema: JsonValue, config: JsonValue | undefined, path: string) => FieldError[];

/** The config rules: the problems of `config` under `manifest`'s config schema, at `spec.config…`. */
export type ConfigStep = (manifest: Manifest, config: JsonValue | undefined, check: ConfigCheck) => FieldError[];

/** The grant rules: the Secrets `self`'s grant maps that are another installed instance's. */
export type GrantStep = (self: InstanceSecrets, others: readonly InstanceSecrets[]) => FieldError[];

/** The families of verdicts whose rules are versioned. */
export type VerdictFamily = "signature" | "config" | "grant";

function catalogAnswerV1(catalog: Catalog, digest: string, identities: readonly VerifiedIdentity[]): CatalogAnswer {
  const signedBy = (e: CatalogEntry): boolean => identities.some((id) => identityMatches(e.publisher.identity, id));
  const publishers = [...new Set(catalog.entries.filter(signedBy).map((e) => e.publisher.name))].sort();
  return { publishers, entry: catalog.entriesForDigest(digest).find(signedBy) ?? null };
}

function configV1(manifest: Manifest, config: JsonValue | undefined, check: ConfigCheck): FieldError[] {
  return manifest.configSchema === undefined ? [] : check(manifest.configSchema, config, "spec.config");
}

/** Every released version of the signature rules' catalog step; today's is the newest. */
export const SIGNATURE_RULES: RulesRegistry<SignatureCatalogStep> = rulesRegistry<SignatureCatalogStep>("signature", [
  { version: 1, change: "the first released rules: an image is verified when a catalog entry pins its digest and that entry's publisher signed it", decide: catalogAnswerV1 },
]);

/** Every released version of the config rules; today's is the newest. */
export const CONFIG_RULES: RulesRegistry<ConfigStep> = rulesRegistry<ConfigStep>("config", [
  { version: 1, change: "the first released rules: a config must match its manifest's config schema (an absent config is checked as {})", decide: configV1 },
]);

/** Every released version of the grant rules; today's is the newest. */
export const GRANT_RULES: RulesRegistry<GrantStep> = rulesRegistry<GrantStep>("grant", [
  { version: 1, change: "the first released rules: a grant may not map another instance's default Secret, nor one an earlier instance's grant maps", decide: foreignSecretProblems },
]);
