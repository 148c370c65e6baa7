/**
 * The egress proxy's decisions as an owner reads them: a page of decisions filtered by plugin,
 * destination host and outcome, and a summary over a time window — for each plugin the
 * destinations it was allowed and refused, with counts, and the counts over time in equal buckets
 * (the console's chart). Every read is bounded: a page scans at most {@link MAX_EGRESS_SCAN}
 * decisions; a summary reads the counts kept as decisions arrive (ADR 0100), a number of rows set by
 * the window's shape and its destinations, not by how many decisions it holds.
 */
import { egressDecisionOutcome } from "../events/index.js";
import type { EgressOutcome, EventOf, EventLog } from "../events/index.js";
import { egressCounts } from "../projections/index.js";
import { AppError } from "./errors.js";
import { checkLogQuery } from "./log.js";

export type { EgressOutcome };

/** Every outcome, in the order the faces show them. */
export const EGRESS_OUTCOMES: readonly EgressOutcome[] = ["allowed", "refused", "failed"];

/** Which decisions to read. */
export interface EgressQuery {
  readonly plugin?: string;
  /** Only decisions about this destination host (compared case-insensitively). */
  readonly host?: string;
  readonly outcome?: EgressOutcome;
  readonly afterSeq?: number;
  readonly limit?: number;
}

/** One decision. */
export interface EgressDecisionRow {
  readonly seq: number;
  readonly time: string;
  readonly plugin: string;
  readonly host: string;
  readonly port: number;
  readonly outcome: EgressOutcome;
  readonly reason: string;
  /** The address dialled, when the decision resolved one. */
  readonly address: string | null;
}

/** A page of decisions. */
export interface EgressPage {
  readonly decisions: readonly EgressDecisionRow[];
  /** The `afterSeq` to continue from, or null when every decision so far was read. */
  readonly next: number | null;
}

/** The most decisions one page looks at, matching or not. */
export const MAX_EGRESS_SCAN = 10_000;
/** The most buckets a summary's counts over time have. */
export const MAX_EGRESS_BUCKETS = 200;
/** The longest host name a filter may hold (a DNS name's limit). */
const MAX_HOST = 253;

type Decision = EventOf<"egress.decision">;

function row(e: Decision): EgressDecisionRow {
  const d = e.data;
  return { seq: e.seq, time: e.time, plugin: d.plugin, host: d.host, port: d.port, outcome: egressDecisionOutcome(d), reason: d.reason, address: d.address ?? null };
}

function checkQuery(store: EventLog, q: { plugin?: string; host?: string }): void {
  checkLogQuery(store, q.plugin === undefined ? {} : { plugin: q.plugin });
  if (q.host !== undefined && (q.host.length === 0 || q.host.length > MAX_HOST)) throw new AppError("usage", `host must be 1 to ${MAX_HOST} characters`, "host");
}

/**
 * A page of decisions matching `q`, in sequence order, among the next {@link MAX_EGRESS_SCAN}
 * decisions after `afterSeq`. The log picks the candidates (at most a page of them at a time), so
 * only those are parsed; the host is then compared as the proxy compares it.
 */
export async function egressDecisions(store: EventLog, q: EgressQuery): Promise<EgressPage> {
  checkQuery(store, q);
  const limit = q.limit ?? 100;
  const host = q.host?.toLowerCase();
  const filter = candidateFilter(q, host);
  // The candidates are chosen by allowed or not, the host by a test that keeps more than it: both are compared here.
  const matches = (d: EgressDecisionRow): boolean => (host === undefined || d.host.toLowerCase() === host) && (q.outcome === undefined || d.outcome === q.outcome);
  const out: EgressDecisionRow[] = [];
  const first = await store.lookups.egressCandidates({ afterSeq: q.afterSeq ?? 0, scan: MAX_EGRESS_SCAN, limit, ...filter });
  // The scan's end is the first read's: a later read (past candidates that did not match) stops there too.
  const bound = first.bound;
  for (let page = first; ;) {
    const last = page.candidates.at(-1)?.seq;
    for (const e of page.candidates) {
      if (bound !== null && e.seq > bound) return { decisions: out, next: bound };
      const d = row(e);
      if (!matches(d)) continue;
      out.push(d);
      if (out.length === limit) return { decisions: out, next: d.seq };
    }
    // Fewer candidates than asked: the scan is done. Else some did not match after all: read on.
    if (page.candidates.length < limit || last === undefined) return { decisions: out, next: bound };
    page = await store.lookups.egressCandidates({ afterSeq: last, scan: MAX_EGRESS_SCAN, limit, ...filter });
  }
}

