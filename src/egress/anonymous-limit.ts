/**
 * Refusals before identity under the one refusal budget (docs/adr/0091, which replaces ADR 0031's
 * token buckets): a flood of bad CONNECTs must not fill the disk, and must not go unrecorded
 * either. Refusals of one code from one source address are recorded one by one up to a budget a
 * window (and every source together up to another); the rest of the window is counted and
 * recorded as one `egress.refusals` summary with the count and the first and last time.
 */
import { RefusalBudget } from "../events/index.js";
import type { EgressRefusals, RefusalBudgetLimits, RefusalSummary } from "../events/index.js";
import type { AnonymousRecord } from "./decision.js";
import type { Clock } from "./reviewer.js";

/** The limits, in part; the rest are {@link ANONYMOUS_LIMITS}. */
export type AnonymousLimitOptions = Partial<RefusalBudgetLimits> & { readonly clock: Clock };

/** 10 of a code from one source a minute, 120 a minute in all, 4096 codes × sources tracked. */
export const ANONYMOUS_LIMITS: RefusalBudgetLimits = { perSource: 10, total: 120, windowMs: 60_000, maxKeys: 4096 };

/** A refusal's admission: recorded now or counted, with any summaries of ended windows. */
export interface Admission {
  readonly record: boolean;
  readonly due: readonly EgressRefusals[];
}

interface Seen {
  readonly code: string;
  readonly source: string;
}

function summary(s: RefusalSummary<Seen>): EgressRefusals {
  return { code: s.first.item.code, source: s.first.item.source, count: s.count, first: new Date(s.first.at).toISOString(), last: new Date(s.last.at).toISOString() };
}

export class AnonymousRefusalLimit {
  readonly #budget: RefusalBudget<Seen>;

  constructor(o: AnonymousLimitOptions) {
    const { clock, ...limits } = o;
    this.#budget = new RefusalBudget<Seen>({ ...ANONYMOUS_LIMITS, ...limits }, () => clock.now());
  }

  /** Whether a refusal of `code` from `source` is recorded now. */
  admit(code: string, source: string): Admission {
    const a = this.#budget.admit(`${code}\u0000${source}`, { code, source });
    return { record: a.record, due: a.due.map(summary) };
  }

  /** Summaries of windows that have ended (the proxy sweeps on a timer). */
  due(): EgressRefusals[] {
    return this.#budget.due().map(summary);
  }

  /** Every summary still counting (at close). */
  drain(): EgressRefusals[] {
    return this.#budget.drain().map(summary);
  }

  /** The window's length, in ms. */
  get windowMs(): number {
    return this.#budget.limits.windowMs;
  }

  /** Codes × sources tracked now. */
  get sources(): number {
    return this.#budget.keys;
  }
}

/** Where {@link AnonymousRecording} sends records, and what it counts. */
export interface AnonymousSink {
  readonly record?: (r: AnonymousRecord) => void;
  readonly recorded?: () => void;
  readonly summarised?: () => void;
}

/** One refusal before identity, as the proxy knows it. */
export interface AnonymousRefusal {
  readonly code: string;
  readonly source: string;
  readonly host?: string;
  readonly port?: number;
}

/**
 * The proxy's recording of refusals before identity: one by one within the budget, the rest as
 * summaries, swept on a timer so a quiet source's summary is recorded soon after its window, and
 * drained at close so nothing counted is left unrecorded.
 */
export class AnonymousRecording {
  readonly #limit: AnonymousRefusalLimit;
  readonly #sink: AnonymousSink;
  readonly #sweep: NodeJS.Timeout;

  constructor(o: AnonymousLimitOptions, sink: AnonymousSink) {
    this.#limit = new AnonymousRefusalLimit(o);
    this.#sink = sink;
    this.#sweep = setInterval(() => this.#summarise(this.#limit.due()), Math.min(5000, this.#limit.windowMs)).unref();
  }

  /** Records `r` now, or counts it into its summary. */
  refused(r: AnonymousRefusal): void {
    if (this.#sink.record === undefined) return;
    const admitted = this.#limit.admit(r.code, r.source);
    this.#summarise(admitted.due);
    if (!admitted.record) return void this.#sink.summarised?.();
    this.#sink.recorded?.();
    this.#sink.record({ code: r.code, source: r.source, dropped: 0, ...(r.host !== undefined ? { host: r.host } : {}), ...(r.port !== undefined ? { port: r.port } : {}) });
  }

  /** Records every summary still counting and stops the sweep. */
  close(): void {
    clearInterval(this.#sweep);
    this.#summarise(this.#limit.drain());
  }

  #summarise(due: readonly EgressRefusals[]): void {
    for (const s of due) this.#sink.record?.(s);
  }
}
