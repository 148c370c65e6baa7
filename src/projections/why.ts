/**
 * `why`: the latest rollout decision of a plugin, its inputs as recorded, the events that fed it,
 * its chain of causes, what kept the asked-for version from running, and whether re-deciding
 * gives the same answer. It answers in codes and facts; the faces word them (`src/app/wording.ts`),
 * so the CLI and the console say the same thing.
 */
import { canonicalize } from "json-canonicalize";
import { egressStream, pluginStream } from "../events/index.js";
import type { EventOf, EventLog, KnownEvent } from "../events/index.js";
import { parsePlugin } from "../plugins/index.js";
import type { Blocker } from "./blockers.js";
import { decideRollout } from "./decide-rollout.js";
import type { RecordedInputs } from "./decide-rollout.js";
import { loadDeciderState } from "./decider-state.js";
import type { DeciderSources } from "./decider-state.js";
import { specImage } from "./images.js";
import { viewPlan } from "./plan-view.js";
import type { PlanView } from "./plan-view.js";

/** The answer to "why does this plugin run what it runs?". */
export interface WhyAnswer {
  readonly plugin: string;
  readonly decision: EventOf<"rollout.decided">;
  /** Outcome, image run, pending approval and reason codes of the recorded plan. */
  readonly plan: PlanView;
  /** The inputs as recorded: current and previous versions, deployable, grant. */
  readonly inputs: RecordedInputs;
  /** Whether the current version was deployable, and what blocked it. */
  readonly deployable: { readonly ok: boolean; readonly because: readonly Blocker[] };
  /** Whether the Plugin was deleted when the decision was taken. */
  readonly deleted: boolean;
  /** The events that fed the decision: the latest of each kind before it. */
  readonly fed: DeciderSources;
  /** The decision's cause, its cause's cause, … (nearest first). */
  readonly chain: readonly KnownEvent[];
  /** Whether re-deciding from the log before the decision gives the same answer. */
  readonly replays: boolean;
  /** A WebAssembly plugin's calls that failed or were refused in the hour before `now`, by code. */
  readonly failedCalls: readonly FailedCalls[];
  /**
   * The plugin's latest egress decision by each proxy that recorded one (each replica records as
   * an actor of its own), newest first: in a cluster with one log, every replica's answer is here.
   */
  readonly egress: readonly EventOf<"egress.decision">[];
  /** What runs the decided version: `wasm` (the plugin host) or `container`; null when nothing runs. */
  readonly runtime: "container" | "wasm" | null;
  /** Whether the version asked for is a WebAssembly plugin (its verdict names a module). */
  readonly askedWasm: boolean;
}

/** How often calls failed with one code (and whose code it was), and when last. */
export interface FailedCalls {
  readonly code: string;
  readonly source: "host" | "plugin";
  readonly count: number;
  readonly last: string;
  /** Who recorded them (the plugin host's actor, sorted). */
  readonly by: readonly string[];
}

const HOUR_MS = 3_600_000;

/** The failed or refused calls of a plugin since `since`, by code, most frequent first. */
async function failedCallsSince(store: EventLog, name: string, since: Date): Promise<FailedCalls[]> {
  const byCode = new Map<string, { code: string; source: "host" | "plugin"; count: number; last: string; actors: Set<string> }>();
  for (const e of await store.read({ stream: pluginStream(name), type: "plugin.call", since })) {
    const key = `${e.data.source} ${e.data.code}`;
    const entry = byCode.get(key) ?? { code: e.data.code, source: e.data.source, count: 0, last: e.time, actors: new Set<string>() };
    entry.count++;
    entry.last = e.time;
    entry.actors.add(e.actor);
    byCode.set(key, entry);
  }
  return [...byCode.values()]
    .map(({ actors, ...f }) => ({ ...f, by: [...actors].sort() }))
    .sort((a, b) => b.count - a.count || (a.code < b.code ? -1 : 1));
}

