/**
 * Egress decisions found by SQLite rather than by parsing each: the candidates of a page (the
 * outcome exactly, hosts by a test that keeps every one that could match) within a bounded stretch
 * of decisions, and a plugin's latest decisions of a time window. Within one plugin's stream the
 * reads follow the (stream, version) order, so they never sort the stream however long it is.
 */
import { egressStream, EVENT_COLUMNS, toStoredEvent } from "../events/index.js";
import type { EventOf, EventRow, EventStore } from "../events/index.js";

type Decision = EventOf<"egress.decision">;

/** Which decisions to look at, and what a candidate must be. */
export interface CandidateQuery {
  readonly plugin?: string;
  /** Look only after this seq, at no more than `scan` decisions. */
  readonly afterSeq: number;
  readonly scan: number;
  readonly allowed?: boolean;
  /** Lower case; candidates are every decision whose host could lower-case to it. */
  readonly host?: string;
}

/**
 * The candidates among the next `scan` decisions after `afterSeq`, in seq order, and the seq of
 * the last decision looked at when there were `scan` of them (null when fewer).
 */
export function egressCandidates(store: EventStore, q: CandidateQuery): { readonly candidates: Iterable<Decision>; readonly bound: number | null } {
  const head = store.head();
  let scope: string;
  let scopeArgs: (string | number)[];
  let order: string;
  if (q.plugin === undefined) {
    scope = "stream >= 'egress/' AND stream < 'egress0' AND type = 'egress.decision' AND seq > ? AND seq <= ?";
    scopeArgs = [q.afterSeq, head];
    order = "seq";
  } else {
    const stream = egressStream(q.plugin);
    const v = store.versionsBetween(stream, q.afterSeq, head);
    // An egress stream holds decisions only; its versions are in seq order.
    scope = "stream = ? AND version >= ? AND version <= ?";
    scopeArgs = [stream, v.from, v.to];
    order = "version";
  }
  const bound = store.database.prepare<(string | number)[], { seq: number }>(`SELECT seq FROM events WHERE ${scope} ORDER BY ${order} LIMIT 1 OFFSET ?`).get(...scopeArgs, q.scan - 1)?.seq ?? null;
  const where = [scope, ...(bound === null ? [] : ["seq <= ?"])];
  const args: (string | number)[] = [...scopeArgs, ...(bound === null ? [] : [bound])];
  if (q.allowed !== undefined) { where.push("json_extract(data, '$.allowed') = ?"); args.push(q.allowed ? 1 : 0); }
  if (q.host !== undefined) {
    // SQLite lower-cases ASCII only: a host with any other character is kept for the caller's own comparison.
    where.push("(lower(json_extract(data, '$.host')) = ? OR json_extract(data, '$.host') GLOB '*[^ -~]*')");
    args.push(q.host);
  }
  const rows = store.database.prepare<(string | number)[], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE ${where.join(" AND ")} ORDER BY ${order}`).iterate(...args);
  return { candidates: (function* () { for (const r of rows) yield toStoredEvent(store.registry, r) as Decision; })(), bound };
}

/** A plugin's latest `limit` decisions up to `maxSeq` made in [from, to) (ISO times), newest first. */
export function latestEgressDecisions(store: EventStore, plugin: string, maxSeq: number, window: { readonly from: string; readonly to: string }, limit: number): Decision[] {
  const stream = egressStream(plugin);
  const v = store.versionsBetween(stream, 0, maxSeq);
  return store.database.prepare<[string, number, number, string, string, number], EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND version >= ? AND version <= ? AND time >= ? AND time < ? ORDER BY version DESC LIMIT ?`,
  ).all(stream, v.from, v.to, window.from, window.to, limit).map((r) => toStoredEvent(store.registry, r) as Decision);
}
