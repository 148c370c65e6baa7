/**
 * The pure folds of the log (Emmett's `evolve(state, event)`), one per projection. Each folds the
 * events of one key (a plugin name, an image digest) into that key's state; `undefined` means
 * "no row". No I/O: the projector applies them and writes the rows.
 */
import { verdictKey } from "../events/index.js";
import type { KnownEvent, SignatureVerdict } from "../events/index.js";
import type { JsonValue, RolloutPlanJSON } from "../plugins/index.js";
import { specImage } from "./images.js";
import { viewPlan } from "./plan-view.js";

/** A plugin as the log knows it. */
export interface PluginState {
  readonly name: string;
  /** The spec as last observed; null when deleted or never observed. */
  readonly spec: JsonValue | null;
  /** The grant spec as last observed; null when none. */
  readonly grant: JsonValue | null;
  readonly deleted: boolean;
  /** The image the spec asks for. */
  readonly askedImage: string | null;
  /** The image the latest decision runs; null when nothing runs. */
  readonly runningImage: string | null;
  /** What the latest decision left pending approval. */
  readonly pending: JsonValue | null;
  readonly outcome: string | null;
  /** Whether the latest config verdict for the asked image passed (null when none). */
  readonly configOk: boolean | null;
  readonly seq: number;
}

/** The latest verdict about one image digest checked against one manifest (or against none). */
export interface VerdictState {
  readonly digest: string;
  /** The manifest digest it was checked against; null for none. */
  readonly manifest: string | null;
  /** A WebAssembly plugin's module digest; null for a container image. */
  readonly module: string | null;
  readonly image: string;
  readonly outcome: SignatureVerdict["outcome"];
  readonly reason: string | null;
  readonly signers: JsonValue;
  readonly seq: number;
  readonly time: string;
}

/** The latest rollout decision of a plugin. */
export interface DecisionState {
  readonly name: string;
  readonly seq: number;
  readonly causedBy: number | null;
  readonly outcome: string | null;
  readonly currentImage: string | null;
  readonly previousImage: string | null;
  readonly currentDeployable: boolean;
  readonly runImage: string | null;
  readonly pending: JsonValue | null;
  readonly plan: RolloutPlanJSON;
}

/** The desired workload of a plugin. */
export interface WorkloadState {
  readonly name: string;
  readonly running: boolean;
  readonly image: string | null;
  /** What runs it: a container (its objects), or the plugin host (its module, by digest). */
  readonly runtime: "container" | "wasm";
  readonly module: string | null;
  readonly objects: JsonValue;
  readonly allowList: readonly string[];
  readonly seq: number;
}

/** The egress allow-list of a running plugin (`host:port` entries). */
export interface AllowListState {
  readonly plugin: string;
  readonly entries: readonly string[];
  readonly seq: number;
}

/** A decision waiting for the owner's approval. */
export interface PendingState {
  readonly name: string;
  readonly seq: number;
  readonly image: string | null;
  readonly pending: JsonValue;
}

/** The plugin an event is about, for events whose data names one. */
function nameOf(e: KnownEvent): string {
  return "name" in e.data ? e.data.name : "";
}

const EMPTY_PLUGIN = (name: string): PluginState => ({
  name, spec: null, grant: null, deleted: false, askedImage: null, runningImage: null, pending: null, outcome: null, configOk: null, seq: 0,
});

/** Folds one event into a plugin's state. */
export function evolvePlugin(s: PluginState | undefined, e: KnownEvent): PluginState | undefined {
  const base = s ?? EMPTY_PLUGIN(nameOf(e));
  switch (e.type) {
    case "plugin.observed": {
      const spec = e.data.spec;
      const askedImage = specImage(spec);
      return { ...base, spec, deleted: false, askedImage, configOk: askedImage === base.askedImage ? base.configOk : null, seq: e.seq };
    }
    case "plugin.deleted":
      return { ...base, spec: null, deleted: true, askedImage: null, configOk: null, seq: e.seq };
    case "grant.observed":
      return { ...base, grant: e.data.spec, seq: e.seq };
    case "grant.deleted":
      return { ...base, grant: null, seq: e.seq };
    case "config.verdict": {
      const v = e.data;
      return v.image === base.askedImage ? { ...base, configOk: v.ok, seq: e.seq } : s;
    }
    case "rollout.decided": {
      const view = viewPlan(e.data.plan);
      return { ...base, runningImage: view.runImage, pending: view.pending, outcome: view.outcome, seq: e.seq };
    }
    default:
      return s;
  }
}

/** Folds a `signature.verdict` into the state of its digest. */
export function evolveVerdict(s: VerdictState | undefined, e: KnownEvent): VerdictState | undefined {
  if (e.type !== "signature.verdict") return s;
  const v = e.data;
  return { digest: v.digest, manifest: v.manifest ?? null, module: v.module ?? null, image: v.image, outcome: v.outcome, reason: v.reason ?? null, signers: v.signers.map((x) => ({ name: x.name, kind: x.kind })), seq: e.seq, time: e.time };
}

/** Folds a `rollout.decided` into the latest decision of its plugin. */
export function evolveDecision(s: DecisionState | undefined, e: KnownEvent): DecisionState | undefined {
  if (e.type !== "rollout.decided") return s;
  const d = e.data;
  const view = viewPlan(d.plan);
  return {
    name: d.name, seq: e.seq, causedBy: e.causedBy, outcome: view.outcome,
    currentImage: d.inputs.current?.image ?? null, previousImage: d.inputs.previous?.image ?? null,
    currentDeployable: d.inputs.currentDeployable, runImage: view.runImage, pending: view.pending, plan: d.plan,
  };
}

/** Folds a `workload.desired` into the desired workload of its plugin. */
export function evolveWorkload(s: WorkloadState | undefined, e: KnownEvent): WorkloadState | undefined {
  if (e.type !== "workload.desired") return s;
  const w = e.data;
  return { name: w.name, running: w.running, image: w.image ?? null, runtime: w.runtime ?? "container", module: w.module ?? null, objects: w.objects, allowList: w.allowList, seq: e.seq };
}

/** Folds a `workload.desired` into the allow-list of its plugin: only a running plugin has one. */
export function evolveAllowList(s: AllowListState | undefined, e: KnownEvent): AllowListState | undefined {
  if (e.type === "plugin.deleted") return undefined;
  if (e.type !== "workload.desired") return s;
  const w = e.data;
  if (!w.running) return undefined;
  return { plugin: w.name, entries: [...new Set(w.allowList)].sort(), seq: e.seq };
}

/** Folds a `rollout.decided` into the pending approval of its plugin. */
export function evolvePending(s: PendingState | undefined, e: KnownEvent): PendingState | undefined {
  if (e.type === "plugin.deleted") return undefined;
  if (e.type !== "rollout.decided") return s;
  const d = e.data;
  const view = viewPlan(d.plan);
  if (view.pending === null) return undefined;
  return { name: d.name, seq: e.seq, image: d.inputs.current?.image ?? null, pending: view.pending };
}

/**
 * The verdict that stands for a digest checked against a manifest (a manifest digest, or null):
 * the one for exactly that manifest, else one checked against none.
 */
export function standingVerdict(rows: ReadonlyMap<string, VerdictState>, digest: string, manifest: string | null): VerdictState | undefined {
  return (manifest === null ? undefined : rows.get(verdictKey(digest, manifest))) ?? rows.get(digest);
}