/** What the log's candidates are chosen by: the plugin, the host (lower case), allowed or not. */
function candidateFilter(q: EgressQuery, host: string | undefined): { plugin?: string; host?: string; allowed?: boolean } {
  return { ...(q.plugin === undefined ? {} : { plugin: q.plugin }), ...(host === undefined ? {} : { host }), ...(q.outcome === undefined ? {} : { allowed: q.outcome === "allowed" }) };
}

/** A destination of one plugin, with what was decided about it. */
export interface EgressDestination {
  readonly host: string;
  readonly port: number;
  readonly allowed: number;
  readonly refused: number;
  readonly failed: number;
  /** The latest decision about it. */
  readonly last: EgressDecisionRow;
}

/** One plugin's destinations, refused and failed ones first, then by count. */
export interface EgressPluginSummary {
  readonly plugin: string;
  readonly allowed: number;
  readonly refused: number;
  readonly failed: number;
  readonly destinations: readonly EgressDestination[];
}

/** The counts in one bucket of time. */
export interface EgressBucket {
  readonly start: string;
  readonly end: string;
  readonly allowed: number;
  readonly refused: number;
  readonly failed: number;
}

/** The decisions of a time window, counted. */
export interface EgressSummary {
  readonly since: string;
  readonly until: string;
  readonly allowed: number;
  readonly refused: number;
  readonly failed: number;
  readonly plugins: readonly EgressPluginSummary[];
  readonly buckets: readonly EgressBucket[];
  /** The latest decisions counted, newest first (at most {@link RECENT}). */
  readonly recent: readonly EgressDecisionRow[];
  /**
   * Always false: every decision of the window is counted (from counts kept as decisions arrive).
   * Kept for the clients that read it, from when a summary counted at most 50,000 decisions.
   */
  readonly truncated: boolean;
}

/** How many of the latest decisions a summary lists. */
export const RECENT = 20;

/** Options of {@link egressSummary}. */
export interface EgressSummaryOptions {
  readonly plugin?: string;
  readonly since: Date;
  readonly until: Date;
  /** How many equal buckets the window is cut into (default 24). */
  readonly buckets?: number;
}

const total = (t: { allowed: number; refused: number; failed: number }): number => t.allowed + t.refused + t.failed;

function byConcern(a: EgressDestination, b: EgressDestination): number {
  return b.refused + b.failed - (a.refused + a.failed) || total(b) - total(a) || (a.host < b.host ? -1 : a.host > b.host ? 1 : a.port - b.port);
}

const SECOND = 1000;
const floorSecond = (t: number): number => Math.floor(t / SECOND) * SECOND;
const ceilSecond = (t: number): number => Math.ceil(t / SECOND) * SECOND;

/**
 * Counts the decisions between `since` and `until` by plugin and destination, and over time, from
 * the counts kept as decisions arrive (ADR 0100): a decision counts by the second it was made in,
 * so the window is the whole seconds from the one holding `since` to the one holding `until`, and
 * a bucket holds the seconds that start in it (the first also the one holding `since`, the last
 * also the one holding `until`).
 */
