/**
 * Audit queries over the log: a plugin's timeline, `why` (the latest rollout decision, its inputs,
 * what fed it and the chain of causes), the decider's state of a plugin, and the projected state
 * as of a sequence number or a time. `why` and `loadDeciderState` use indexed lookups only, so
 * their cost does not grow with the log.
 */
import type { Statement } from "better-sqlite3";
import type { ConfigVerdict, PreviousObserved, RecordedVersion, RolloutDecided, SignatureVerdict, VerdictOutcome } from "../events/catalog.js";
import { EVENT_COLUMNS, toStoredEvent } from "../events/store.js";
import type { EventRow, EventStore } from "../events/store.js";
import { egressStream, pluginStream } from "../events/streams.js";
import type { StoredEvent } from "../events/types.js";
import { formatErrors } from "../plugins/errors.js";
import type { JsonValue } from "../plugins/types.js";
import { parsePlugin } from "../plugins/validate.js";
import { canonicalize } from "json-canonicalize";
import { decideRollout, deployedBy, emptyFacts, observedVersion } from "./decide-rollout.js";
import { imageDigest, specImage } from "./images.js";
import type { DeciderState, RecordedInputs } from "./decide-rollout.js";
import { viewPlan } from "./plan-view.js";
import type { PlanView } from "./plan-view.js";
import type { Projection } from "./projection.js";
import { PROJECTIONS } from "./projections.js";

/** A plugin's events in seq order: its own stream and, when asked, its egress decisions. */
export function timeline(store: EventStore, name: string, opts: { includeEgress?: boolean; afterSeq?: number; limit?: number } = {}): StoredEvent[] {
  const own = store.read({ stream: pluginStream(name), ...pick(opts) });
  if (opts.includeEgress !== true) return own;
  const egress = store.read({ stream: egressStream(name), ...pick(opts) });
  const all = [...own, ...egress].sort((a, b) => a.seq - b.seq);
  return opts.limit === undefined ? all : all.slice(0, opts.limit);
}

function pick(o: { afterSeq?: number; limit?: number }): { afterSeq?: number; limit?: number } {
  const out: { afterSeq?: number; limit?: number } = {};
  if (o.afterSeq !== undefined) out.afterSeq = o.afterSeq;
  if (o.limit !== undefined) out.limit = o.limit;
  return out;
}

class Lookup {
  readonly #cache = new Map<string, Statement>();
  constructor(private readonly store: EventStore) {}

  #one(sql: string, ...args: (string | number)[]): StoredEvent | null {
    let stmt = this.#cache.get(sql);
    if (stmt === undefined) { stmt = this.store.database.prepare(sql); this.#cache.set(sql, stmt); }
    const row = stmt.get(...args) as EventRow | undefined;
    return row === undefined ? null : toStoredEvent(this.store.registry, row);
  }

  /** The latest event of any of `types` in `stream` before `beforeSeq`. */
  lastOf(stream: string, types: readonly string[], beforeSeq: number): StoredEvent | null {
    let best: StoredEvent | null = null;
    for (const t of types) {
      const e = this.#one(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = ? AND seq < ? ORDER BY version DESC LIMIT 1`, stream, t, beforeSeq);
      if (e !== null && (best === null || e.seq > best.seq)) best = e;
    }
    return best;
  }

  /** The latest config verdict of a plugin for an image, before `beforeSeq`. */
  configFor(stream: string, image: string, beforeSeq: number): StoredEvent<ConfigVerdict> | null {
    return this.#one(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = 'config.verdict' AND seq < ? AND json_extract(data, '$.image') = ? ORDER BY version DESC LIMIT 1`,
      stream, beforeSeq, image,
    ) as StoredEvent<ConfigVerdict> | null;
  }

  /** The latest signature verdict for a digest, before `beforeSeq` (partial index on the digest). */
  verdictFor(digest: string, beforeSeq: number): StoredEvent<SignatureVerdict> | null {
    return this.#one(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE type = 'signature.verdict' AND json_extract(data, '$.digest') = ? AND seq < ? ORDER BY seq DESC LIMIT 1`,
      digest, beforeSeq,
    ) as StoredEvent<SignatureVerdict> | null;
  }

  get(seq: number): StoredEvent | null {
    return this.store.get(seq);
  }
}

