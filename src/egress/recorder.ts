/**
 * Recording egress decisions (issue 6): every decision of an identified plugin is appended to the
 * `egress/<plugin>` stream and committed before the tunnel carries a byte. Appends from concurrent
 * CONNECTs are gathered for one tick and written in one transaction, so recording costs one
 * commit per burst rather than one per CONNECT.
 */
import { egressDecisionEvent, type EgressDecisionRecord } from "./decision.js";

/** Durably records one decision; resolves only once it is committed, rejects if it cannot be. */
export interface DecisionRecorder {
  record(decision: EgressDecisionRecord): Promise<void>;
}

/**
 * Collects records until the current tick ends, hands them to `write` in one call, then settles
 * every caller: all resolve when the write succeeds, all reject when it throws.
 */
export class BatchingDecisionRecorder implements DecisionRecorder {
  readonly #write: (batch: readonly EgressDecisionRecord[]) => void | Promise<void>;
  #pending: { decision: EgressDecisionRecord; resolve: () => void; reject: (err: unknown) => void }[] = [];
  #scheduled = false;

  constructor(write: (batch: readonly EgressDecisionRecord[]) => void | Promise<void>) {
    this.#write = write;
  }

  record(decision: EgressDecisionRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ decision, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    this.#scheduled = false;
    try {
      await this.#write(batch.map((p) => p.decision));
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}

/** The slice of the event store this recorder uses (`src/events/store.ts`, synchronous batch append). */
export interface EventAppender {
  append(events: readonly { stream: string; type: string; data: unknown; actor: string }[]): unknown;
}

/** The actor of every egress decision event. */
export const EGRESS_ACTOR = "egress-proxy";

/** Records decisions as `egress.decision` events, one transaction per batch. */
export class StoreDecisionRecorder extends BatchingDecisionRecorder {
  constructor(store: EventAppender) {
    super((batch) => {
      // The store's append is one transaction: either the whole batch commits or none of it.
      const result = store.append(batch.map((d) => egressDecisionEvent(d, EGRESS_ACTOR)));
      if (result instanceof Promise) return result.then(() => undefined);
      return undefined;
    });
  }
}