export async function egressSummary(store: EventLog, o: EgressSummaryOptions): Promise<EgressSummary> {
  checkQuery(store, o);
  const from = o.since.getTime();
  const to = o.until.getTime();
  if (!(to > from)) throw new AppError("usage", "the window must end after it starts", "until");
  const n = o.buckets ?? 24;
  if (!Number.isInteger(n) || n < 1 || n > MAX_EGRESS_BUCKETS) throw new AppError("usage", `buckets must be a whole number from 1 to ${MAX_EGRESS_BUCKETS}`, "buckets");
  const width = (to - from) / n;
  const buckets = Array.from({ length: n }, (_, i) => ({ start: new Date(from + i * width).toISOString(), end: new Date(from + (i + 1) * width).toISOString(), allowed: 0, refused: 0, failed: 0 }));
  const counts = egressCounts(store);
  await counts.catchUp();
  const first = floorSecond(from);
  const last = floorSecond(to);
  type Counted = { allowed: number; refused: number; failed: number };
  const add = (into: Counted, r: Counted): void => { into.allowed += r.allowed; into.refused += r.refused; into.failed += r.failed; };
  const plugins = new Map<string, CountedPlugin>();
  const sums: Counted = { allowed: 0, refused: 0, failed: 0 };
  for (const [i, b] of buckets.entries()) {
    const lo = i === 0 ? first : ceilSecond(from + i * width);
    const hi = i === n - 1 ? last + SECOND : ceilSecond(from + (i + 1) * width);
    await counts.visit(lo, hi, o.plugin, (r) => {
      add(b, r);
      add(sums, r);
      let p = plugins.get(r.plugin);
      if (p === undefined) { p = { count: 0, lastSeq: 0, dests: new Map() }; plugins.set(r.plugin, p); }
      p.count += total(r);
      p.lastSeq = Math.max(p.lastSeq, r.lastSeq);
      const key = `${r.host}\u0000${r.port}`;
      const d = p.dests.get(key) ?? { host: r.host, port: r.port, allowed: 0, refused: 0, failed: 0, lastSeq: 0 };
      add(d, r);
      d.lastSeq = Math.max(d.lastSeq, r.lastSeq);
      p.dests.set(key, d);
    });
  }
  const window = { from: new Date(first).toISOString(), to: new Date(last + SECOND).toISOString() };
  const [summaries, recent] = [await pluginSummaries(store, plugins), await latestDecisions(store, plugins, window)];
  return { since: o.since.toISOString(), until: o.until.toISOString(), ...sums, plugins: summaries, buckets, recent, truncated: false };
}

type CountedPlugin = { count: number; lastSeq: number; dests: Map<string, { host: string; port: number; allowed: number; refused: number; failed: number; lastSeq: number }> };

/** Each plugin's destinations, the latest decision about each read back from the log. */
async function pluginSummaries(store: EventLog, plugins: ReadonlyMap<string, CountedPlugin>): Promise<EgressPluginSummary[]> {
  const decision = async (seq: number): Promise<EgressDecisionRow> => {
    const e = await store.get(seq);
    if (e?.type !== "egress.decision") throw new Error(`the egress counts name event ${seq}, which is not an egress decision`);
    return row(e);
  };
  const summaries: EgressPluginSummary[] = [];
  for (const [plugin, p] of [...plugins].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const destinations: EgressDestination[] = [];
    for (const d of p.dests.values()) destinations.push({ host: d.host, port: d.port, allowed: d.allowed, refused: d.refused, failed: d.failed, last: await decision(d.lastSeq) });
    destinations.sort(byConcern);
    const sum = (k: EgressOutcome): number => destinations.reduce((s, d) => s + d[k], 0);
    summaries.push({ plugin, allowed: sum("allowed"), refused: sum("refused"), failed: sum("failed"), destinations });
  }
  return summaries;
}

/** The latest decisions of the window: each plugin's own, read back from its stream (no more than the window holds), merged. */
async function latestDecisions(store: EventLog, plugins: ReadonlyMap<string, CountedPlugin>, window: { from: string; to: string }): Promise<EgressDecisionRow[]> {
  const latest: Decision[] = [];
  for (const [plugin, p] of plugins) latest.push(...(await store.lookups.latestEgressDecisions(plugin, p.lastSeq, window, Math.min(RECENT, p.count))));
  return latest.sort((a, b) => b.seq - a.seq).slice(0, RECENT).map(row);
}
