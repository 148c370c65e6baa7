/**
 * The rate limit on recording refusals before identity (ADR 0031): a flood of bad CONNECTs must
 * not fill the disk. Token buckets: one per source address and one shared by all sources; a
 * refusal is recorded only when both have a token. What is dropped is counted, per source, and
 * carried on that source's next recorded refusal.
 */
import type { Clock } from "./reviewer.js";

/** The limits (ADR 0031's defaults). */
export interface AnonymousLimitOptions {
  /** Refusals one source may have recorded in a burst. */
  readonly perSourceBurst?: number;
  /** One more per this many milliseconds, per source. */
  readonly perSourceRefillMs?: number;
  /** Refusals all sources together may have recorded in a burst. */
  readonly globalBurst?: number;
  /** One more per this many milliseconds, for all sources together. */
  readonly globalRefillMs?: number;
  /** Sources tracked at once; past it the oldest idle one is forgotten. */
  readonly maxSources?: number;
  readonly clock: Clock;
}

/** ADR 0031: 10 per source per minute, 120 per minute in all, 4096 sources tracked. */
export const ANONYMOUS_LIMITS = { perSourceBurst: 10, perSourceRefillMs: 6000, globalBurst: 120, globalRefillMs: 500, maxSources: 4096 } as const;

interface Bucket {
  tokens: number;
  at: number;
  dropped: number;
}

/** Admission to the log: record (carrying the count dropped since the last one), or drop. */
export type Admission = { readonly record: true; readonly dropped: number } | { readonly record: false };

export class AnonymousRefusalLimit {
  readonly #o: Required<AnonymousLimitOptions>;
  readonly #sources = new Map<string, Bucket>();
  readonly #global: Bucket;

  constructor(o: AnonymousLimitOptions) {
    this.#o = { ...ANONYMOUS_LIMITS, ...o };
    this.#global = { tokens: this.#o.globalBurst, at: o.clock.now(), dropped: 0 };
  }

  /** Whether a refusal from `source` is recorded now. */
  admit(source: string): Admission {
    const now = this.#o.clock.now();
    let b = this.#sources.get(source);
    if (b === undefined) {
      if (this.#sources.size >= this.#o.maxSources) {
        // Map order is insertion order: forget the oldest source (its dropped count goes with it,
        // still counted by the caller's metric).
        const oldest = this.#sources.keys().next();
        if (oldest.done !== true) this.#sources.delete(oldest.value);
      }
      b = { tokens: this.#o.perSourceBurst, at: now, dropped: 0 };
      this.#sources.set(source, b);
    }
    refill(b, now, this.#o.perSourceBurst, this.#o.perSourceRefillMs);
    refill(this.#global, now, this.#o.globalBurst, this.#o.globalRefillMs);
    if (b.tokens < 1 || this.#global.tokens < 1) {
      b.dropped++;
      return { record: false };
    }
    b.tokens--;
    this.#global.tokens--;
    const dropped = b.dropped;
    b.dropped = 0;
    return { record: true, dropped };
  }

  /** Sources tracked now. */
  get sources(): number {
    return this.#sources.size;
  }
}

function refill(b: Bucket, now: number, burst: number, everyMs: number): void {
  if (now <= b.at) return;
  const gained = Math.floor((now - b.at) / everyMs);
  if (gained <= 0) return;
  b.tokens = Math.min(burst, b.tokens + gained);
  b.at = b.tokens >= burst ? now : b.at + gained * everyMs;
}
