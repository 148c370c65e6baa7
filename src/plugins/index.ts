/**
 * The pure plugin model (seed 000, "How it works"): no I/O, no clock, no randomness. Inputs in,
 * values out; every problem is a {@link FieldError} with a stable code and a field path.
 *
 * Values that must be valid can only be obtained through the function that checks them:
 * {@link ImageRef} from {@link parseImageRef}, {@link EffectivePermissions} from {@link effective},
 * {@link Workload} from {@link compile}, {@link EgressAllowList} from the allow-list codec.
 */

/** Error values: codes, field paths, results. */
export { ErrorCode, fieldError, ok, fail, join, formatErrors } from "./errors.js";
export type { FieldError, Result } from "./errors.js";

/** Plain shapes of Plugin, PluginGrant and Manifest, before validation. */
export type { JsonValue, Capability, EgressHost, SecretMount, SecretRole, Manifest, PluginSpec, Plugin, GrantSpec, Grant } from "./types.js";
export { CAPABILITIES, EMPTY_GRANT_SPEC } from "./types.js";

/**
 * Every size limit of the model in one table (the CRDs' list and string caps among them), and the
 * bounded measure that checks a JSON-like value against limits before anything parses it.
 */
export { CAPS, SCHEMA_LIMITS, CONFIG_LIMITS, jsonLimitProblem } from "./caps.js";
export type { Caps, JsonLimits } from "./caps.js";

/** Names that are the interface: namespace, audiences, token paths, label, ConfigMaps, port. */
export * from "./constants.js";

/** Validation of names, hosts, mount paths, configs; strict parsing of Plugin, PluginGrant and Manifest. */
export { validatePluginName, validateSecretName, validateDataTier, isValidPluginName } from "./names.js";
export { parseEgressHost, formatHostPort, egressKey, compareEgressHosts, isCanonicalHostname, DEFAULT_EGRESS_PORT } from "./egress-host.js";
export { parseManifest, parsePlugin, parsePluginUnchecked, parseGrant, validateMountPath, mountPathsOverlap, defaultSecretName } from "./parse.js";
export { validateConfigSchema, validateConfig } from "./config-schema.js";
/**
 * The config-schema checks, loaded on demand (ADR 0186): the parsers above check a manifest's schema
 * through them; a reader loads them, or remembers a schema the log shows was checked.
 */
export { loadSchemaChecks, rememberCheckedSchema, resetSchemaChecksForTests, schemaCheckReady, schemaChecksLoaded, SchemaChecksNotLoaded } from "./schema-check.js";
export type { SchemaChecks } from "./schema-check.js";
/** The RE2 engine, provided by the schema checks, loaded by `import()` or by a loader the process registers (docs/adr/0188). */
export { loadPatternEngine, patternEngineLoaded, PatternEngineNotLoaded, providePatternEngineLoader, resetPatternEngineForTests } from "./re2-engine.js";
export type { PatternEngine } from "./re2-engine.js";
export { isJsonValue } from "./json.js";

/** A connector's sync schedule (`Plugin.spec.sync`): interval or cron, jitter, retry backoff (docs/adr/0178). */
export {
  parseSyncSchedule, parseDuration, nextSlot, dueAt, slotJitterMs, backoffMs, DEFAULT_SYNC_SCHEDULE, DEFAULT_SYNC_BACKOFF,
  MIN_SYNC_INTERVAL_MS, MAX_SYNC_INTERVAL_MS, MAX_SYNC_JITTER_MS,
} from "./schedule.js";
export type { SyncSchedule, SyncScheduleText, Backoff } from "./schedule.js";

/** Image references pinned by digest; a parsed one is always valid. */
export { ImageRef, parseImageRef } from "./image-ref.js";

/** Effective permissions (request ∩ grant) and what needs approval. */
export { EffectivePermissions, effective, needsApproval, isEmptyPending, EMPTY_PENDING, grantedSecretNames } from "./effective.js";
export type { Pending, GrantedSecret } from "./effective.js";

/** The compiled workload and its Kubernetes objects. */
export { Workload, compile, validateTopology, PLUGIN_LABEL } from "./compile.js";
export type { Topology, CompileInput, JwksMount } from "./compile.js";
export { SA_JWKS_CONFIGMAP, SA_JWKS_DIR, SA_JWKS_ITEMS, coreSubjectProblems } from "./jwks.js";
export { buildObjects, listObjects, objectToJSON, objectsToJSON, toClientNodeModel } from "./objects.js";
export type { PluginObjects, PluginObject } from "./objects.js";
/** The objects of a WebAssembly plugin the plugin host runs: its ServiceAccount and a Service selecting the host (ADR 0080). */
export { buildHostedObjects, hostedObjectsToJSON } from "./objects.js";
export type { HostedPluginObjects } from "./objects.js";
/** The `openfief-plugin-host` ConfigMap's codec: what the operator publishes and the plugin host follows (ADR 0080). */
export {
  PLUGIN_HOST_CONFIGMAP, PLUGIN_HOST_NAME, PLUGIN_HOST_POD_LABELS, MAX_HOSTED_PLUGINS, decodeHostedPlugins, encodeHostedPlugins, hostOrigin, originHost, originHostPort,
  PLUGIN_HOST_TOKEN_ROLE, pluginHostTokenRole, PLUGIN_HOST_SECRET_ROLE, pluginHostSecretRole,
} from "./plugin-host.js";
export type { DecodedHostedPlugins, HostedPlugin, HostedPluginInput, HostedSecret, TokenRole } from "./plugin-host.js";

