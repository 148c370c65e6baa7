/**
 * The core API for plugins (D-27 of the specification; docs/adr/0196, 0197): what a plugin may
 * ask the control plane, and who it is. Each call is checked in this order, cheapest first:
 *
 * 1. the calls in flight (past the cap: `busy`, shed and not recorded) and the caller's address's
 *    rate (`rate_limited`);
 * 2. the token's shape, then the verifier (the published JWKS in the embedded mode, TokenReview in
 *    a cluster), for the audience `openfief-core` only;
 * 3. the ServiceAccount name rule: only `system:serviceaccount:openfief:plugin-<name>` is a plugin;
 * 4. the instance, as the log has it now: known, not removed (deleted, or its uninstall asked for),
 *    running (its latest rollout decision runs a version), and within its own rate;
 * 5. the capability the call needs, among the instance's effective permissions.
 *
 * Every refusal is recorded (`core.refused`), with its code and never the token: in the instance's
 * stream `core/<name>` once the token named one, else in `core/-` with the caller's address. A
 * flood costs little: past a budget per code and instance (or address) a window, refusals are
 * counted and recorded once as a `core.refusals` summary.
 */
import type { Logger } from "pino";
import { CORE_ANONYMOUS_STREAM, coreStream, pluginStream, RefusalBudget } from "../events/index.js";
import type { CoreRefusalCode, CoreRefusals, CoreRefused, EventLog, RefusalBudgetLimits, RefusalSummary } from "../events/index.js";
import { pluginForServiceAccount, serviceAccountUsername } from "../plugins/index.js";
import type { JsonValue } from "../plugins/index.js";
import { RateBuckets } from "../views/index.js";
import type { DeliveryStore } from "./deliveries.js";
import { tokenShapeProblem } from "./plugin-identity.js";
import type { PluginTokenVerifier } from "./plugin-identity.js";
import { syncHistory } from "./sync.js";

/** The calls of the core API, each with the capability it needs (null: any running instance). */
export const CORE_CALLS = {
  whoami: { capability: null },
  "connector.state": { capability: "connector" },
} as const satisfies Record<string, { readonly capability: string | null }>;

/** A call of the core API. */
export type CoreCall = keyof typeof CORE_CALLS;

/** The actor of the core API's events. */
export const CORE_ACTOR = "core";

/** A rate: sustained per second, and at once after a quiet spell. */
export interface CoreRate {
  readonly perSecond: number;
  readonly burst: number;
}

/** The core API's limits. */
export interface CoreApiLimits {
  /** Calls from one address (before the token is checked). */
  readonly perSource: CoreRate;
  /** Calls by one instance (once its token is). */
  readonly perInstance: CoreRate;
  /** Calls in flight at once, every caller together; past it a call is shed (`busy`). */
  readonly inFlight: number;
  /** The refusals' budget: one by one up to `perSource` of a code per instance (or address) a window, then a summary. */
  readonly refusals: RefusalBudgetLimits;
}

/** The defaults: 50 calls a second from an address, 10 a second by an instance, 64 at once, 3 refusals of a code a minute. */
export const CORE_API_LIMITS: CoreApiLimits = {
  perSource: { perSecond: 50, burst: 100 },
  perInstance: { perSecond: 10, burst: 20 },
  inFlight: 64,
  refusals: { perSource: 3, total: 100, windowMs: 60_000, maxKeys: 4096 },
};

/** What the core API works over. */
export interface CoreApiPorts {
  readonly store: EventLog;
  readonly verifier: PluginTokenVerifier;
  /** Where connectors' deliveries are kept (the data folder's, or the cluster's). */
  readonly deliveries: DeliveryStore;
  readonly clock?: () => Date;
  readonly limits?: Partial<CoreApiLimits>;
  readonly logger?: Logger;
  /** Told of every answer: the call and `ok` or the refusal's code (the metrics' counter). */
  readonly onAnswer?: (call: CoreCall, code: "ok" | CoreRefusalCode | "busy") => void;
}

/** One call as a face hands it over. */
export interface CoreRequest {
  readonly call: CoreCall;
  /** The `Authorization` header as sent (absent when none). */
  readonly authorization: string | undefined;
  /** The caller's address. */
  readonly source: string;
}

/** A refusal's HTTP status: 401 for the token, 403 for the instance, 429 for the rate, 503 when it could not be checked or is shed. */
export type CoreRefusalStatus = 401 | 403 | 429 | 503;

/** The answer to a call. */
export type CoreAnswer =
  | { readonly ok: true; readonly body: JsonValue }
  | { readonly ok: false; readonly status: CoreRefusalStatus; readonly code: CoreRefusalCode | "busy"; readonly message: string; readonly retryAfterSeconds?: number };

