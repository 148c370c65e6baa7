/**
 * The rollout decider: a pure function of what the log says before the decision. The reconciler
 * appends `rollout.decided` with exactly {@link decideRollout}'s output, and the decision check
 * re-runs it over the log, so the two can never disagree about how inputs are gathered.
 *
 * Inputs, from recorded facts only (DESIGN rule 2):
 * - current: the latest observed spec, when it parses as a valid plugin; else null;
 * - currentDeployable: current is not null AND the latest `config.verdict` for its image is ok AND
 *   the latest `signature.verdict` for its digest is `verified` or `unverified`. A missing verdict
 *   is a refusal (fail closed): the reconciler records a config verdict even for a plugin
 *   without a config schema;
 * - previous: what the latest `rollout.decided` ran or, before any decision, the version the
 *   latest `previous.observed` names (the cluster's `status.deployed`, seed 000); only while its
 *   image's latest verdict still passes, and never for a deleted Plugin;
 * - grant: the latest observed grant when it parses and the operator did not refuse it (it maps
 *   another instance's Secret); else the empty grant.
 */
import { manifestDigest, verdictKey } from "../events/index.js";
import type { KnownEvent, PreviousObserved, RecordedVersion, RolloutDecided, VerdictOutcome } from "../events/index.js";
import { EMPTY_GRANT_SPEC, parseGrant, parseImageRef, parseManifest, parsePlugin, planRollout, rolloutPlanToJSON, rulesRegistry } from "../plugins/index.js";
import type { GrantSpec, JsonValue, Manifest, PluginVersion, RolloutInput, RolloutPlanJSON, RulesRegistry } from "../plugins/index.js";

/** What the log says about one plugin, as far as the decider cares. */
export interface PluginFacts {
  readonly name: string;
  /** The latest observed spec; null when never observed or deleted. */
  readonly spec: JsonValue | null;
  /** The latest observed grant spec; null when none or deleted. */
  readonly grant: JsonValue | null;
  /**
   * Whether the operator refused that grant (its latest `grant.verdict` is not ok: it maps another
   * instance's Secret, docs/adr/0161). A refused grant approves nothing. Absent reads as false.
   */
  readonly grantRefused?: boolean;
  /** The seq of the latest `grant.observed`, which a `grant.verdict` names; absent when none. */
  readonly grantSeq?: number;
  /** The latest config verdict per image, for this plugin. */
  readonly configOk: ReadonlyMap<string, boolean>;
  /**
   * The version that runs before the next decision: what the latest decision ran (null when it
   * ran nothing), or, while no decision was recorded, what the latest `previous.observed` names.
   */
  readonly deployed: RecordedVersion | null;
  /** Whether a `rollout.decided` was folded: from then on `previous.observed` no longer counts. */
  readonly decided: boolean;
}

/**
 * The decider's whole input: one plugin's facts and the signature verdicts, keyed by
 * `verdictKey(digest, manifest)` (a verdict checked against no manifest is keyed by the digest).
 */
export interface DeciderState extends PluginFacts {
  readonly verdicts: ReadonlyMap<string, VerdictOutcome>;
}

/**
 * The verdict that stands for an image checked against a manifest: the one checked against
 * exactly that manifest, else one checked against none (recorded before verdicts named theirs).
 */
export function verdictOf(verdicts: ReadonlyMap<string, VerdictOutcome>, digest: string, manifest: Manifest): VerdictOutcome | undefined {
  return verdicts.get(verdictKey(digest, manifestDigest(manifest))) ?? verdicts.get(digest);
}

/** The manifest digest of an observed spec's manifest, when the spec parses. */
export function specManifestDigest(name: string, spec: JsonValue | null): string | null {
  if (spec === null) return null;
  const p = parsePlugin({ name, spec });
  return p.ok ? manifestDigest(p.value.spec.manifest) : null;
}

/** The manifest digest of a recorded version's manifest, when it parses. */
export function recordedManifestDigest(v: RecordedVersion | null): string | null {
  if (v === null) return null;
  const m = parseManifest(v.manifest);
  return m.ok ? manifestDigest(m.value) : null;
}

/** The recorded form of the inputs (as in `rollout.decided`). */
export type RecordedInputs = RolloutDecided["inputs"];

/** Facts of a plugin nothing is known about. */
export function emptyFacts(name: string): PluginFacts {
  return { name, spec: null, grant: null, configOk: new Map(), deployed: null, decided: false };
}

/** Folds one event of a plugin's stream into its facts (pure). */
export function evolveFacts(f: PluginFacts | undefined, e: KnownEvent): PluginFacts | undefined {
  if (!("name" in e.data)) return f;
  const base = f ?? emptyFacts(e.data.name);
  switch (e.type) {
    case "plugin.observed": return { ...base, spec: e.data.spec };
    case "plugin.deleted": return { ...base, spec: null };
    case "grant.observed": return { ...base, grant: e.data.spec, grantSeq: e.seq, grantRefused: false };
    case "grant.deleted": return { ...base, grant: null, grantRefused: false };
    case "grant.verdict": return e.data.grant === base.grantSeq ? { ...base, grantRefused: !e.data.ok } : base;
    case "config.verdict": {
      const configOk = new Map(base.configOk);
      configOk.set(e.data.image, e.data.ok);
      return { ...base, configOk };
    }
    case "rollout.decided": return { ...base, deployed: deployedBy(e.data.plan), decided: true };
    // What the cluster said runs counts only until the log holds a decision of its own.
    case "previous.observed": return base.decided ? base : { ...base, deployed: observedVersion(e.data) };
    default: return f;
  }
}

