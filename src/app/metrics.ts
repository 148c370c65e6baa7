/**
 * The control plane's own metrics (prom-client), in one registry that `/metrics` serves: events
 * appended by type, append latency, reconcile passes and their duration, rollout outcomes and
 * signature verdicts. The egress proxy's counters join the same registry (its metrics object takes
 * the registry). Labels are bounded sets — event types, outcomes — never a plugin, a host or a user.
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from "prom-client";
import type { EventLog, KnownEvent } from "../events/index.js";

/** The metrics of one control plane. */
export class ControlPlaneMetrics {
  readonly registry: Registry;
  readonly eventsAppended: Counter<"type">;
  readonly appendSeconds: Histogram<"kind">;
  readonly reconcilePasses: Counter<"result">;
  readonly reconcileSeconds: Histogram;
  readonly rollouts: Counter<"outcome">;
  readonly verdicts: Counter<"outcome">;

  constructor(registry: Registry = new Registry(), o: { processMetrics?: boolean } = {}) {
    this.registry = registry;
    const registers = [registry];
    this.eventsAppended = new Counter({ name: "openfief_events_appended_total", help: "events this process appended to the log, by type", labelNames: ["type"], registers });
    this.appendSeconds = new Histogram({
      name: "openfief_append_seconds", help: "time to append to the log (one transaction), by kind (append, observe)", labelNames: ["kind"], registers,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    });
    this.reconcilePasses = new Counter({ name: "openfief_reconcile_passes_total", help: "reconcile passes, by result (ok, failed)", labelNames: ["result"], registers });
    this.reconcileSeconds = new Histogram({ name: "openfief_reconcile_seconds", help: "time a reconcile pass took", registers, buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] });
    this.rollouts = new Counter({ name: "openfief_rollouts_total", help: "rollout decisions recorded, by outcome (current, previous, none)", labelNames: ["outcome"], registers });
    this.verdicts = new Counter({ name: "openfief_signature_verdicts_total", help: "signature verdicts recorded, by outcome (verified, unverified, refused)", labelNames: ["outcome"], registers });
    for (const result of ["ok", "failed"]) this.reconcilePasses.inc({ result }, 0);
    if (o.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: "openfief_" });
  }

  /** Counts what the store appends (in this process) until the returned function is called. */
  watch(store: EventLog): () => void {
    return store.subscribe((events) => this.count(events));
  }

  /** Counts appended events by type, rollouts by outcome, verdicts by outcome. */
  count(events: readonly KnownEvent[]): void {
    for (const e of events) {
      this.eventsAppended.inc({ type: e.type });
      if (e.type === "rollout.decided") this.rollouts.inc({ outcome: e.data.plan.outcome });
      else if (e.type === "signature.verdict") this.verdicts.inc({ outcome: e.data.outcome });
    }
  }

  /** The log with its appends timed (until each settles); everything else passes through untouched. */
  timed(store: EventLog): EventLog {
    const hist = this.appendSeconds;
    return new Proxy(store, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (typeof v !== "function") return v;
        if (prop !== "append" && prop !== "observe") return v.bind(target);
        const kind = prop;
        return async (...args: unknown[]) => {
          const end = hist.startTimer({ kind });
          try {
            return await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          } finally {
            end();
          }
        };
      },
    });
  }

  /** Times one reconcile pass and counts its result. */
  async timePass<T>(pass: () => Promise<T>): Promise<T> {
    const end = this.reconcileSeconds.startTimer();
    try {
      const r = await pass();
      this.reconcilePasses.inc({ result: "ok" });
      return r;
    } catch (err) {
      this.reconcilePasses.inc({ result: "failed" });
      throw err;
    } finally {
      end();
    }
  }
}