/** Each refusal code's status and one line for the caller (never the token). */
export const CORE_REFUSALS: Readonly<Record<CoreRefusalCode, { readonly status: CoreRefusalStatus; readonly message: string }>> = {
  missing_token: { status: 401, message: "no token: send the instance's openfief-core token as Authorization: Bearer" },
  malformed_token: { status: 401, message: "the token is not a JWT of at most 8 KiB" },
  wrong_audience: { status: 401, message: "the token is not for openfief-core" },
  token_expired: { status: 401, message: "the token has expired: read the token file again" },
  wrong_issuer: { status: 401, message: "the token was not issued by this control plane's issuer" },
  token_refused: { status: 401, message: "the token is not accepted" },
  not_a_plugin: { status: 401, message: "the token is not a plugin's: only system:serviceaccount:openfief:plugin-<name> is" },
  review_failed: { status: 503, message: "the token could not be checked: try again" },
  review_timeout: { status: 503, message: "checking the token took too long: try again" },
  rate_limited: { status: 429, message: "too many calls: slow down" },
  unknown_instance: { status: 403, message: "no such instance" },
  removed_instance: { status: 403, message: "the instance was removed" },
  not_running: { status: 403, message: "the instance does not run" },
  capability_not_held: { status: 403, message: "the instance does not hold the capability this call needs" },
};

/** An instance as the core API sees it: running, with its effective permissions. */
export interface CoreInstance {
  readonly name: string;
  readonly image: string;
  /** The effective permissions of the version that runs, as its rollout decision recorded them. */
  readonly permissions: { readonly capabilities: readonly string[] } & Readonly<Record<string, JsonValue>>;
  /** The seq of that decision. */
  readonly decision: number;
}

/**
 * The instance `name` as the log has it now: known, not removed (deleted, or its uninstall asked
 * for, after it was last applied), and running (its latest decision since runs a version).
 */
export async function coreInstance(store: EventLog, name: string): Promise<{ ok: true; instance: CoreInstance } | { ok: false; code: "unknown_instance" | "removed_instance" | "not_running" }> {
  const stream = pluginStream(name);
  const [observed, deleted, uninstall, decided] = await Promise.all([
    store.last(stream, "plugin.observed"), store.last(stream, "plugin.deleted"), store.last(stream, "plugin.uninstall.requested"), store.last(stream, "rollout.decided"),
  ]);
  if (observed === null) return { ok: false, code: "unknown_instance" };
  const removedAt = Math.max(deleted?.seq ?? 0, uninstall?.seq ?? 0);
  if (removedAt > observed.seq) return { ok: false, code: "removed_instance" };
  const run = decided === null || decided.seq < removedAt ? null : decided.data.plan.run;
  const permissions = run?.permissions as CoreInstance["permissions"] | undefined;
  if (decided === null || run === null || run === undefined || permissions === undefined || !Array.isArray(permissions.capabilities)) return { ok: false, code: "not_running" };
  return { ok: true, instance: { name, image: run.image, permissions, decision: decided.seq } };
}

interface Seen {
  readonly code: CoreRefusalCode;
  readonly call: CoreCall;
  readonly source: string;
  readonly plugin?: string;
}

/** The core API's use case: see the module comment. `close()` records the summaries still counting. */
export class CoreApi {
  readonly #p: CoreApiPorts;
  readonly #l: CoreApiLimits;
  readonly #clock: () => Date;
  readonly #sources: RateBuckets;
  readonly #instances: RateBuckets;
  readonly #budget: RefusalBudget<Seen>;
  readonly #sweep: NodeJS.Timeout;
  #inFlight = 0;
  #closed = false;

  constructor(ports: CoreApiPorts) {
    this.#p = ports;
    this.#l = { ...CORE_API_LIMITS, ...ports.limits, refusals: { ...CORE_API_LIMITS.refusals, ...ports.limits?.refusals } };
    this.#clock = ports.clock ?? (() => new Date());
    const ms = (): number => this.#clock().getTime();
    this.#sources = new RateBuckets(this.#l.perSource, ms);
    this.#instances = new RateBuckets(this.#l.perInstance, ms);
    this.#budget = new RefusalBudget<Seen>(this.#l.refusals, ms);
    this.#sweep = setInterval(() => void this.#summarise(this.#budget.due()), Math.min(5000, this.#l.refusals.windowMs)).unref();
  }

  /** Answers one call; never throws. */
  async handle(r: CoreRequest): Promise<CoreAnswer> {
    const a = await this.#guarded(r);
    this.#p.onAnswer?.(r.call, a.ok ? "ok" : a.code);
    return a;
  }

  async #guarded(r: CoreRequest): Promise<CoreAnswer> {
    if (this.#closed || this.#inFlight >= this.#l.inFlight) return { ok: false, status: 503, code: "busy", message: "the core is busy: try again", retryAfterSeconds: 1 };
    this.#inFlight++;
    try {
      return await this.#handle(r);
    } catch (err) {
      this.#p.logger?.error({ call: r.call, err: err instanceof Error ? err.message : String(err) }, "a core call failed");
      return { ok: false, status: 503, code: "busy", message: "the call could not be answered: try again", retryAfterSeconds: 1 };
    } finally {
      this.#inFlight--;
    }
  }

