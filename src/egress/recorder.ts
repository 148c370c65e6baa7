/**
 * Recording egress decisions (issue 6): every decision of an identified plugin is appended to the
 * `egress/<plugin>` stream and committed before the tunnel carries a byte. Appends from concurrent
 * CONNECTs are gathered for one tick and written in one transaction, so recording costs one
 * commit per burst rather than one per CONNECT.
 */
import { anonymousEvent, egressDecisionEvent, type AnonymousRecord, type EgressDecisionRecord } from "./decision.js";

/** Durably records one decision; resolves only once it is committed, rejects if it cannot be. */
export interface DecisionRecorder {
  record(decision: EgressDecisionRecord): Promise<void>;
  /**
   * Records a refusal before identity, or a summary of those past their budget, best effort: the
   * answer never waits for it (the CONNECT is refused either way) and a failure is only reported
   * to the recorder's error callback. Absent: such refusals are counted and logged, not recorded.
   */
  recordRefusal?(refusal: AnonymousRecord): void;
  /** Commits what is queued and lets go of its resources; the proxy calls it at the end of `close`. */
  close?(): Promise<void>;
  /** Decisions waiting for their commit now (the `commits_waiting` gauge); absent: none are kept waiting. */
  readonly waiting?: number;
}

/**
 * Gathers items until the current tick ends, hands them to `write` in one call, then settles
 * every caller: all resolve when the write succeeds, all reject when it throws.
 */
export class Batcher<T> {
  readonly #write: (batch: readonly T[]) => void | Promise<void>;
  #pending: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = [];
  #scheduled = false;

  constructor(write: (batch: readonly T[]) => void | Promise<void>) {
    this.#write = write;
  }

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
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
      await this.#write(batch.map((p) => p.item));
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}

/** A recorder of decisions batched per tick (see {@link Batcher}). */
export class BatchingDecisionRecorder implements DecisionRecorder {
  readonly #batcher: Batcher<EgressDecisionRecord>;

  constructor(write: (batch: readonly EgressDecisionRecord[]) => void | Promise<void>) {
    this.#batcher = new Batcher(write);
  }

  record(decision: EgressDecisionRecord): Promise<void> {
    return this.#batcher.add(decision);
  }
}

/** The slice of the event log this recorder uses (a batch appended in one transaction). */
export interface EventAppender {
  append(events: readonly { stream: string; type: string; data: unknown; actor: string }[]): Promise<unknown>;
}

/** The actor of every egress decision event. */
export const EGRESS_ACTOR = "egress-proxy";

async function settled(result: Promise<unknown>): Promise<void> {
  await result;
}

/**
 * Records decisions as `egress.decision` events, one transaction per batch, and refusals before
 * identity as `egress.refused` events (batched the same way, never awaited by the proxy).
 */
export class StoreDecisionRecorder extends BatchingDecisionRecorder {
  readonly #refusals: Batcher<AnonymousRecord>;
  readonly #onError: (err: unknown) => void;

  constructor(store: EventAppender, onError: (err: unknown) => void = () => undefined) {
    // The store's append is one transaction: either the whole batch commits or none of it.
    super((batch) => settled(store.append(batch.map((d) => egressDecisionEvent(d, EGRESS_ACTOR)))));
    this.#refusals = new Batcher((batch) => settled(store.append(batch.map((r) => anonymousEvent(r, EGRESS_ACTOR)))));
    this.#onError = onError;
  }

  recordRefusal(refusal: AnonymousRecord): void {
    this.#refusals.add(refusal).catch(this.#onError);
  }
}