/** Which version runs, and what is pending approval. */
export { canonicalManifest, manifestToJSON, planRollout, RolloutReason, rolloutPlanToJSON, sameRolloutPlan } from "./rollout.js";
export type { ManifestJSON, PluginVersion, RolloutInput, RolloutOutcome, RolloutRun, RolloutPlan, RolloutPlanJSON } from "./rollout.js";

/** Signers, the catalog, owner signers, the trust policy and the signed manifest label. */
export { openFiefCI, identityMatches, isKeyIdentity, compilePattern, GITHUB_ACTIONS_ISSUER, OPENFIEF_CI_SUBJECT } from "./signers.js";
export type { SignerKind, SignerIdentity, KeyIdentity, Signer, VerifiedIdentity } from "./signers.js";
/** Strict JSON: duplicate keys, trailing data and inexact numbers refused. */
export { parseStrictJson } from "./strict-json.js";
export { Catalog, catalogEntriesJSON, emptyCatalog, parseCatalog, parseOwnerSigners } from "./catalog.js";
export type { CatalogEntry, CatalogEntryJSON, CatalogLookup, CatalogStanding, Publisher } from "./catalog.js";
export { TrustPolicy, newTrustPolicy } from "./trust.js";
export type { SignedImage, TrustDecision } from "./trust.js";
export { parseManifestLabel } from "./manifest-label.js";
export { manifestEqual, jsonEqual } from "./manifest-equal.js";

/** Egress allow-lists: encoding, strict decoding, and the proxy's decision. */
export { EgressAllowList, allowListFromHosts, encodeAllowLists, decodeAllowLists, decideEgress } from "./allowlist.js";
export type { AllowLists, EgressDecision, EgressReason } from "./allowlist.js";

/** Rules versions: each released version of a decider kept as a pure function, today's the newest (ADR 0150). */
export { rulesRegistry, withVersion, FIRST_RULES } from "./rules.js";
export type { RulesRegistry, RulesVersion } from "./rules.js";
export { EGRESS_RULES } from "./egress-rules.js";
export type { EgressListStep } from "./egress-rules.js";
/** The verdicts' rules by version: signature (its catalog step), config, grant (docs/adr/0191). */
export { CONFIG_RULES, GRANT_RULES, SIGNATURE_RULES } from "./verdict-rules.js";
export type { CatalogAnswer, ConfigCheck, ConfigStep, GrantStep, SignatureCatalogStep, VerdictFamily } from "./verdict-rules.js";

/** ServiceAccount names of plugins, both ways. */
export { serviceAccountName, serviceAccountUsername, pluginForServiceAccount } from "./service-account.js";

/** PolicyRules of view plugins (seed 002): strict parsing with caps, Kubernetes' field matchers. */
export {
  parsePolicyRules, parsePolicyRule, sortRules, sameRules, normalizeRule, ruleKey, ruleToJSON, rulesToJSON,
  verbMatches, apiGroupMatches, resourceMatches, resourceNameMatches, nonResourceURLMatches, RBAC_LIMITS, WILDCARD,
} from "./rbac.js";
export type { PolicyRule, PolicyRuleJSON } from "./rbac.js";
/** The scope algebra: effective rules as the exact intersection, and the rules pending approval. */
export { intersectRules, intersectRule, uncoveredRules, ruleCovered, COVERAGE_BUDGET } from "./rbac-scope.js";
/** The UI bundle a view plugin ships, named by digest. */
export { parseUiBundle, DEFAULT_UI_ENTRY, MAX_UI_ENTRY } from "./ui-bundle.js";
export type { UiBundle } from "./ui-bundle.js";
/** The plugin ServiceAccount's ClusterRole and binding, `plugin-<name>-scope`. */
export { scopeObjects, scopeName, SCOPE_SUFFIX } from "./scope-objects.js";
/** One Secret per instance: the Secrets a grant maps that are another instance's (docs/adr/0161). */
export { foreignSecretProblems } from "./secret-claims.js";
export type { InstanceSecrets } from "./secret-claims.js";