/** The events the decider's state of a plugin came from, before a seq. */
export interface DeciderSources {
  readonly plugin: StoredEvent | null;
  readonly grant: StoredEvent | null;
  readonly config: StoredEvent<ConfigVerdict> | null;
  readonly currentVerdict: StoredEvent<SignatureVerdict> | null;
  readonly previousDecision: StoredEvent<RolloutDecided> | null;
  /** What the cluster said runs; only looked up (and only counts) while no decision was recorded. */
  readonly previousObserved: StoredEvent<PreviousObserved> | null;
  readonly previousVerdict: StoredEvent<SignatureVerdict> | null;
}

/** The version that runs before the next decision of a plugin, and the event that says so. */
export interface PreviousVersion {
  /** Null when the latest decision runs nothing. */
  readonly version: RecordedVersion | null;
  /** The latest `rollout.decided`, or, when there is none, the latest `previous.observed`. */
  readonly source: StoredEvent<RolloutDecided> | StoredEvent<PreviousObserved>;
}

/**
 * Previous (seed 000) as the log stands before `beforeSeq` (default: now): what the latest
 * `rollout.decided` ran, or, while the log holds no decision for the plugin, the version the
 * latest `previous.observed` names (the cluster's `status.deployed`). Null when neither exists.
 * The reconciler checks this version's signature again before deciding; the status reports it.
 */
export function previousVersion(store: EventStore, name: string, beforeSeq = Number.MAX_SAFE_INTEGER): PreviousVersion | null {
  return previousFrom(new Lookup(store), pluginStream(name), beforeSeq);
}

function previousFrom(q: Lookup, stream: string, beforeSeq: number): PreviousVersion | null {
  const decision = q.lastOf(stream, ["rollout.decided"], beforeSeq) as StoredEvent<RolloutDecided> | null;
  if (decision !== null) return { version: deployedBy(decision.data.plan), source: decision };
  const observed = q.lastOf(stream, ["previous.observed"], beforeSeq) as StoredEvent<PreviousObserved> | null;
  return observed === null ? null : { version: observedVersion(observed.data), source: observed };
}

/**
 * The decider's state of a plugin as the log stands before `beforeSeq` (default: now), from a
 * handful of indexed lookups; the reconciler passes it to `decideRollout`.
 */
export function loadDeciderState(store: EventStore, name: string, beforeSeq = Number.MAX_SAFE_INTEGER): { state: DeciderState; sources: DeciderSources } {
  const q = new Lookup(store);
  const stream = pluginStream(name);
  const plugin = q.lastOf(stream, ["plugin.observed", "plugin.deleted"], beforeSeq);
  const grant = q.lastOf(stream, ["grant.observed", "grant.deleted"], beforeSeq);
  const previous = previousFrom(q, stream, beforeSeq);
  const previousDecision = previous?.source.type === "rollout.decided" ? (previous.source as StoredEvent<RolloutDecided>) : null;
  const previousObserved = previous?.source.type === "previous.observed" ? (previous.source as StoredEvent<PreviousObserved>) : null;
  const spec = plugin?.type === "plugin.observed" ? (plugin.data as { spec: JsonValue }).spec : null;
  const image = specImage(spec);
  const config = image === null ? null : q.configFor(stream, image, beforeSeq);
  const deployed = previous?.version ?? null;
  const verdicts = new Map<string, VerdictOutcome>();
  const curDigest = imageDigest(image);
  const currentVerdict = curDigest === null ? null : q.verdictFor(curDigest, beforeSeq);
  if (currentVerdict !== null) verdicts.set(currentVerdict.data.digest, currentVerdict.data.outcome);
  const prevDigest = imageDigest(deployed?.image);
  const previousVerdict = prevDigest === null ? null : q.verdictFor(prevDigest, beforeSeq);
  if (previousVerdict !== null) verdicts.set(previousVerdict.data.digest, previousVerdict.data.outcome);
  const configOk = new Map<string, boolean>();
  if (config !== null) configOk.set(config.data.image, config.data.ok);
  const state: DeciderState = {
    ...emptyFacts(name),
    spec,
    grant: grant?.type === "grant.observed" ? (grant.data as { spec: JsonValue }).spec : null,
    configOk,
    deployed,
    decided: previousDecision !== null,
    verdicts,
  };
  return { state, sources: { plugin, grant, config, currentVerdict, previousDecision, previousObserved, previousVerdict } };
}