/**
 * How many of a plugin's newest egress decisions `why` looks through for each proxy's latest: a
 * replica silent for that many of its peers' decisions is left out. Each one read is parsed and
 * upcast: with 500, `why` took 5.9 ms at a million events in bench:store (0.9 ms before it looked).
 */
const EGRESS_SCAN = 100;
/** The most proxies `why` names. */
const MAX_PROXIES = 16;

/** The newest egress decision of each actor among the plugin's latest {@link EGRESS_SCAN}, newest first. */
async function latestEgressByProxy(store: EventLog, name: string): Promise<EventOf<"egress.decision">[]> {
  const byActor = new Map<string, EventOf<"egress.decision">>();
  for (const e of await store.lookups.newest(egressStream(name), ["egress.decision"], EGRESS_SCAN)) {
    if (!byActor.has(e.actor)) byActor.set(e.actor, e);
    if (byActor.size >= MAX_PROXIES) break;
  }
  return [...byActor.values()];
}

/** The most causes `why` follows back. */
const MAX_CHAIN = 100;

/** Explains the latest rollout decision of a plugin; null when none was recorded. */
export async function why(store: EventLog, name: string, now: Date = new Date()): Promise<WhyAnswer | null> {
  const decision = await store.last(pluginStream(name), "rollout.decided");
  if (decision === null) return null;
  const { state, sources } = await loadDeciderState(store, name, decision.seq);
  const chain: KnownEvent[] = [];
  const seen = new Set<number>();
  for (let c = decision.causedBy; c !== null && !seen.has(c) && chain.length < MAX_CHAIN; ) {
    seen.add(c);
    const e = await store.get(c);
    if (e === null) break;
    chain.push(e);
    c = e.causedBy;
  }
  const ok = decision.data.inputs.currentDeployable;
  return {
    plugin: name,
    decision,
    plan: viewPlan(decision.data.plan),
    inputs: decision.data.inputs,
    deployable: { ok, because: ok ? [] : blockers(name, state.spec, sources) },
    deleted: sources.plugin?.type === "plugin.deleted",
    fed: sources,
    chain,
    replays: canonicalize(decideRollout(state)) === canonicalize(decision.data),
    failedCalls: await failedCallsSince(store, name, new Date(now.getTime() - HOUR_MS)),
    egress: await latestEgressByProxy(store, name),
    runtime: await runtimeOf(store, name),
    askedWasm: sources.currentVerdict?.data.module !== undefined,
  };
}

/** What the latest desired workload runs on, or null when it runs nothing. */
async function runtimeOf(store: EventLog, name: string): Promise<"container" | "wasm" | null> {
  const w = await store.last(pluginStream(name), "workload.desired");
  if (w === null || !w.data.running) return null;
  return w.data.runtime ?? "container";
}

/** What kept the version asked for from being deployable, from the facts that fed the decision. */
function blockers(name: string, spec: Awaited<ReturnType<typeof loadDeciderState>>["state"]["spec"], sources: DeciderSources): Blocker[] {
  const out: Blocker[] = [];
  if (spec === null) out.push(sources.plugin === null ? { code: "plugin_missing" } : { code: "plugin_deleted" });
  else {
    const p = parsePlugin({ name, spec });
    if (!p.ok) out.push({ code: "spec_invalid", errors: p.errors });
  }
  const image = specImage(spec);
  if (image === null) return out;
  // The order of standingBlockers: who made it before what it is given.
  const v = sources.currentVerdict;
  if (v === null) out.push({ code: "signature_verdict_missing", image });
  else if (v.data.outcome === "refused") out.push({ code: "signature_refused", digest: v.data.digest, reason: v.data.reason ?? null });
  if (sources.config === null) out.push({ code: "config_verdict_missing", image });
  else if (!sources.config.data.ok) out.push({ code: "config_mismatch", image, errors: sources.config.data.errors });
  return out;
}
