/**
 * Planning which version runs. Upgrades happen only when the owner edits (D-47); a version that
 * asks for more than its grant waits for approval while the version that ran keeps running,
 * limited to the CURRENT grant, so narrowing a grant takes effect at once even while an upgrade
 * waits. A first install that asks for more than its grant runs nothing.
 */
import { canonicalize } from "json-canonicalize";
import {
  EMPTY_PENDING,
  compareStrings,
  effective,
  isEmptyPending,
  needsApproval,
  sortedEgress,
  sortedSecrets,
  sortedUnique,
} from "./effective.js";
import type { EffectivePermissions, Pending } from "./effective.js";
import type { ImageRef } from "./image-ref.js";
import { rulesToJSON } from "./rbac.js";
import type { PolicyRuleJSON } from "./rbac.js";
import { wellFormedRolloutInput } from "./shapes.js";
import type { Capability, EgressHost, GrantSpec, JsonValue, Manifest, SecretMount } from "./types.js";
import type { UiBundle } from "./ui-bundle.js";

/** One version of a plugin: its image pinned by digest, the manifest it declares, its config. */
export interface PluginVersion {
  readonly image: ImageRef;
  readonly manifest: Manifest;
  readonly config?: JsonValue;
}

/** What the operator knows when it plans (seed: Current, CurrentDeployable, Previous, grant). */
export interface RolloutInput {
  /** The version the Plugin asks for; null when its spec is invalid. */
  readonly current: PluginVersion | null;
  /** Whether checks outside the model passed: valid spec, config matches schema, signature verified. */
  readonly currentDeployable: boolean;
  /** The version that runs now (status.deployed), only while its own image still passes the signature check. */
  readonly previous: PluginVersion | null;
  /** The plugin's grant now; {@link EMPTY_GRANT_SPEC} when there is no PluginGrant. */
  readonly grant: GrantSpec;
}

/** Which version runs. */
export type RolloutOutcome = "current" | "previous" | "none";

/**
 * Why the plan is what it is, as stable codes the shell turns into sentences. Listed in this order,
 * each at most once; a plan whose outcome is "current" has none.
 */
export const RolloutReason = {
  /** The Plugin's spec is invalid, so there is no current version to run. */
  NoCurrentVersion: "no_current_version",
  /** The current version failed a check outside the model (spec, config or signature). */
  CurrentNotDeployable: "current_not_deployable",
  /** The current version requests something its grant lacks; see `pending`. */
  ApprovalPending: "approval_pending",
  /** The grant approves none of the capabilities the current version requests. */
  NoCapabilityGranted: "no_capability_granted",
  /** Nothing ran before, so there is nothing to keep running. */
  NoPreviousVersion: "no_previous_version",
  /** The grant approves none of the capabilities the previous version requests. */
  PreviousNoCapabilityGranted: "previous_no_capability_granted",
} as const;
export type RolloutReason = (typeof RolloutReason)[keyof typeof RolloutReason];

const REASON_ORDER: readonly RolloutReason[] = Object.values(RolloutReason);

/** What runs, under which permissions. */
export interface RolloutRun {
  readonly version: PluginVersion;
  readonly permissions: EffectivePermissions;
}

/** The plan: outcome, what runs (null when nothing does), what awaits approval, and why. */
export interface RolloutPlan {
  readonly outcome: RolloutOutcome;
  readonly run: RolloutRun | null;
  /** Exactly what the current version requests beyond the grant; empty when there is no current version. */
  readonly pending: Pending;
  readonly reasons: readonly RolloutReason[];
}

function plan(outcome: RolloutOutcome, run: RolloutRun | null, pending: Pending, reasons: Set<RolloutReason>): RolloutPlan {
  return { outcome, run, pending, reasons: REASON_ORDER.filter((r) => reasons.has(r)) };
}

/**
 * Decides which version runs: the current one when it is deployable, nothing is pending and some
 * capability is granted; otherwise the previous one under the current grant, when there is one
 * and some of its capabilities are granted; otherwise none. Malformed parts of the input fail
 * closed (see `wellFormedRolloutInput`). Never throws.
 */