/** The answer to "why does this plugin run what it runs?". */
export interface WhyAnswer {
  readonly plugin: string;
  readonly decision: StoredEvent<RolloutDecided>;
  /** Outcome, image run, pending approval and reason codes of the recorded plan. */
  readonly plan: PlanView;
  /** The inputs as recorded: current and previous versions, deployable, grant. */
  readonly inputs: RecordedInputs;
  /** Whether the current version was deployable, and why not. */
  readonly deployable: { readonly ok: boolean; readonly because: readonly string[] };
  /** The events that fed the decision: the latest of each kind before it. */
  readonly fed: DeciderSources;
  /** The decision's cause, its cause's cause, … (nearest first). */
  readonly chain: readonly StoredEvent[];
  /** Whether re-deciding from the log before the decision gives the same answer. */
  readonly replays: boolean;
}

/** Explains the latest rollout decision of a plugin; null when none was recorded. */
export function why(store: EventStore, name: string): WhyAnswer | null {
  const decision = store.last(pluginStream(name), "rollout.decided") as StoredEvent<RolloutDecided> | null;
  if (decision === null) return null;
  const { state, sources } = loadDeciderState(store, name, decision.seq);
  const chain: StoredEvent[] = [];
  const seen = new Set<number>();
  for (let c = decision.causedBy; c !== null && !seen.has(c) && chain.length < 100; ) {
    seen.add(c);
    const e = store.get(c);
    if (e === null) break;
    chain.push(e);
    c = e.causedBy;
  }
  const because: string[] = [];
  if (state.spec === null) because.push(sources.plugin === null ? "no Plugin was observed" : "the Plugin was deleted");
  else {
    const p = parsePlugin({ name, spec: state.spec });
    if (!p.ok) because.push(`the spec is invalid: ${formatErrors(p.errors)}`);
  }
  const image = specImage(state.spec);
  if (image !== null) {
    if (sources.config === null) because.push(`no config verdict for ${image}`);
    else if (!sources.config.data.ok) because.push(`the config does not match the schema: ${sources.config.data.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
    const v = sources.currentVerdict;
    if (v === null) because.push(`no signature verdict for ${image}`);
    else if (v.data.outcome === "refused") because.push(`the signature check refused ${v.data.digest}${v.data.reason === undefined ? "" : `: ${v.data.reason}`}`);
  }
  const expected = decideRollout(state);
  return {
    plugin: name,
    decision,
    plan: viewPlan(decision.data.plan),
    inputs: decision.data.inputs,
    deployable: { ok: decision.data.inputs.currentDeployable, because: decision.data.inputs.currentDeployable ? [] : because },
    fed: sources,
    chain,
    replays: canonicalize(expected) === canonicalize(decision.data),
  };
}

/** Projected state: each projection's rows by key. */
export interface ProjectedState {
  /** The last seq folded. */
  readonly seq: number;
  readonly tables: ReadonlyMap<string, ReadonlyMap<string, unknown>>;
}

/** Folds the log into every projection, in memory, as of a seq or a time (events with time ≤ it). */
export function stateAt(
  store: EventStore,
  at: { seq: number } | { time: Date },
  projections: readonly Projection<unknown>[] = PROJECTIONS,
): ProjectedState {
  let toSeq: number;
  if ("seq" in at) toSeq = at.seq;
  else {
    const row = store.database.prepare<[string], { s: number | null }>("SELECT max(seq) AS s FROM events WHERE time <= ?").get(at.time.toISOString());
    toSeq = row?.s ?? 0;
  }
  toSeq = Math.min(toSeq, store.head());
  const tables = new Map<string, Map<string, unknown>>(projections.map((p) => [p.name, new Map()]));
  const types = [...new Set(projections.flatMap((p) => p.types))];
  let cursor = 0;
  const pageSize = 20_000;
  while (cursor < toSeq) {
    const page = store.read({ afterSeq: cursor, toSeq, type: types, limit: pageSize });
    for (const e of page) {
      for (const p of projections) {
        if (!p.types.includes(e.type)) continue;
        const key = p.keyOf(e);
        if (key === null) continue;
        const t = tables.get(p.name) as Map<string, unknown>;
        const next = p.evolve(t.get(key), e);
        if (next === undefined) t.delete(key);
        else t.set(key, next);
      }
    }
    const last = page[page.length - 1];
    if (last === undefined || page.length < pageSize) break;
    cursor = last.seq;
  }
  return { seq: toSeq, tables };
}
