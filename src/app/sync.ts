/**
 * The core's sync scheduler (docs/adr/0179): it calls each running connector's `Sync` on the
 * instance's schedule (`Plugin.spec.sync`, docs/adr/0178) with the watermark of the last delivery
 * it recorded and a batch ID it generates, and reuses that ID on every retry of the batch.
 *
 * Everything it knows is in the log, so a restart (even a kill -9) picks up where it was:
 * - `sync.started` before each call; `sync.delivered` only once the delivery is stored (the
 *   deliveries store), which is what makes its watermark the next sync's; `sync.failed` with
 *   `retryAt` while an `unavailable` batch is retried (capped exponential backoff), without it when
 *   the batch is given up.
 * - a batch started but neither delivered nor failed was cut short: it is retried with the same
 *   ID; if its delivery was stored before the cut, storing it again finds it (nothing counted twice).
 * A connector that is held back, stopped or removed is not among `connectors()`, so it is not called.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { EventLog, EventOf } from "../events/index.js";
import { pluginStream } from "../events/index.js";
import { backoffMs, DEFAULT_SYNC_BACKOFF, DEFAULT_SYNC_SCHEDULE, dueAt, nextSlot, parsePlugin, parseSyncSchedule } from "../plugins/index.js";
import type { Backoff, SyncSchedule } from "../plugins/index.js";
import { Projector } from "../projections/index.js";
import type { WorkloadState } from "../projections/index.js";
import { checkDelivery, deliveryOfResponse } from "./deliveries.js";
import { deliveriesOf } from "./log-deliveries.js";
import type { DeliveryRecord, DeliveryStore } from "./deliveries.js";
import type { PluginCaller } from "./plugin-caller.js";

/** The actor of the scheduler's events. */
export const SYNC_ACTOR = "scheduler";

/** A connector the core may call now, with its schedule. */
export interface SyncConnector {
  readonly name: string;
  readonly schedule: SyncSchedule;
}

/** A `Sync` call's outcome: the connector's answer, or a failure with its code and Connect status. */
export type SyncAnswer = { readonly ok: true; readonly delivery: unknown } | { readonly ok: false; readonly code: string; readonly status: string };

/** What the scheduler works with. */
export interface SyncPorts {
  readonly store: EventLog;
  readonly deliveries: DeliveryStore;
  readonly clock: () => Date;
  /** The connectors running now (not held back, stopped or removed), with their schedules. */
  connectors(): Promise<SyncConnector[]>;
  /** Calls an instance's `Sync`. */
  sync(name: string, request: { readonly batchId: string; readonly watermark: string }): Promise<SyncAnswer>;
  /** A new batch ID (default: a random UUID). */
  readonly newBatchId?: () => string;
  readonly backoff?: Backoff;
  readonly logger?: Logger;
}

/** What the log says of an instance's syncs. */
export interface SyncHistory {
  readonly started: EventOf<"sync.started"> | null;
  readonly delivered: EventOf<"sync.delivered"> | null;
  readonly failed: EventOf<"sync.failed"> | null;
}

/** The next thing to do for an instance, and when. */
export type SyncPlan =
  | { readonly kind: "new"; readonly at: Date; readonly slot: Date }
  | { readonly kind: "retry"; readonly at: Date; readonly batchId: string; readonly attempt: number; readonly slot: Date }
  | { readonly kind: "never" };

/** An instance's sync history, read from its stream. */
export async function syncHistory(store: EventLog, name: string): Promise<SyncHistory> {
  const stream = pluginStream(name);
  const [started, delivered, failed] = await Promise.all([store.last(stream, "sync.started"), store.last(stream, "sync.delivered"), store.last(stream, "sync.failed")]);
  return { started, delivered, failed };
}

/**
 * What to do next (pure): retry the unfinished batch (at its `retryAt`, or now when it was cut
 * short), or start a new batch at the next slot plus its jitter; a first sync is due at once, and
 * a schedule missed by more than one slot (the core was down) runs once now.
 */
export function planSync(h: SyncHistory, schedule: SyncSchedule, name: string, now: Date): SyncPlan {
  const s = h.started;
  if (s === null) return { kind: "new", at: now, slot: now };
  const slot = new Date(s.data.slot);
  const retry = unfinished(h, s);
  if (retry !== null) return { kind: "retry", at: retry.retryAt ?? now, batchId: s.data.batchId, attempt: s.data.attempt + 1, slot };
  const next = nextSlot(schedule, slot);
  if (next === null) return { kind: "never" };
  const after = nextSlot(schedule, next);
  if (after !== null && after.getTime() <= now.getTime()) return { kind: "new", at: now, slot: now };
  return { kind: "new", at: dueAt(schedule, name, next), slot: next };
}

