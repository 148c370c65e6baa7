/**
 * The reconciler's steps as pure functions of what the log holds: each says which event (if any)
 * a pass appends at that step. The loop (`reconciler.ts`) gathers their inputs, asks the image
 * verifier and the target, and appends what they answer; the steps themselves do no I/O, so they
 * are tested as deciders: given these facts, this event (or none).
 */
import { canonicalize } from "json-canonicalize";
import type { ConfigVerdict, EventOf, GrantVerdict, RolloutDecided, WorkloadApplied, WorkloadDesired } from "../events/index.js";
import { buildHostedObjects, buildObjects, compile, CONFIG_RULES, effective, formatErrors, formatHostPort, GRANT_RULES, hostedObjectsToJSON, objectsToJSON, parseGrant, parseImageRef, parseManifest, validateConfig } from "../plugins/index.js";
import type { FieldError, InstanceSecrets, JsonValue, Manifest, Topology } from "../plugins/index.js";
import { decideRollout, deployedBy } from "../projections/index.js";
import type { DeciderSources, DeciderState } from "../projections/index.js";

/** Step 2: the config verdict for a spec, or null when the latest one for its image says the same. */
export function nextConfigVerdict(
  name: string,
  spec: { readonly image: string; readonly manifest: Manifest; readonly config?: JsonValue },
  last: EventOf<"config.verdict"> | null,
): ConfigVerdict | null {
  // Today's config rules decide, and the verdict names them (docs/adr/0191).
  const rules = CONFIG_RULES.today;
  const errors = rules.decide(spec.manifest, spec.config, validateConfig);
  const data: ConfigVerdict = { name, image: spec.image, rules: rules.version, ok: errors.length === 0, errors: errors.map((e) => ({ code: e.code, path: e.path, message: e.message })) };
  return last !== null && sameVerdict(last.data, data) ? null : data;
}

/** Whether two verdicts say the same, whatever rules made them: an upgrade alone records nothing. */
function sameVerdict<V extends { readonly rules: number }>(a: V, b: V): boolean {
  return canonicalize({ ...a, rules: 0 }) === canonicalize({ ...b, rules: 0 });
}

/** Today's grant rules' answer: the Secrets `self`'s grant maps that are another instance's (docs/adr/0161, 0191). */
export function grantProblems(self: InstanceSecrets, others: readonly InstanceSecrets[]): FieldError[] {
  return GRANT_RULES.today.decide(self, others);
}

/**
 * Step 2b: the verdict on a plugin's grant (docs/adr/0161), or null when the latest one for the
 * same grant event says the same (or there is no grant). `problems` are what today's grant rules
 * found ({@link grantProblems}), and `rules` their version; a grant that does not parse is left to
 * the decider (it approves nothing already).
 */
export function nextGrantVerdict(name: string, grantSeq: number | null, problems: readonly FieldError[], last: EventOf<"grant.verdict"> | null, rules: number = GRANT_RULES.today.version): GrantVerdict | null {
  if (grantSeq === null) return null;
  const data: GrantVerdict = { name, grant: grantSeq, rules, ok: problems.length === 0, errors: problems.map((e) => ({ code: e.code, path: e.path, message: e.message })) };
  // Nothing to say about a grant that mounts only its own Secrets and was never refused.
  if (last === null || last.data.grant !== grantSeq) return data.ok ? null : data;
  return sameVerdict(last.data, data) ? null : data;
}

/** A decision to append, and the event it names as its cause. */
export interface DecisionToAppend {
  readonly data: RolloutDecided;
  readonly causedBy: number | null;
}

/**
 * Step 3: the rollout decision the log's state calls for, or null. Nothing is decided for a plugin
 * never observed, and a decision is appended only when its plan changes: re-deciding after our own
 * decision sees it as the previous version (new inputs, same plan), and that is not a new decision.
 */
export function nextDecision(state: DeciderState, sources: DeciderSources, last: EventOf<"rollout.decided"> | null): DecisionToAppend | null {
  if (state.spec === null && last === null) return null;
  const decided = decideRollout(state);
  if (last !== null && canonicalize(last.data.plan) === canonicalize(decided.plan)) return null;
  return { data: decided, causedBy: newestCause(sources) };
}

/** The newest event among the decider's inputs: the cause a decision names. */
export function newestCause(s: DeciderSources): number | null {
  const seqs = [s.plugin, s.grant, s.grantVerdict ?? null, s.config, s.currentVerdict, s.previousVerdict].flatMap((e) => (e === null ? [] : [e.seq]));
  return seqs.length === 0 ? null : Math.max(...seqs);
}

/** Why a recorded decision's version cannot be compiled (the workload then runs nothing). */
export type DesiredProblem =
  | { readonly code: "version_unparseable" }
  | { readonly code: "compile_failed"; readonly problems: string };

/** Step 4's answer: the desired workload, and what went wrong when it had to run nothing instead. */
export interface Desired {
  readonly desired: WorkloadDesired;
  readonly problem: DesiredProblem | null;
}

/**
 * Step 4: the desired workload of what a recorded decision runs — a container's compiled objects,
 * or, when `module` names the version's WebAssembly module, the module the plugin host runs with
 * only its identity and its Service selecting the host (ADR 0080) — or a stopped one. Either way
 * the allow-list is the effective egress.
 */
export function desiredWorkload(name: string, decision: RolloutDecided, topology: Topology, module: string | null = null): Desired {
  const stopped: WorkloadDesired = { name, running: false, objects: [], allowList: [] };
  const run = deployedBy(decision.plan);
  if (run === null) return { desired: stopped, problem: null };
  const image = parseImageRef(run.image);
  const manifest = parseManifest(run.manifest);
  const grant = parseGrant({ name, spec: decision.inputs.grant });
  if (!image.ok || !manifest.ok || !grant.ok) return { desired: stopped, problem: { code: "version_unparseable" } };
  const perms = effective(manifest.value, grant.value.spec);
  if (!perms.ok) return { desired: stopped, problem: null };
  const workload = compile({ name, image: image.value, ...(run.config === undefined ? {} : { config: run.config }) }, perms.value, topology);
  if (!workload.ok) return { desired: stopped, problem: { code: "compile_failed", problems: formatErrors(workload.errors) } };
  const allowList = workload.value.allowList.map(formatHostPort);
  if (module !== null) {
    const objects = hostedObjectsToJSON(buildHostedObjects(workload.value)) as JsonValue[];
    return { desired: { name, running: true, image: image.value.toString(), runtime: "wasm", module, objects, allowList }, problem: null };
  }
  return {
    desired: {
      name,
      running: true,
      image: image.value.toString(),
      // The model's objects are plain JSON (apiVersion, kind, metadata, spec…).
      objects: objectsToJSON(buildObjects(workload.value)) as JsonValue[],
      allowList,
    },
    problem: null,
  };
}

/** Step 4, continued: whether `desired` differs from the latest `workload.desired` (then it is appended). */
export function desiredChanged(desired: WorkloadDesired, last: EventOf<"workload.desired"> | null): boolean {
  return last === null || canonicalize(last.data) !== canonicalize(desired);
}

/** Step 5: whether the latest desired workload still has to be applied through `target`. */
export function needsApply(desired: EventOf<"workload.desired">, applied: EventOf<"workload.applied"> | null, target: string): boolean {
  return !(applied !== null && applied.seq > desired.seq && applied.data.ok && applied.data.target === target);
}

/** Step 5's record: the result of applying through a target. */
export function appliedRecord(name: string, target: string, error: string | undefined): WorkloadApplied {
  return { name, target, ok: error === undefined, ...(error === undefined ? {} : { error }) };
}