/** The version a recorded plan runs, as recorded; null when it runs nothing. */
export function deployedBy(plan: RolloutPlanJSON): RecordedVersion | null {
  if (plan.run === null) return null;
  // The plan's manifest is rolloutPlanToJSON's plain JSON; the recorded form holds it as a JSON value.
  const out: RecordedVersion = { image: plan.run.image, manifest: plan.run.manifest as unknown as JsonValue };
  if (plan.run.config !== undefined) out.config = plan.run.config;
  return out;
}

/** The version a `previous.observed` names, as recorded. */
export function observedVersion(o: PreviousObserved): RecordedVersion {
  const out: RecordedVersion = { image: o.deployed.image, manifest: o.deployed.manifest };
  if (o.deployed.config !== undefined) out.config = o.deployed.config;
  return out;
}

function passes(verdicts: ReadonlyMap<string, VerdictOutcome>, v: PluginVersion): boolean {
  const outcome = verdictOf(verdicts, v.image.digest, v.manifest);
  return outcome === "verified" || outcome === "unverified";
}

function toVersion(v: RecordedVersion): PluginVersion | null {
  const image = parseImageRef(v.image);
  const manifest = parseManifest(v.manifest);
  if (!image.ok || !manifest.ok) return null;
  return v.config === undefined ? { image: image.value, manifest: manifest.value } : { image: image.value, manifest: manifest.value, config: v.config };
}

function record(v: PluginVersion): RecordedVersion {
  const out: RecordedVersion = { image: v.image.toString(), manifest: v.manifest as unknown as JsonValue };
  if (v.config !== undefined) out.config = v.config;
  return out;
}

/** The planner's input and its recorded form, gathered from the state (pure). */
export function rolloutInputsFrom(state: DeciderState): { input: RolloutInput; recorded: RecordedInputs } {
  let current: PluginVersion | null = null;
  if (state.spec !== null) {
    const p = parsePlugin({ name: state.name, spec: state.spec });
    if (p.ok) current = toVersion({ image: p.value.spec.image, manifest: p.value.spec.manifest as unknown as JsonValue, ...(p.value.spec.config === undefined ? {} : { config: p.value.spec.config }) });
  }
  const currentDeployable = current !== null
    && state.configOk.get(current.image.toString()) === true
    && passes(state.verdicts, current);
  // A deleted Plugin runs nothing: uninstalling stops the previous version too (an invalid spec, by
  // contrast, keeps the previous version running).
  const deployed = state.deployed === null ? null : toVersion(state.deployed);
  const previous = state.spec !== null && deployed !== null && passes(state.verdicts, deployed) ? deployed : null;
  let grant: GrantSpec = EMPTY_GRANT_SPEC;
  // A grant the operator refused approves nothing (docs/adr/0161).
  if (state.grant !== null && state.grantRefused !== true) {
    const g = parseGrant({ name: state.name, spec: state.grant });
    if (g.ok) grant = g.value.spec;
  }
  return {
    input: { current, currentDeployable, previous, grant },
    recorded: {
      current: current === null ? null : record(current),
      currentDeployable,
      previous: previous === null ? null : record(previous),
      grant: grant as unknown as JsonValue,
    },
  };
}

/** A rollout decision without the number of the rules that made it: what a version of the rules answers. */
export type RolloutDecision = Omit<RolloutDecided, "rules">;

/** A version of the rollout rules: the decision for the decider's state (pure). */
export type RolloutDecider = (state: DeciderState) => RolloutDecision;

/**
 * The first released rollout rules (rules 1): the inputs gathered as this file's header says, the
 * plan by the pure model's `planRollout`. Kept as it is once released; a change adds a version.
 */
export function decideRolloutV1(state: DeciderState): RolloutDecision {
  const { input, recorded } = rolloutInputsFrom(state);
  const plan = rolloutPlanToJSON(planRollout(input));
  // Through JSON so the value equals what the store will hand back (no ImageRef, no undefined).
  return JSON.parse(JSON.stringify({ name: state.name, inputs: recorded, plan })) as RolloutDecision;
}

/** Every released version of the rollout rules, oldest first; today's is the newest (ADR 0150). */
export const ROLLOUT_RULES: RulesRegistry<RolloutDecider> = rulesRegistry<RolloutDecider>("rollout", [
  { version: 1, change: "the first released rules: the inputs from the recorded facts, the plan by planRollout", decide: decideRolloutV1 },
]);

/**
 * The decision for the state under today's rules (or the newest of `rules`): the data of the
 * `rollout.decided` event to append, naming the rules that made it (pure).
 */
export function decideRollout(state: DeciderState, rules: RulesRegistry<RolloutDecider> = ROLLOUT_RULES): RolloutDecided {
  return { ...rules.today.decide(state), rules: rules.today.version };
}