/** Whether the latest batch is unfinished, and when its retry is due (undefined: now, it was cut short); null when done. */
function unfinished(h: SyncHistory, s: EventOf<"sync.started">): { retryAt?: Date } | null {
  const mine = (e: EventOf<"sync.delivered"> | EventOf<"sync.failed"> | null): boolean => e !== null && e.data.batchId === s.data.batchId && e.seq > s.seq;
  if (mine(h.delivered)) return null;
  if (!mine(h.failed)) return {};
  const retryAt = h.failed?.data.retryAt;
  return retryAt === undefined ? null : { retryAt: new Date(retryAt) };
}

/** The schedule of a running instance: its latest observed spec's `sync`, else the default. */
export function scheduleOf(spec: unknown): SyncSchedule {
  const sync = typeof spec === "object" && spec !== null ? (spec as Record<string, unknown>)["sync"] : undefined;
  if (sync === undefined) return DEFAULT_SYNC_SCHEDULE;
  const r = parseSyncSchedule(sync, "spec.sync");
  return r.ok ? r.value : DEFAULT_SYNC_SCHEDULE;
}

/** The scheduler: `tick()` does what is due and says when next; `start()` runs it on timers. */
export class SyncScheduler {
  readonly #p: SyncPorts;
  readonly #backoff: Backoff;
  readonly #newBatchId: () => string;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<unknown> = Promise.resolve();
  #stopped = false;
  #recheckMs = 30_000;

  constructor(ports: SyncPorts) {
    this.#p = ports;
    this.#backoff = ports.backoff ?? DEFAULT_SYNC_BACKOFF;
    this.#newBatchId = ports.newBatchId ?? (() => randomUUID());
  }

