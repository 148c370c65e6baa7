/**
 * `get plugins`: one row per plugin the log knows — what runs, what is asked for, the signature
 * verdict of the asked-for image (checked against the plugin's own manifest), what waits for
 * approval, and what the owner must know at a glance: what keeps the version asked for from
 * running whatever is approved (an invalid spec, a refused signature, a refused config) and a
 * failed reconcile.
 */
import { pluginStream } from "../events/index.js";
import type { EventLog, KnownEvent } from "../events/index.js";
import { parseImageRef } from "../plugins/index.js";
import type { Pending } from "../plugins/index.js";
import { catalogView } from "./catalog-view.js";
import type { CatalogView } from "./catalog-view.js";
import { Projector, readySchemaCheck, specManifestDigest, standingBlockers, standingVerdict, withSchemaChecks } from "../projections/index.js";
import type { HardBlocker, PluginState, VerdictState, WorkloadState } from "../projections/index.js";

/** What the owner should know of a plugin's state, as a code (the faces word it). */
export type PluginStatus =
  | "running" // the version asked for runs
  | "held_back" // an earlier version runs; the one asked for waits (approval, checks)
  | "stopped" // nothing runs
  | "deleted"; // the Plugin was deleted

/** Every status, for the tables that word each of them. */
export const PLUGIN_STATUSES = ["running", "held_back", "stopped", "deleted"] as const satisfies readonly PluginStatus[];

/** A reason the version asked for does not run as asked. */
export type PluginProblem =
  | { readonly code: "spec_invalid" }
  | { readonly code: "config_refused" }
  | { readonly code: "signature_refused"; readonly reason: string | null }
  | { readonly code: "reconcile_failed"; readonly error: string };

/** Every problem code, for the tables that word each of them. */
export const PROBLEM_CODES = ["spec_invalid", "config_refused", "signature_refused", "reconcile_failed"] as const satisfies readonly PluginProblem["code"][];

/** One row of `get plugins`. */
export interface PluginRow {
  readonly name: string;
  readonly status: PluginStatus;
  /** The image that runs, or null. */
  readonly running: string | null;
  /** The image the Plugin asks for, or null when deleted. */
  readonly asked: string | null;
  /** The asked-for image's verdict (`verified`, `unverified`, `refused (reason)`), or null when none yet. */
  readonly verdict: string | null;
  /** The same verdict with who signed it, for the faces to word; null when none yet. */
  readonly signature: SignatureView | null;
  /** What waits for approval, as `capability:x`, `egress:host:port`, `secret:x`, `tier:x`. */
  readonly pending: string[];
  readonly problems: readonly PluginProblem[];
  /**
   * What keeps the version asked for from running whatever is approved, first the spec, then the
   * signature, then the config. While it holds any, no approval is offered for the version.
   */
  readonly blockers: readonly HardBlocker[];
  readonly deleted: boolean;
  /** The plugin stream's version the row was read at (the console's `If-Match` for approve). */
  readonly version: number;
  /** The latest rollout decision: its event and outcome; null when none was decided yet. */
  readonly decided: { readonly seq: number; readonly outcome: string } | null;
  /** What runs the version that runs: a container, or the plugin host (WebAssembly); null when nothing runs. */
  readonly runtime: "container" | "wasm" | null;
  /**
   * Where the workload's objects were last applied: `kubernetes`, or `directory:<folder>` (the
   * embedded mode, where no container runtime runs them: they are only written out); null when
   * none was applied yet.
   */
  readonly target: string | null;
  /** A WebAssembly plugin's module digest (lowercase hex SHA-256), or null. */
  readonly module: string | null;
  /** The latest call of a WebAssembly plugin the log records: a failure with its code, or a count of successes. */
  readonly lastCall: LastCallView | null;
}

/** A signature verdict and who signed the image (the signers trusted by the policy that decided it). */
export interface SignatureView {
  readonly outcome: "verified" | "unverified" | "refused";
  /** A refusal's code (`untrusted_signer`, `manifest_mismatch`, …); null otherwise. */
  readonly reason: string | null;
  readonly signers: readonly { readonly name: string; readonly kind: string }[];
  /**
   * The catalog's word on the image (verified since when, or which entry does not match); null
   * when the catalog the verdict was decided with does not list it. Absent where no log was read.
   */
  readonly catalog?: CatalogView | null;
}

/** A plugin's latest recorded call outcome. */
export type LastCallView =
  | { readonly at: string; readonly ok: false; readonly method: string; readonly code: string; readonly source: "host" | "plugin" }
  | { readonly at: string; readonly ok: true; readonly succeeded: number };

function lastCallView(e: KnownEvent | null): LastCallView | null {
  if (e?.type === "plugin.call") return { at: e.time, ok: false, method: e.data.method, code: e.data.code, source: e.data.source };
  if (e?.type === "plugin.calls") return { at: e.data.to, ok: true, succeeded: e.data.succeeded };
  return null;
}

function pendingList(p: Pending | null): string[] {
  if (p === null) return [];
  return [
    ...p.capabilities.map((c) => `capability:${c}`),
    ...p.egress.map((h) => `egress:${h.host}:${h.port}`),
    ...p.secrets.map((s) => `secret:${s}`),
    ...p.dataTiers.map((t) => `tier:${t}`),
  ];
}