  async #handle(r: CoreRequest): Promise<CoreAnswer> {
    const wait = this.#sources.take(r.source);
    if (wait !== null) return this.#refuse({ code: "rate_limited", call: r.call, source: r.source }, wait);
    const token = bearer(r.authorization);
    const shape = tokenShapeProblem(token);
    if (shape !== null || token === undefined) return this.#refuse({ code: shape ?? "missing_token", call: r.call, source: r.source });
    const checked = await this.#p.verifier.verify(token);
    if (!checked.ok) return this.#refuse({ code: checked.code, call: r.call, source: r.source });
    const named = pluginForServiceAccount(checked.username);
    if (!named.ok) return this.#refuse({ code: "not_a_plugin", call: r.call, source: r.source });
    const plugin = named.value;
    const instanceWait = this.#instances.take(plugin);
    if (instanceWait !== null) return this.#refuse({ code: "rate_limited", call: r.call, source: r.source, plugin }, instanceWait);
    const found = await coreInstance(this.#p.store, plugin);
    if (!found.ok) return this.#refuse({ code: found.code, call: r.call, source: r.source, plugin });
    const need = CORE_CALLS[r.call].capability;
    if (need !== null && !found.instance.permissions.capabilities.includes(need)) {
      return this.#refuse({ code: "capability_not_held", call: r.call, source: r.source, plugin }, undefined, need);
    }
    return { ok: true, body: await this.#answer(r.call, found.instance) };
  }

  async #answer(call: CoreCall, i: CoreInstance): Promise<JsonValue> {
    if (call === "whoami") {
      return { instance: i.name, serviceAccount: serviceAccountUsername(i.name), image: i.image, permissions: i.permissions as unknown as JsonValue };
    }
    const h = await syncHistory(this.#p.store, i.name);
    const delivered = h.delivered === null ? null : await this.#p.deliveries.get(h.delivered.data.batchId);
    const [latest] = await this.#p.deliveries.list(i.name, 1);
    return {
      instance: i.name,
      // What the next sync passes: the last synced delivery's watermark ("" from the start).
      watermark: delivered?.watermark ?? "",
      lastSync: h.delivered === null ? null : { batchId: h.delivered.data.batchId, at: h.delivered.time, digest: h.delivered.data.digest, counts: { ...h.delivered.data.counts } },
      lastFailure: h.failed === null ? null : { batchId: h.failed.data.batchId, at: h.failed.time, code: h.failed.data.code, attempt: h.failed.data.attempt },
      latestDelivery: latest === undefined ? null : { batchId: latest.batchId, kind: latest.kind, digest: latest.digest, recordedAt: latest.recordedAt, counts: { ...latest.counts } },
    };
  }

  async #refuse(seen: Seen, retryAfterSeconds?: number, capability?: string): Promise<CoreAnswer> {
    const { status, message } = CORE_REFUSALS[seen.code];
    const admitted = this.#budget.admit(`${seen.code}\u0000${seen.call}\u0000${seen.plugin ?? `@${seen.source}`}`, seen);
    // Logged as recorded: what the budget counts instead is logged at debug, so a flood floods neither.
    this.#p.logger?.[admitted.record ? "info" : "debug"]({ call: seen.call, code: seen.code, source: seen.source, ...(seen.plugin === undefined ? {} : { plugin: seen.plugin }) }, "refused a plugin's call of the core");
    const data: CoreRefused = {
      code: seen.code, call: seen.call, source: seen.source.slice(0, 64),
      ...(seen.plugin === undefined ? {} : { plugin: seen.plugin }), ...(capability === undefined ? {} : { capability }),
    };
    await this.#record([...(admitted.record ? [data] : []), ...admitted.due.map(summary)]);
    return { ok: false, status, code: seen.code, message, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) };
  }

  async #summarise(due: readonly RefusalSummary<Seen>[]): Promise<void> {
    await this.#record(due.map(summary));
  }

  async #record(items: readonly (CoreRefused | CoreRefusals)[]): Promise<void> {
    if (items.length === 0) return;
    try {
      await this.#p.store.append(items.map((data) => ({
        stream: data.plugin === undefined ? CORE_ANONYMOUS_STREAM : coreStream(data.plugin),
        type: "count" in data ? "core.refusals" : "core.refused",
        actor: CORE_ACTOR,
        data,
      })));
    } catch (err) {
      this.#p.logger?.error({ err: err instanceof Error ? err.message : String(err), events: items.length }, "recording the core's refusals failed");
    }
  }

  /** Stops taking calls and records every summary still counting. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweep);
    await this.#summarise(this.#budget.drain());
  }
}

function summary(s: RefusalSummary<Seen>): CoreRefusals {
  const f = s.first.item;
  return {
    code: f.code, call: f.call, source: f.source.slice(0, 64), ...(f.plugin === undefined ? {} : { plugin: f.plugin }),
    count: s.count, first: new Date(s.first.at).toISOString(), last: new Date(s.last.at).toISOString(),
  };
}

/** The token of an `Authorization: Bearer <token>` header; undefined when there is none. */
export function bearer(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer[ ]+(\S*)[ ]*$/i.exec(header.length > 16 * 1024 ? "" : header);
  return m === null ? (header.trim() === "" ? undefined : "\u0000") : m[1];
}