  /** Does every sync that is due now; returns the earliest time something is due next (null: nothing scheduled). */
  async tick(): Promise<Date | null> {
    let earliest: Date | null = null;
    for (const c of await this.#p.connectors()) {
      if (this.#stopped) break;
      try {
        let plan = planSync(await syncHistory(this.#p.store, c.name), c.schedule, c.name, this.#p.clock());
        if (plan.kind !== "never" && plan.at.getTime() <= this.#p.clock().getTime()) {
          await this.#attempt(c.name, plan);
          plan = planSync(await syncHistory(this.#p.store, c.name), c.schedule, c.name, this.#p.clock());
        }
        if (plan.kind !== "never" && (earliest === null || plan.at < earliest)) earliest = plan.at;
      } catch (err) {
        // One connector's trouble (its store, its answer) never stops the others'.
        this.#p.logger?.error({ plugin: c.name, err: err instanceof Error ? err.message : String(err) }, "sync failed");
      }
    }
    return earliest;
  }

  async #attempt(name: string, plan: Exclude<SyncPlan, { kind: "never" }>): Promise<void> {
    const { store, deliveries } = this.#p;
    const stream = pluginStream(name);
    const batchId = plan.kind === "retry" ? plan.batchId : this.#newBatchId();
    const attempt = plan.kind === "retry" ? plan.attempt : 1;
    const last = (await syncHistory(store, name)).delivered;
    const watermark = last === null ? "" : ((await deliveries.get(last.data.batchId))?.watermark ?? "");
    if (attempt > this.#backoff.maxAttempts) {
      // Cut short too often (crashes): give the batch up, unless its delivery was stored.
      if (await this.#finishStored(name, batchId, attempt - 1)) return;
      await store.append([{ stream, type: "sync.failed", actor: SYNC_ACTOR, data: { name, batchId, attempt: attempt - 1, code: "interrupted", status: "aborted" } }]);
      return;
    }
    const [started] = await store.append([{ stream, type: "sync.started", actor: SYNC_ACTOR, data: { name, batchId, attempt, slot: plan.slot.toISOString(), watermark: watermark !== "" } }]);
    const cause = started?.seq ?? null;
    const answer = await this.#call(name, batchId, watermark);
    const failed = async (code: string, status: string): Promise<void> => {
      const retry = status === "unavailable" && attempt < this.#backoff.maxAttempts;
      const retryAt = retry ? new Date(this.#p.clock().getTime() + backoffMs(this.#backoff, attempt)).toISOString() : undefined;
      await store.append([{ stream, type: "sync.failed", actor: SYNC_ACTOR, causedBy: cause, data: { name, batchId, attempt, code, status, ...(retryAt === undefined ? {} : { retryAt }) } }]);
    };
    if (!answer.ok) return failed(answer.code, answer.status);
    const checked = checkDelivery(name, batchId, answer.delivery);
    if (!checked.ok) {
      this.#p.logger?.warn({ plugin: name, batchId, reason: checked.problem.message }, "the connector's answer is not a delivery of the batch");
      return failed(checked.problem.code, "internal");
    }
    const { record, fresh } = await deliveries.record({ batchId, plugin: name, kind: "sync" }, checked.value, this.#p.clock());
    killAfterDeliveryForTests();
    await store.append([{
      stream, type: "sync.delivered", actor: SYNC_ACTOR, causedBy: cause,
      data: { name, batchId, attempt, digest: record.digest, counts: record.counts, fresh },
    }]);
  }

  /** Calls `Sync`; a call that did not reach the connector (the host's own trouble) fails like an unavailable connector. */
  async #call(name: string, batchId: string, watermark: string): Promise<SyncAnswer> {
    try {
      return await this.#p.sync(name, { batchId, watermark });
    } catch (err) {
      this.#p.logger?.error({ plugin: name, batchId, err: err instanceof Error ? err.message : String(err) }, "cannot call the connector");
      return { ok: false, code: "call_failed", status: "unavailable" };
    }
  }

  /** Records the batch delivered when its delivery was stored; false when it was not. */
  async #finishStored(name: string, batchId: string, attempt: number): Promise<boolean> {
    const stored = await this.#p.deliveries.get(batchId);
    if (stored === null) return false;
    await this.#p.store.append([{
      stream: pluginStream(name), type: "sync.delivered", actor: SYNC_ACTOR,
      data: { name, batchId, attempt, digest: stored.digest, counts: stored.counts, fresh: false },
    }]);
    return true;
  }

  /** Runs `tick()` on timers: when the next sync is due, and at least every `recheckMs` (new connectors). */
  start(recheckMs = 30_000): void {
    this.#recheckMs = recheckMs;
    this.#schedule(0);
  }

  /** Looks again now (after a reconcile pass: a connector may have started or stopped); no-op when not started or busy. */
  poke(): void {
    if (this.#timer !== null && !this.#stopped) {
      clearTimeout(this.#timer);
      this.#schedule(0);
    }
  }

  #schedule(wait: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.tick().then(
        (next) => next,
        (err: unknown) => {
          this.#p.logger?.error({ err: err instanceof Error ? err.message : String(err) }, "the sync scheduler failed; trying again");
          return null;
        },
      ).then((next) => {
        if (this.#stopped) return;
        this.#schedule(next === null ? this.#recheckMs : Math.min(Math.max(next.getTime() - this.#p.clock().getTime(), 0), this.#recheckMs));
      });
    }, wait);
  }

  /** Stops the timers and waits for the syncs under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}

/** The Connect status of a call's failure code: the host's codes, or a plugin's code named after a status. */
const STATUS_OF: Readonly<Record<string, string>> = {
  plugin_timed_out: "deadline_exceeded",
  plugin_busy: "resource_exhausted",
  plugin_not_approved: "permission_denied",
  plugin_not_installed: "unavailable",
  invalid_request: "invalid_argument",
  unknown_method: "unimplemented",
  origin_not_approved: "failed_precondition",
  http_failed: "unavailable",
};
const STATUSES = new Set([
  "cancelled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists", "permission_denied", "resource_exhausted",
  "failed_precondition", "aborted", "out_of_range", "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated",
]);

/** A failure code's Connect status (`unknown` when it names none). */
export function statusOfCode(code: string): string {
  return STATUS_OF[code] ?? (STATUSES.has(code) ? code : "unknown");
}

/**
 * The connectors the plugin host runs now: running WebAssembly workloads whose effective
 * permissions hold `connector`; with `containers`, running container workloads too (a cluster
 * runs both, docs/adr/0198).
 */
export function hostedConnectors(store: EventLog, o: { readonly containers?: boolean } = {}): () => Promise<SyncConnector[]> {
  const projector = new Projector(store);
  return async () => {
    await projector.catchUp();
    const out: SyncConnector[] = [];
    for (const w of (await projector.rows<WorkloadState>("desired_workloads")).values()) {
      if (!w.running) continue;
      if (w.runtime === "wasm" ? w.module === null : o.containers !== true) continue;
      const decision = await store.last(pluginStream(w.name), "rollout.decided");
      const caps = (decision?.data.plan.run?.permissions as { capabilities?: unknown } | undefined)?.capabilities;
      if (!Array.isArray(caps) || !caps.includes("connector")) continue;
      const observed = await store.last(pluginStream(w.name), "plugin.observed");
      const plugin = observed === null ? null : parsePlugin(observed.data);
      out.push({ name: w.name, schedule: plugin !== null && plugin.ok ? scheduleOf(plugin.value.spec) : DEFAULT_SYNC_SCHEDULE });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : 1));
  };
}

