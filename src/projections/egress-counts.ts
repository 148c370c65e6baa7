/**
 * The egress proxy's decisions counted as they arrive: for each second, minute, hour and day (UTC)
 * in which a plugin's decisions about one destination were made, how many were allowed, how many
 * refused, and the seq of the latest. Counting a window then reads, per destination, whole days
 * inside it and hours, minutes and seconds only at its edges — a number of rows bounded by the
 * window's shape, not by how many decisions it holds (ADR 0100).
 *
 * Like the other projections it has a checkpoint, catches up from it, and is rebuilt from zero
 * when its version changes. Counts are added, so a catch-up commits only if the checkpoint it
 * started from is still the table's: two processes catching up at once never count an event twice.
 */
import { EGRESS_FAILURE_CODES } from "../events/index.js";
import type { EgressCountRow, EgressCountTable, EgressDecisionFacts, EventLog } from "../events/index.js";

export type { EgressCountRow } from "../events/index.js";

/** The units counted, finest first: a second, a minute, an hour, a day (ms). */
export const COUNT_UNITS = [1_000, 60_000, 3_600_000, 86_400_000] as const;

// 2: failures to reach counted apart from refusals by policy.
const VERSION = 2;
/** Seqs read per transaction: a long catch-up commits in steps and never holds the write lock long. */
const STEP = 20_000;

/** A whole-second span of one unit: rows of `level` starting in [from, to). */
interface Span { readonly level: number; readonly from: number; readonly to: number }

/**
 * [lo, hi) (whole seconds) as the fewest aligned spans: whole days inside it, then hours, minutes
 * and seconds towards each edge — at most seven.
 */
export function countSpans(lo: number, hi: number, level = COUNT_UNITS.length - 1): Span[] {
  if (lo >= hi) return [];
  if (level === 0) return [{ level, from: lo, to: hi }];
  const unit = COUNT_UNITS[level] as number;
  const a = Math.ceil(lo / unit) * unit;
  const b = Math.floor(hi / unit) * unit;
  if (a >= b) return countSpans(lo, hi, level - 1);
  return [...countSpans(lo, a, level - 1), { level, from: a, to: b }, ...countSpans(b, hi, level - 1)];
}

interface Tally { level: number; start: number; plugin: string; host: string; port: number; allowed: number; refused: number; failed: number; lastSeq: number }

/** The counts table of one log, caught up on demand. */
export class EgressCounts {
  readonly #store: EventLog;
  #opened: Promise<void> | null = null;
  /** Catch-ups one at a time (two at once would only find each other's checkpoint moved and read again). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(store: EventLog) {
    this.#store = store;
  }

  /** The seq the counts reflect. */
  async checkpoint(): Promise<number> {
    await this.#open();
    return this.#table.checkpoint();
  }

  /**
   * Counts every decision appended after the checkpoint, up to the log's head, in steps of
   * {@link STEP} seqs, each its own transaction (at most `steps` of them); returns how many it counted.
   */
  catchUp(steps = Number.POSITIVE_INFINITY): Promise<number> {
    return this.#serial(() => this.#catchUp(steps));
  }

  /** Drops the counts and counts the whole log again. */
  rebuild(): Promise<number> {
    return this.#serial(async () => {
      await this.#open();
      await this.#table.reset();
      return this.#catchUp(Number.POSITIVE_INFINITY);
    });
  }

  /** Visits every row of the whole seconds [lo, hi) (of one plugin when named), coarsest first. */
  async visit(lo: number, hi: number, plugin: string | undefined, fn: (r: EgressCountRow) => void): Promise<void> {
    await this.#open();
    for (const s of countSpans(lo, hi)) {
      for (const r of await this.#table.rows(s.level, s.from, s.to, plugin)) fn(r);
    }
  }

  /** The log's table. */
  get #table(): EgressCountTable {
    return this.#store.tables.egressCounts;
  }

  #open(): Promise<void> {
    this.#opened ??= this.#table.open(VERSION).catch((err: unknown) => {
      this.#opened = null;
      throw err;
    });
    return this.#opened;
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #catchUp(steps: number): Promise<number> {
    await this.#open();
    const head = await this.#store.head();
    let counted = 0;
    for (let from = await this.#table.checkpoint(), step = 0; from < head && step < steps; step++) {
      const to = Math.min(head, from + STEP);
      const tallies = tally(await this.#table.decisions(from, to));
      // False when another process counted these seqs meanwhile: read on from where it got to.
      if (!(await this.#table.add(from, to, [...tallies.values()]))) { from = await this.#table.checkpoint(); continue; }
      for (const t of tallies.values()) if (t.level === 0) counted += t.allowed + t.refused + t.failed;
      from = to;
    }
    return counted;
  }
}

/** The decisions counted per unit, plugin and destination. */
function tally(decisions: readonly EgressDecisionFacts[]): Map<string, Tally> {
  const out = new Map<string, Tally>();
  for (const { seq, time, plugin, host: rawHost, port, allowed, reason } of decisions) {
    const t = Date.parse(time);
    // The same rule as the summary's reference: host names compare without case (as the proxy matches them).
    const host = rawHost.toLowerCase();
    for (let level = 0; level < COUNT_UNITS.length; level++) {
      const unit = COUNT_UNITS[level] as number;
      const start = Math.floor(t / unit) * unit;
      const key = `${level}\u0000${start}\u0000${plugin}\u0000${host}\u0000${port}`;
      let tally = out.get(key);
      if (tally === undefined) { tally = { level, start, plugin, host, port, allowed: 0, refused: 0, failed: 0, lastSeq: 0 }; out.set(key, tally); }
      if (allowed) tally.allowed++;
      else if (EGRESS_FAILURE_CODES.has(reason)) tally.failed++;
      else tally.refused++;
      tally.lastSeq = seq;
    }
  }
  return out;
}

const opened = new WeakMap<EventLog, EgressCounts>();

/** The counts of a log (one per log object, made on first use). */
export function egressCounts(store: EventLog): EgressCounts {
  let c = opened.get(store);
  if (c === undefined) { c = new EgressCounts(store); opened.set(store, c); }
  return c;
}
