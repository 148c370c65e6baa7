/**
 * The rollout decider's state of one plugin as the log stands before a seq, from a handful of
 * indexed lookups (the reconciler and `why` use it), and Previous (seed 000). The decision check
 * gathers the same state by folding the whole log (`evolveFacts`); a property test pins that the
 * two ways give the decider the same answer on random logs.
 */
import { pluginStream, verdictKey } from "../events/index.js";
import type { EventLookups, EventOf, EventLog, RecordedVersion, VerdictOutcome } from "../events/index.js";
import { deployedBy, emptyFacts, observedVersion, recordedManifestDigest, specManifestDigest } from "./decide-rollout.js";
import type { DeciderState } from "./decide-rollout.js";
import { imageDigest, specImage } from "./images.js";
import { verdictFor } from "./lookup.js";

/** The events the decider's state of a plugin came from, before a seq. */
export interface DeciderSources {
  readonly plugin: EventOf<"plugin.observed" | "plugin.deleted"> | null;
  readonly grant: EventOf<"grant.observed" | "grant.deleted"> | null;
  /** The operator's verdict on that grant, when it is about it (docs/adr/0161). */
  readonly grantVerdict?: EventOf<"grant.verdict"> | null;
  readonly config: EventOf<"config.verdict"> | null;
  readonly currentVerdict: EventOf<"signature.verdict"> | null;
  readonly previousDecision: EventOf<"rollout.decided"> | null;
  /** What the cluster said runs; only looked up (and only counts) while no decision was recorded. */
  readonly previousObserved: EventOf<"previous.observed"> | null;
  readonly previousVerdict: EventOf<"signature.verdict"> | null;
}

/** The version that runs before the next decision of a plugin, and the event that says so. */
export interface PreviousVersion {
  /** Null when the latest decision runs nothing. */
  readonly version: RecordedVersion | null;
  /** The latest `rollout.decided`, or, when there is none, the latest `previous.observed`. */
  readonly source: EventOf<"rollout.decided" | "previous.observed">;
}

/**
 * Previous (seed 000) as the log stands before `beforeSeq` (default: now): what the latest
 * `rollout.decided` ran, or, while the log holds no decision for the plugin, the version the
 * latest `previous.observed` names (the cluster's `status.deployed`). Null when neither exists.
 * The reconciler checks this version's signature again before deciding; the status reports it.
 */
export async function previousVersion(store: EventLog, name: string, beforeSeq = Number.MAX_SAFE_INTEGER): Promise<PreviousVersion | null> {
  return previousFrom(store.lookups, pluginStream(name), beforeSeq);
}

async function previousFrom(q: EventLookups, stream: string, beforeSeq: number): Promise<PreviousVersion | null> {
  const decision = await q.lastOf(stream, ["rollout.decided"], beforeSeq);
  if (decision !== null) return { version: deployedBy(decision.data.plan), source: decision };
  const observed = await q.lastOf(stream, ["previous.observed"], beforeSeq);
  return observed === null ? null : { version: observedVersion(observed.data), source: observed };
}

/**
 * The module of a recorded version when it is a WebAssembly plugin (from the verdict that stands
 * for its image and manifest), or null for a container image or a version never checked.
 */
export async function moduleOfVersion(store: EventLog, v: RecordedVersion): Promise<string | null> {
  const digest = imageDigest(v.image);
  if (digest === null) return null;
  return (await verdictFor(store.lookups, digest, recordedManifestDigest(v), Number.MAX_SAFE_INTEGER))?.data.module ?? null;
}

/**
 * The grant a plugin had just before `beforeSeq`: the spec of its latest `grant.observed`, or null
 * when it had none (never set, or deleted). A grant edit is worded as what it changed against it.
 */
export async function grantBefore(store: EventLog, name: string, beforeSeq: number): Promise<EventOf<"grant.observed">["data"]["spec"] | null> {
  const g = await store.lookups.lastOf(pluginStream(name), ["grant.observed", "grant.deleted"], beforeSeq);
  return g?.type === "grant.observed" ? g.data.spec : null;
}

/**
 * The decider's state of a plugin as the log stands before `beforeSeq` (default: now), from a
 * handful of indexed lookups; the reconciler passes it to `decideRollout`.
 */
export async function loadDeciderState(store: EventLog, name: string, beforeSeq = Number.MAX_SAFE_INTEGER): Promise<{ state: DeciderState; sources: DeciderSources }> {
  const q = store.lookups;
  const stream = pluginStream(name);
  const plugin = await q.lastOf(stream, ["plugin.observed", "plugin.deleted"], beforeSeq);
  const grant = await q.lastOf(stream, ["grant.observed", "grant.deleted"], beforeSeq);
  const verdict = grant?.type === "grant.observed" ? await q.lastOf(stream, ["grant.verdict"], beforeSeq) : null;
  const grantVerdict = verdict?.type === "grant.verdict" && verdict.data.grant === grant?.seq ? verdict : null;
  const previous = await previousFrom(q, stream, beforeSeq);
  const previousDecision = previous?.source.type === "rollout.decided" ? previous.source : null;
  const previousObserved = previous?.source.type === "previous.observed" ? previous.source : null;
  const spec = plugin?.type === "plugin.observed" ? plugin.data.spec : null;
  const image = specImage(spec);
  const config = image === null ? null : await q.configVerdict(stream, image, beforeSeq);
  const deployed = previous?.version ?? null;
  const verdicts = new Map<string, VerdictOutcome>();
  const curDigest = imageDigest(image);
  const currentVerdict = curDigest === null ? null : await verdictFor(q, curDigest, specManifestDigest(name, spec), beforeSeq);
  if (currentVerdict !== null) verdicts.set(verdictKey(currentVerdict.data.digest, currentVerdict.data.manifest), currentVerdict.data.outcome);
  const prevDigest = imageDigest(deployed?.image);
  const previousVerdict = prevDigest === null ? null : await verdictFor(q, prevDigest, recordedManifestDigest(deployed), beforeSeq);
  if (previousVerdict !== null) verdicts.set(verdictKey(previousVerdict.data.digest, previousVerdict.data.manifest), previousVerdict.data.outcome);
  const configOk = new Map<string, boolean>();
  if (config !== null) configOk.set(config.data.image, config.data.ok);
  const state: DeciderState = {
    ...emptyFacts(name),
    spec,
    grant: grant?.type === "grant.observed" ? grant.data.spec : null,
    ...(grant?.type === "grant.observed" ? { grantSeq: grant.seq, grantRefused: grantVerdict !== null && !grantVerdict.data.ok } : {}),
    configOk,
    deployed,
    decided: previousDecision !== null,
    verdicts,
  };
  return { state, sources: { plugin, grant, grantVerdict, config, currentVerdict, previousDecision, previousObserved, previousVerdict } };
}