/** `Sync` of a WebAssembly connector through the plugin host (the ABI's `sync`). */
export function hostedSync(hosted: PluginCaller): SyncPorts["sync"] {
  return async (name, request) => {
    const r = await hosted.call(name, "sync", { batchId: request.batchId, watermark: request.watermark });
    return r.ok ? { ok: true, delivery: deliveryOfResponse(r.result) } : { ok: false, code: r.error.code, status: statusOfCode(r.error.code) };
  };
}

/**
 * Fault injection for the kill -9 test: with `OPENFIEF_TEST_KILL_AFTER_DELIVERY=1` the process
 * kills itself (SIGKILL) right after storing a delivery, before `sync.delivered` is appended.
 */
function killAfterDeliveryForTests(): void {
  if (process.env["OPENFIEF_TEST_KILL_AFTER_DELIVERY"] === "1") process.kill(process.pid, "SIGKILL");
}

/** What {@link startSyncs} runs over. */
export interface StartSyncsParts {
  readonly store: EventLog;
  /** The plugin host; none: no scheduler. */
  readonly hosted: PluginCaller | null;
  readonly dataDir: string;
  readonly clock?: (() => Date) | undefined;
  readonly logger?: Logger;
}

/** Starts the scheduler of `openfief up` (the deliveries where the log keeps them, the plugin host's connectors), when asked for and a host runs. */
export function startSyncs(options: { readonly recheckMs?: number } | null | undefined, o: StartSyncsParts): SyncScheduler | null {
  if (options === undefined || options === null || o.hosted === null) return null;
  const s = new SyncScheduler({
    store: o.store, deliveries: deliveriesOf(o.store, o.dataDir), clock: o.clock ?? (() => new Date()),
    connectors: hostedConnectors(o.store), sync: hostedSync(o.hosted),
    ...(o.logger === undefined ? {} : { logger: o.logger.child({ component: "syncs" }) }),
  });
  s.start(options.recheckMs);
  return s;
}

/** A connector's sync state, for the faces: its schedule, its latest delivery and failure, and its next sync. */
export interface ConnectorSyncState {
  readonly name: string;
  readonly schedule: SyncSchedule["text"];
  /** When the next sync (or retry) is due; null when the schedule never comes again. */
  readonly nextAt: string | null;
  readonly retrying: boolean;
  readonly lastDelivered: { readonly batchId: string; readonly at: string } | null;
  readonly lastFailed: { readonly batchId: string; readonly at: string; readonly code: string; readonly attempt: number } | null;
}

/** The sync state of every connector the plugin host runs now. */
export async function connectorSyncs(store: EventLog, now: Date = new Date()): Promise<ConnectorSyncState[]> {
  const out: ConnectorSyncState[] = [];
  // A cluster's log (PostgreSQL) also runs container connectors; an embedded one only WebAssembly.
  for (const c of await hostedConnectors(store, { containers: store.kind === "postgres" })()) {
    const h = await syncHistory(store, c.name);
    const plan = planSync(h, c.schedule, c.name, now);
    out.push({
      name: c.name, schedule: c.schedule.text,
      nextAt: plan.kind === "never" ? null : plan.at.toISOString(), retrying: plan.kind === "retry",
      lastDelivered: h.delivered === null ? null : { batchId: h.delivered.data.batchId, at: h.delivered.time },
      lastFailed: h.failed === null ? null : { batchId: h.failed.data.batchId, at: h.failed.time, code: h.failed.data.code, attempt: h.failed.data.attempt },
    });
  }
  return out;
}

/** A connector's page: its sync state (null when it is not a running connector) and its latest deliveries. */
export async function connectorDeliveries(store: EventLog, deliveries: DeliveryStore, name: string, now: Date, limit = 5): Promise<{ readonly sync: ConnectorSyncState | null; readonly recent: DeliveryRecord[] }> {
  const sync = (await connectorSyncs(store, now)).find((s) => s.name === name) ?? null;
  return { sync, recent: await deliveries.list(name, limit) };
}
