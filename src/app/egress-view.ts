/**
 * The egress proxy's decisions as an owner reads them: a page of decisions filtered by plugin,
 * destination host and outcome, and a summary over a time window — for each plugin the
 * destinations it was allowed and refused, with counts, and the counts over time in equal buckets
 * (the console's chart). Every read is bounded: a page scans at most {@link MAX_EGRESS_SCAN}
 * decisions, a summary counts at most {@link MAX_EGRESS_SUMMARY} and says when it stopped short.
 */
import { decisionOutcome } from "../egress/index.js";
import { egressStream } from "../events/index.js";
import type { EventOf, EventStore, ReadFilter } from "../events/index.js";
import { AppError } from "./errors.js";
import { checkLogQuery } from "./log.js";

/**
 * An egress decision's outcome, as the faces name it: allowed; refused by policy (not granted, a
 * forbidden address); or failed (granted, but the name did not resolve).
 */
export type EgressOutcome = "allowed" | "refused" | "failed";

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
/** The most decisions a summary counts. */
export const MAX_EGRESS_SUMMARY = 50_000;
/** The most buckets a summary's counts over time have. */
export const MAX_EGRESS_BUCKETS = 200;
/** The longest host name a filter may hold (a DNS name's limit). */
const MAX_HOST = 253;

type Decision = EventOf<"egress.decision">;

function row(e: Decision): EgressDecisionRow {
  const d = e.data;
  return { seq: e.seq, time: e.time, plugin: d.plugin, host: d.host, port: d.port, outcome: decisionOutcome(d), reason: d.reason, address: d.address ?? null };
}

function checkQuery(store: EventStore, q: { plugin?: string; host?: string }): void {
  checkLogQuery(store, q.plugin === undefined ? {} : { plugin: q.plugin });
  if (q.host !== undefined && (q.host.length === 0 || q.host.length > MAX_HOST)) throw new AppError("usage", `host must be 1 to ${MAX_HOST} characters`, "host");
}

/** Egress decisions, of one plugin or of all. */
function readDecisions(store: EventStore, plugin: string | undefined, f: Omit<ReadFilter, "type" | "stream" | "streamPrefix">): Decision[] {
  return store.read({ ...f, type: "egress.decision", ...(plugin === undefined ? { streamPrefix: "egress/" } : { stream: egressStream(plugin) }) });
}

/** A page of decisions matching `q`, in sequence order. */
export function egressDecisions(store: EventStore, q: EgressQuery): EgressPage {
  checkQuery(store, q);
  const limit = q.limit ?? 100;
  const host = q.host?.toLowerCase();
  const out: EgressDecisionRow[] = [];
  let cursor = q.afterSeq ?? 0;
  let scanned = 0;
  const head = store.head();
  while (out.length < limit && scanned < MAX_EGRESS_SCAN) {
    const want = Math.min(1000, MAX_EGRESS_SCAN - scanned);
    const page = readDecisions(store, q.plugin, { afterSeq: cursor, toSeq: head, limit: want });
    for (const e of page) {
      scanned += 1;
      cursor = e.seq;
      const r = row(e);
      if ((host === undefined || r.host.toLowerCase() === host) && (q.outcome === undefined || r.outcome === q.outcome)) out.push(r);
      if (out.length === limit) return { decisions: out, next: cursor };
    }
    if (page.length < want) return { decisions: out, next: null };
  }
  return { decisions: out, next: cursor };
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
  /** True when the window held more than {@link MAX_EGRESS_SUMMARY} decisions: only the earliest were counted. */
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

interface Tally { allowed: number; refused: number; failed: number; last: EgressDecisionRow }

const total = (t: { allowed: number; refused: number; failed: number }): number => t.allowed + t.refused + t.failed;

function byConcern(a: EgressDestination, b: EgressDestination): number {
  return b.refused + b.failed - (a.refused + a.failed) || total(b) - total(a) || (a.host < b.host ? -1 : a.host > b.host ? 1 : a.port - b.port);
}

/** Counts the decisions between `since` and `until` by plugin and destination, and over time. */
export function egressSummary(store: EventStore, o: EgressSummaryOptions): EgressSummary {
  checkQuery(store, o);
  const from = o.since.getTime();
  const to = o.until.getTime();
  if (!(to > from)) throw new AppError("usage", "the window must end after it starts", "until");
  const n = o.buckets ?? 24;
  if (!Number.isInteger(n) || n < 1 || n > MAX_EGRESS_BUCKETS) throw new AppError("usage", `buckets must be a whole number from 1 to ${MAX_EGRESS_BUCKETS}`, "buckets");
  const width = (to - from) / n;
  const buckets = Array.from({ length: n }, (_, i) => ({ start: new Date(from + i * width).toISOString(), end: new Date(from + (i + 1) * width).toISOString(), allowed: 0, refused: 0, failed: 0 }));
  const plugins = new Map<string, Map<string, Tally>>();
  const events = readDecisions(store, o.plugin, { since: o.since, until: o.until, limit: MAX_EGRESS_SUMMARY + 1 });
  const counted = events.slice(0, MAX_EGRESS_SUMMARY);
  const counts = { allowed: 0, refused: 0, failed: 0 };
  for (const e of counted) {
    const r = row(e);
    const b = buckets[Math.min(n - 1, Math.max(0, Math.floor((Date.parse(r.time) - from) / width)))];
    if (b !== undefined) b[r.outcome] += 1;
    counts[r.outcome] += 1;
    const dests = plugins.get(r.plugin) ?? new Map<string, Tally>();
    plugins.set(r.plugin, dests);
    // Host names compare without case (as the proxy matches them): one destination, however written.
    const key = `${r.host.toLowerCase()}\u0000${r.port}`;
    const t = dests.get(key) ?? { allowed: 0, refused: 0, failed: 0, last: r };
    t[r.outcome] += 1;
    t.last = r;
    dests.set(key, t);
  }
  const summaries = [...plugins].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([plugin, dests]) => {
    const destinations = [...dests.values()].map((t) => ({ host: t.last.host.toLowerCase(), port: t.last.port, allowed: t.allowed, refused: t.refused, failed: t.failed, last: t.last })).sort(byConcern);
    const sum = (k: EgressOutcome): number => destinations.reduce((s, d) => s + d[k], 0);
    return { plugin, allowed: sum("allowed"), refused: sum("refused"), failed: sum("failed"), destinations };
  });
  return { since: o.since.toISOString(), until: o.until.toISOString(), ...counts, plugins: summaries, buckets,
    recent: counted.slice(-RECENT).reverse().map(row), truncated: events.length > MAX_EGRESS_SUMMARY };
}