export function planRollout(input: RolloutInput): RolloutPlan {
  const { current, currentDeployable, previous, grant } = wellFormedRolloutInput(input);
  const reasons = new Set<RolloutReason>();
  const pending = current === null ? EMPTY_PENDING : needsApproval(current.manifest, grant);

  if (current === null) {
    reasons.add(RolloutReason.NoCurrentVersion);
  } else {
    if (!currentDeployable) reasons.add(RolloutReason.CurrentNotDeployable);
    if (!isEmptyPending(pending)) reasons.add(RolloutReason.ApprovalPending);
    const e = effective(current.manifest, grant);
    if (!e.ok) reasons.add(RolloutReason.NoCapabilityGranted);
    else if (reasons.size === 0) return plan("current", { version: current, permissions: e.value }, pending, reasons);
  }

  if (previous === null) {
    reasons.add(RolloutReason.NoPreviousVersion);
    return plan("none", null, pending, reasons);
  }
  const e = effective(previous.manifest, grant);
  if (!e.ok) {
    reasons.add(RolloutReason.PreviousNoCapabilityGranted);
    return plan("none", null, pending, reasons);
  }
  return plan("previous", { version: previous, permissions: e.value }, pending, reasons);
}

/** A manifest with every list sorted, as recorded in a plan. */
export interface ManifestJSON {
  capabilities: Capability[];
  egress: EgressHost[];
  secrets: SecretMount[];
  dataTiers: string[];
  configSchema?: JsonValue;
  rbac?: PolicyRuleJSON[];
  ui?: UiBundle;
}

/** The pure JSON form of a plan, for an event's payload. */
export interface RolloutPlanJSON {
  outcome: RolloutOutcome;
  run: {
    image: string;
    manifest: ManifestJSON;
    config?: JsonValue;
    permissions: { capabilities: Capability[]; egress: EgressHost[]; secrets: SecretMount[]; dataTiers: string[]; rbac?: PolicyRuleJSON[] };
  } | null;
  /** `rbac` only when some rule is pending, so plans of plugins without rules read as they always did. */
  pending: { capabilities: Capability[]; egress: EgressHost[]; secrets: string[]; dataTiers: string[]; rbac?: PolicyRuleJSON[] };
  reasons: RolloutReason[];
}

/** A manifest with every list sorted and deduplicated (the view fields only when present): equal for manifests that ask for the same. */
export function manifestToJSON(m: Manifest): ManifestJSON {
  const out: ManifestJSON = {
    capabilities: sortedUnique(m.capabilities),
    egress: sortedEgress(m.egress),
    secrets: sortedSecrets(m.secrets),
    dataTiers: sortedUnique(m.dataTiers),
  };
  if (m.configSchema !== undefined) out.configSchema = m.configSchema;
  if (m.rbac !== undefined && m.rbac.length > 0) out.rbac = rulesToJSON(m.rbac);
  if (m.ui !== undefined) out.ui = { bundle: m.ui.bundle, entry: m.ui.entry };
  return out;
}

/**
 * A plan as plain JSON: images as reference strings and every list sorted, so two plans that decide
 * the same thing give equal JSON whatever order their inputs' lists came in.
 */
export function rolloutPlanToJSON(p: RolloutPlan): RolloutPlanJSON {
  let run: RolloutPlanJSON["run"] = null;
  if (p.run !== null) {
    const v = p.run.version;
    run = { image: v.image.toString(), manifest: manifestToJSON(v.manifest), permissions: p.run.permissions.toJSON() };
    if (v.config !== undefined) run.config = v.config;
  }
  return {
    outcome: p.outcome,
    run,
    pending: {
      capabilities: sortedUnique(p.pending.capabilities),
      egress: sortedEgress(p.pending.egress),
      secrets: sortedUnique(p.pending.secrets),
      dataTiers: sortedUnique(p.pending.dataTiers),
      ...(p.pending.rbac !== undefined && p.pending.rbac.length > 0 ? { rbac: rulesToJSON(p.pending.rbac) } : {}),
    },
    reasons: [...p.reasons].sort((a, b) => REASON_ORDER.indexOf(a) - REASON_ORDER.indexOf(b) || compareStrings(a, b)),
  };
}

/** A manifest's canonical text (RFC 8785 over its sorted form): what a signature verdict names it by. */
export function canonicalManifest(m: Manifest): string {
  return canonicalize(manifestToJSON(m));
}

/** Whether two plans decide the same thing: their JSON forms are equal byte for byte once canonicalized (RFC 8785). */
export function sameRolloutPlan(a: RolloutPlan, b: RolloutPlan): boolean {
  return canonicalize(rolloutPlanToJSON(a)) === canonicalize(rolloutPlanToJSON(b));
}
