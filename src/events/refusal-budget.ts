/**
 * One policy for refusals a caller can repeat at will — the view gateway's and the egress proxy's
 * refusals before identity (docs/adr/0091): each kind of refusal from one source is recorded one
 * by one up to a budget per window; past it, or past the budget every source shares, the rest of
 * that window is counted and recorded once, as a summary with the count and the first and last
 * time, when the window ends. Nothing is lost from the audit, and a flood costs one event per
 * source and kind per window. Allowed decisions never pass through here.
 *
 * Pure apart from the clock it is given; the caller appends what it says and sweeps it on a timer.
 */

/** The budget's limits. */
export interface RefusalBudgetLimits {
  /** Refusals of one kind from one source recorded one by one per window. */
  readonly perSource: number;
  /** Refusals recorded one by one per window, every source together. */
  readonly total: number;
  /** The window, in milliseconds. */
  readonly windowMs: number;
  /** Sources × kinds tracked at once; past it the oldest is summarised early and forgotten. */
  readonly maxKeys: number;
}

/** The gateway's defaults: 10 of a kind from one source a minute, 200 a minute in all. */
export const REFUSAL_BUDGET_DEFAULTS: RefusalBudgetLimits = { perSource: 10, total: 200, windowMs: 60_000, maxKeys: 4096 };

/** Whether limits are usable: whole numbers, a window of at least a second. Null when they are, else why not. */
export function refusalBudgetProblem(l: RefusalBudgetLimits): string | null {
  for (const k of ["perSource", "total", "maxKeys"] as const) if (!Number.isSafeInteger(l[k]) || l[k] < 0) return `${k} must be a whole number`;
  if (l.maxKeys < 1) return "maxKeys must be at least 1";
  if (!Number.isSafeInteger(l.windowMs) || l.windowMs < 1000) return "windowMs must be a whole number of at least 1000";
  return null;
}

/** One refusal kept for a summary: when, and what the caller said of it. */
export interface Sighting<T> {
  readonly at: number;
  readonly item: T;
}

/** Refusals of one key that were not recorded one by one: how many, the first and the last. */
export interface RefusalSummary<T> {
  readonly key: string;
  readonly count: number;
  readonly first: Sighting<T>;
  readonly last: Sighting<T>;
}

/** A refusal's admission: recorded now, or counted into a summary; with any summaries now due. */
export interface BudgetAdmission<T> {
  readonly record: boolean;
  readonly due: readonly RefusalSummary<T>[];
}

interface Window<T> {
  start: number;
  recorded: number;
  count: number;
  first: Sighting<T> | null;
  last: Sighting<T> | null;
}

/** The budget over keys (`kind` and `source` joined by the caller). */
export class RefusalBudget<T> {
  readonly #l: RefusalBudgetLimits;
  readonly #clock: () => number;
  /** Insertion order is window-start order: every window is as long, so the oldest ends first. */
  readonly #windows = new Map<string, Window<T>>();
  #totalStart: number;
  #totalRecorded = 0;
  #summarised = 0;

  constructor(limits: Partial<RefusalBudgetLimits>, clock: () => number) {
    const l = { ...REFUSAL_BUDGET_DEFAULTS, ...limits };
    const problem = refusalBudgetProblem(l);
    if (problem !== null) throw new RangeError(`refusal budget: ${problem}`);
    this.#l = l;
    this.#clock = clock;
    this.#totalStart = clock();
  }

  /** The limits in force. */
  get limits(): RefusalBudgetLimits {
    return this.#l;
  }

  /** Keys tracked now. */
  get keys(): number {
    return this.#windows.size;
  }

  /** Refusals counted into summaries so far (the summarised counter's source). */
  get summarised(): number {
    return this.#summarised;
  }

  /** Admits one refusal of `key`; `item` describes it for a summary. */
  admit(key: string, item: T): BudgetAdmission<T> {
    const now = this.#clock();
    const due = this.#collect(now, false);
    if (now - this.#totalStart >= this.#l.windowMs) {
      this.#totalStart = now;
      this.#totalRecorded = 0;
    }
    let w = this.#windows.get(key);
    if (w === undefined) {
      if (this.#windows.size >= this.#l.maxKeys) {
        const oldest = this.#windows.keys().next();
        if (oldest.done !== true) {
          const s = this.#close(oldest.value);
          if (s !== null) due.push(s);
        }
      }
      w = { start: now, recorded: 0, count: 0, first: null, last: null };
      this.#windows.set(key, w);
    }
    if (w.recorded < this.#l.perSource && this.#totalRecorded < this.#l.total) {
      w.recorded++;
      this.#totalRecorded++;
      return { record: true, due };
    }
    const seen = { at: now, item };
    w.count++;
    w.first ??= seen;
    w.last = seen;
    this.#summarised++;
    return { record: false, due };
  }

  /** The summaries of windows that have ended (call on a timer, so a quiet source's summary is not held). */
  due(): RefusalSummary<T>[] {
    return this.#collect(this.#clock(), false);
  }

  /** Every pending summary, its window ended or not (at close: nothing counted is left unrecorded). */
  drain(): RefusalSummary<T>[] {
    return this.#collect(this.#clock(), true);
  }

  #collect(now: number, all: boolean): RefusalSummary<T>[] {
    const out: RefusalSummary<T>[] = [];
    for (const [key, w] of this.#windows) {
      if (!all && now - w.start < this.#l.windowMs) break;
      const s = this.#close(key);
      if (s !== null) out.push(s);
    }
    return out;
  }

  #close(key: string): RefusalSummary<T> | null {
    const w = this.#windows.get(key);
    this.#windows.delete(key);
    if (w === undefined || w.count === 0 || w.first === null || w.last === null) return null;
    return { key, count: w.count, first: w.first, last: w.last };
  }
}