function asPending(v: unknown): Pending | null {
  if (v === null || typeof v !== "object") return null;
  const q = v as Partial<Pending>;
  return { capabilities: q.capabilities ?? [], egress: q.egress ?? [], secrets: q.secrets ?? [], dataTiers: q.dataTiers ?? [] };
}

function statusOf(p: PluginState): PluginStatus {
  if (p.deleted) return "deleted";
  if (p.runningImage === null) return "stopped";
  return p.outcome === "current" ? "running" : "held_back";
}

/** The verdict that stands for the image a plugin asks for, checked against its own manifest. */
function askedVerdict(p: PluginState, verdicts: ReadonlyMap<string, VerdictState>): VerdictState | undefined {
  const ref = p.askedImage === null ? null : parseImageRef(p.askedImage);
  return ref !== null && ref.ok ? standingVerdict(verdicts, ref.value.digest, specManifestDigest(p.name, p.spec)) : undefined;
}

async function signatureView(store: EventLog, v: VerdictState | undefined, name: string): Promise<SignatureView | null> {
  if (v === undefined) return null;
  const signers = Array.isArray(v.signers) ? v.signers.flatMap((x) => (typeof x === "object" && x !== null && !Array.isArray(x) && typeof x.name === "string" ? [{ name: x.name, kind: typeof x.kind === "string" ? x.kind : "owner" }] : [])) : [];
  return { outcome: v.outcome, reason: v.reason, signers, catalog: await catalogView(store, v.seq, name) };
}

/** The problem each blocker is shown as in a table. */
const BLOCKER_PROBLEM: { readonly [C in HardBlocker["code"]]: (b: Extract<HardBlocker, { code: C }>) => PluginProblem } = {
  spec_invalid: () => ({ code: "spec_invalid" }),
  signature_refused: (b) => ({ code: "signature_refused", reason: b.reason }),
  config_mismatch: () => ({ code: "config_refused" }),
};

function problemsOf(blockers: readonly HardBlocker[], latest: KnownEvent | null): PluginProblem[] {
  const out = blockers.map((b) => (BLOCKER_PROBLEM[b.code] as (b: HardBlocker) => PluginProblem)(b));
  if (latest?.type === "reconcile.failed") out.push({ code: "reconcile_failed", error: latest.data.error });
  return out;
}

async function rowOf(store: EventLog, p: PluginState, verdicts: ReadonlyMap<string, VerdictState>, w: WorkloadState | undefined): Promise<PluginRow> {
  if (!p.deleted) await readySchemaCheck(store, p.name, p.spec);
  const v = askedVerdict(p, verdicts);
  const latest = await store.last(pluginStream(p.name));
  const runs = w !== undefined && w.running;
  const blockers = p.deleted || p.spec === null ? [] : await standingBlockers(store, p.name, p.spec);
  return {
    name: p.name,
    status: statusOf(p),
    running: p.runningImage,
    asked: p.deleted ? null : p.askedImage,
    verdict: v === undefined ? null : v.outcome === "refused" ? `refused (${v.reason ?? "?"})` : v.outcome,
    signature: await signatureView(store, v, p.name),
    pending: pendingList(asPending(p.pending)),
    problems: problemsOf(blockers, latest),
    blockers,
    deleted: p.deleted,
    version: latest?.version ?? 0,
    decided: await lastDecision(store, p.name),
    runtime: runs ? w.runtime : null,
    target: (await store.last(pluginStream(p.name), "workload.applied"))?.data.target ?? null,
    module: runs ? w.module : null,
    lastCall: lastCallView(await lastCallOf(store, p.name)),
  };
}

async function lastDecision(store: EventLog, name: string): Promise<PluginRow["decided"]> {
  const d = await store.last(pluginStream(name), "rollout.decided");
  return d === null ? null : { seq: d.seq, outcome: d.data.plan.outcome };
}

/** The rows of `get plugins`, from the projections (caught up first), in name order. */
export async function listPlugins(store: EventLog): Promise<PluginRow[]> {
  return withSchemaChecks(() => readPlugins(store));
}

async function readPlugins(store: EventLog): Promise<PluginRow[]> {
  const projector = new Projector(store);
  await projector.catchUp();
  const verdicts = await projector.rows<VerdictState>("signature_verdicts");
  const workloads = await projector.rows<WorkloadState>("desired_workloads");
  const plugins = [...(await projector.rows<PluginState>("plugins")).values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const rows: PluginRow[] = [];
  for (const p of plugins) rows.push(await rowOf(store, p, verdicts, workloads.get(p.name)));
  return rows;
}

/** Short form of an image for a table: `repository@sha256:<first 12>`. */
export function shortImage(image: string | null): string {
  if (image === null) return "-";
  const r = parseImageRef(image);
  return r.ok ? `${r.value.repository.split("/").at(-1) ?? r.value.repository}@${r.value.digest.slice(0, 19)}` : image;
}

/** The latest call outcome of a plugin the log knows: a failed call, or a count of successes. */
export async function lastCallOf(store: EventLog, name: string): Promise<KnownEvent | null> {
  const failed = await store.last(pluginStream(name), "plugin.call");
  const counted = await store.last(pluginStream(name), "plugin.calls");
  if (failed === null) return counted;
  if (counted === null) return failed;
  return failed.seq > counted.seq ? failed : counted;
}
