/**
 * The control plane's projections: plugins (spec, grant, status), signature verdicts by digest,
 * the latest rollout decision per plugin, desired workloads, egress allow-lists and pending
 * approvals.
 */
import { verdictKey } from "../events/index.js";
import type { KnownEvent } from "../events/index.js";
import type { JsonValue, RolloutPlanJSON } from "../plugins/index.js";
import {
  evolveAllowList, evolveDecision, evolvePending, evolvePlugin, evolveVerdict, evolveWorkload,
} from "./folds.js";
import type { AllowListState, DecisionState, PendingState, PluginState, VerdictState, WorkloadState } from "./folds.js";
import { json, unjson } from "./projection.js";
import type { Cell, Projection } from "./projection.js";

/** The plugin an event of a plugin stream is about (every such event's data names it). */
const byName = (e: KnownEvent): string | null => ("name" in e.data ? e.data.name : null);
const T = "TEXT" as const;
const I = "INTEGER" as const;
const bool = (v: boolean | null): Cell => (v === null ? null : v ? 1 : 0);
const unbool = (v: Cell): boolean | null => (v === null ? null : v === 1);

/** Plugins: spec, grant and status (image asked for, image running, pending). */
export const pluginsProjection: Projection<PluginState> = {
  name: "plugins", version: 1, table: "proj_plugins",
  types: ["plugin.observed", "plugin.deleted", "grant.observed", "grant.deleted", "config.verdict", "rollout.decided"],
  keyOf: byName,
  evolve: evolvePlugin,
  columns: [
    { name: "spec", type: T }, { name: "grant", type: T }, { name: "deleted", type: I }, { name: "asked_image", type: T },
    { name: "running_image", type: T }, { name: "pending", type: T }, { name: "outcome", type: T }, { name: "config_ok", type: I }, { name: "seq", type: I },
  ],
  toRow: (s) => [json(s.spec), json(s.grant), bool(s.deleted), s.askedImage, s.runningImage, json(s.pending), s.outcome, bool(s.configOk), s.seq],
  fromRow: (r) => ({
    name: String(r[0]), spec: unjson<JsonValue | null>(r[1] ?? null), grant: unjson<JsonValue | null>(r[2] ?? null), deleted: r[3] === 1,
    askedImage: (r[4] ?? null) as string | null, runningImage: (r[5] ?? null) as string | null, pending: unjson<JsonValue | null>(r[6] ?? null),
    outcome: (r[7] ?? null) as string | null, configOk: unbool(r[8] ?? null), seq: Number(r[9]),
  }),
};

/** The latest signature verdict per image digest and manifest checked (`verdictKey`). */
export const verdictsProjection: Projection<VerdictState> = {
  name: "signature_verdicts", version: 3, table: "proj_signature_verdicts",
  types: ["signature.verdict"],
  keyOf: (e) => (e.type === "signature.verdict" ? verdictKey(e.data.digest, e.data.manifest) : null),
  evolve: evolveVerdict,
  columns: [
    { name: "digest", type: T }, { name: "manifest", type: T }, { name: "image", type: T }, { name: "outcome", type: T }, { name: "reason", type: T },
    { name: "signers", type: T }, { name: "seq", type: I }, { name: "time", type: T }, { name: "module", type: T },
  ],
  toRow: (s) => [s.digest, s.manifest, s.image, s.outcome, s.reason, json(s.signers), s.seq, s.time, s.module],
  fromRow: (r) => ({
    digest: String(r[1]), manifest: (r[2] ?? null) as string | null, image: String(r[3]), outcome: r[4] as VerdictState["outcome"], reason: (r[5] ?? null) as string | null,
    signers: unjson<JsonValue>(r[6] ?? null), seq: Number(r[7]), time: String(r[8]), module: (r[9] ?? null) as string | null,
  }),
};

/** The latest rollout decision per plugin. */
export const decisionsProjection: Projection<DecisionState> = {
  name: "rollout_decisions", version: 1, table: "proj_rollout_decisions",
  types: ["rollout.decided"],
  keyOf: byName,
  evolve: evolveDecision,
  columns: [
    { name: "seq", type: I }, { name: "caused_by", type: I }, { name: "outcome", type: T }, { name: "current_image", type: T },
    { name: "previous_image", type: T }, { name: "current_deployable", type: I }, { name: "run_image", type: T }, { name: "pending", type: T }, { name: "plan", type: T },
  ],
  toRow: (s) => [s.seq, s.causedBy, s.outcome, s.currentImage, s.previousImage, bool(s.currentDeployable), s.runImage, json(s.pending), json(s.plan)],
  fromRow: (r) => ({
    name: String(r[0]), seq: Number(r[1]), causedBy: (r[2] ?? null) as number | null, outcome: (r[3] ?? null) as string | null,
    currentImage: (r[4] ?? null) as string | null, previousImage: (r[5] ?? null) as string | null, currentDeployable: r[6] === 1,
    runImage: (r[7] ?? null) as string | null, pending: unjson<JsonValue | null>(r[8] ?? null), plan: unjson<RolloutPlanJSON>(r[9] ?? null),
  }),
};

/** The desired workload per plugin. */
export const workloadsProjection: Projection<WorkloadState> = {
  name: "desired_workloads", version: 2, table: "proj_desired_workloads",
  types: ["workload.desired"],
  keyOf: byName,
  evolve: evolveWorkload,
  columns: [
    { name: "running", type: I }, { name: "image", type: T }, { name: "objects", type: T }, { name: "allow_list", type: T }, { name: "seq", type: I },
    { name: "runtime", type: T }, { name: "module", type: T },
  ],
  toRow: (s) => [bool(s.running), s.image, json(s.objects), json(s.allowList), s.seq, s.runtime, s.module],
  fromRow: (r) => ({
    name: String(r[0]), running: r[1] === 1, image: (r[2] ?? null) as string | null, objects: unjson<JsonValue>(r[3] ?? null),
    allowList: unjson<string[]>(r[4] ?? null), seq: Number(r[5]), runtime: r[6] === "wasm" ? "wasm" : "container", module: (r[7] ?? null) as string | null,
  }),
};

/** The egress allow-list of every running plugin. */
export const allowListsProjection: Projection<AllowListState> = {
  name: "egress_allowlists", version: 1, table: "proj_egress_allowlists",
  types: ["workload.desired", "plugin.deleted"],
  keyOf: byName,
  evolve: evolveAllowList,
  columns: [{ name: "entries", type: T }, { name: "seq", type: I }],
  toRow: (s) => [json(s.entries), s.seq],
  fromRow: (r) => ({ plugin: String(r[0]), entries: unjson<string[]>(r[1] ?? null), seq: Number(r[2]) }),
};

/** Decisions that wait for the owner's approval. */
export const pendingProjection: Projection<PendingState> = {
  name: "pending_approvals", version: 1, table: "proj_pending_approvals",
  types: ["rollout.decided", "plugin.deleted"],
  keyOf: byName,
  evolve: evolvePending,
  columns: [{ name: "seq", type: I }, { name: "image", type: T }, { name: "pending", type: T }],
  toRow: (s) => [s.seq, s.image, json(s.pending)],
  fromRow: (r) => ({ name: String(r[0]), seq: Number(r[1]), image: (r[2] ?? null) as string | null, pending: unjson<JsonValue>(r[3] ?? null) }),
};

/** Every projection of the control plane. */
export const PROJECTIONS: readonly Projection<unknown>[] = [
  pluginsProjection, verdictsProjection, decisionsProjection, workloadsProjection, allowListsProjection, pendingProjection,
] as unknown as readonly Projection<unknown>[];
