/**
 * The indexed lookups of the SQLite log: each is one statement (prepared once per connection)
 * that an index answers, so its cost does not grow with the log — the (stream, version) key, the
 * (stream, type, version) index of the facts, the signature verdicts' digest index, the time index.
 */
import type { EventOf, EventTypeName, KnownEvent } from "../catalog.js";
import { isEventOf } from "../catalog.js";
import type { EgressCandidateQuery, EgressCandidates, EventLookups } from "../port.js";
import { egressStream, STREAM_TYPE_INDEXED, UNINDEXED_TYPES } from "../streams.js";
import type { SqliteEventLog } from "../store.js";
import { EVENT_COLUMNS } from "./rows.js";
import type { EventRow } from "./rows.js";

type Decision = EventOf<"egress.decision">;

/** The term that lets SQLite use the facts' (stream, type, version) index, when every type is in it. */
function indexed(types: readonly string[]): string {
  return types.every((t) => !UNINDEXED_TYPES.has(t)) ? ` AND ${STREAM_TYPE_INDEXED}` : "";
}

/** The first string after every string that starts with `prefix` (its last character moved one up). */
function prefixEnd(prefix: string): string {
  return prefix === "" ? "\u{10FFFF}" : prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/** {@link EventLookups} over one SQLite log. */
export class SqliteLookups implements EventLookups {
  readonly #log: SqliteEventLog;

  constructor(log: SqliteEventLog) {
    this.#log = log;
  }

  #one(sql: string, ...args: (string | number)[]): KnownEvent | null {
    this.#log.assertOpen();
    const row = this.#log.statement<EventRow>(sql).get(...args);
    return row === undefined ? null : this.#log.toEvent(row);
  }

  #all(sql: string, ...args: (string | number)[]): KnownEvent[] {
    this.#log.assertOpen();
    return this.#log.statement<EventRow>(sql).all(...args).map((r) => this.#log.toEvent(r));
  }

  async lastOf<T extends EventTypeName>(stream: string, types: readonly T[], beforeSeq: number): Promise<EventOf<T> | null> {
    let best: EventOf<T> | null = null;
    for (const t of types) {
      const e = this.#one(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = ?${indexed([t])} AND seq < ? ORDER BY version DESC LIMIT 1`, stream, t, beforeSeq);
      if (e !== null && isEventOf(e, types) && (best === null || e.seq > best.seq)) best = e;
    }
    return best;
  }

  async firstAfter<T extends EventTypeName>(stream: string, type: T, afterSeq: number): Promise<EventOf<T> | null> {
    const e = this.#one(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = ?${indexed([type])} AND seq > ? ORDER BY version LIMIT 1`, stream, type, afterSeq);
    return e !== null && isEventOf(e, [type]) ? e : null;
  }

  async newest<T extends EventTypeName>(stream: string, types: readonly T[], limit: number): Promise<EventOf<T>[]> {
    if (types.length === 0) return [];
    const typed = types.length === 1 ? "type = ?" : `type IN (${types.map(() => "?").join(", ")})`;
    const rows = this.#all(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND ${typed}${indexed(types)} ORDER BY version DESC LIMIT ?`, stream, ...types, Math.max(0, Math.floor(limit)));
    return rows.filter((e): e is EventOf<T> => isEventOf(e, types));
  }

  async configVerdict(stream: string, image: string, beforeSeq: number): Promise<EventOf<"config.verdict"> | null> {
    const e = this.#one(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = 'config.verdict' AND ${STREAM_TYPE_INDEXED} AND seq < ? AND json_extract(data, '$.image') = ? ORDER BY version DESC LIMIT 1`,
      stream, beforeSeq, image,
    );
    return e?.type === "config.verdict" ? e : null;
  }

  async signatureVerdict(digest: string, manifest: string | null, beforeSeq = Number.MAX_SAFE_INTEGER): Promise<EventOf<"signature.verdict"> | null> {
    // Rows of version 1 have no manifest: json_extract gives NULL, as for a verdict checked against none.
    const e = manifest === null
      ? this.#one(
        `SELECT ${EVENT_COLUMNS} FROM events WHERE type = 'signature.verdict' AND json_extract(data, '$.digest') = ? AND seq < ? AND json_extract(data, '$.manifest') IS NULL ORDER BY seq DESC LIMIT 1`,
        digest, beforeSeq,
      )
      : this.#one(
        `SELECT ${EVENT_COLUMNS} FROM events WHERE type = 'signature.verdict' AND json_extract(data, '$.digest') = ? AND seq < ? AND json_extract(data, '$.manifest') = ? ORDER BY seq DESC LIMIT 1`,
        digest, beforeSeq, manifest,
      );
    return e?.type === "signature.verdict" ? e : null;
  }

  async seqAt(time: Date): Promise<number> {
    this.#log.assertOpen();
    return this.#log.statement<{ s: number | null }>("SELECT max(seq) AS s FROM events WHERE time <= ?").get(time.toISOString())?.s ?? 0;
  }

  async streamHeads(prefix: string): Promise<{ stream: string; seq: number }[]> {
    this.#log.assertOpen();
    return this.#log.statement<{ stream: string; seq: number }>("SELECT stream, max(seq) AS seq FROM events WHERE stream >= ? AND stream < ? GROUP BY stream ORDER BY stream").all(prefix, prefixEnd(prefix));
  }

  async egressCandidates(q: EgressCandidateQuery): Promise<EgressCandidates> {
    const log = this.#log;
    log.assertOpen();
    const head = (await log.headPoint()).seq;
    let scope: string;
    let scopeArgs: (string | number)[];
    let order: string;
    if (q.plugin === undefined) {
      scope = "stream >= 'egress/' AND stream < 'egress0' AND type = 'egress.decision' AND seq > ? AND seq <= ?";
      scopeArgs = [q.afterSeq, head];
      order = "seq";
    } else {
      const stream = egressStream(q.plugin);
      const v = log.versionsBetweenNow(stream, q.afterSeq, head);
      // An egress stream holds decisions only; its versions are in seq order.
      scope = "stream = ? AND version >= ? AND version <= ?";
      scopeArgs = [stream, v.from, v.to];
      order = "version";
    }
    const bound = log.statement<{ seq: number }>(`SELECT seq FROM events WHERE ${scope} ORDER BY ${order} LIMIT 1 OFFSET ?`).get(...scopeArgs, q.scan - 1)?.seq ?? null;
    const where = [scope, ...(bound === null ? [] : ["seq <= ?"])];
    const args: (string | number)[] = [...scopeArgs, ...(bound === null ? [] : [bound])];
    if (q.allowed !== undefined) { where.push("json_extract(data, '$.allowed') = ?"); args.push(q.allowed ? 1 : 0); }
    if (q.host !== undefined) {
      // SQLite lower-cases ASCII only: a host with any other character is kept for the caller's own comparison.
      where.push("(lower(json_extract(data, '$.host')) = ? OR json_extract(data, '$.host') GLOB '*[^ -~]*')");
      args.push(q.host);
    }
    let sql = `SELECT ${EVENT_COLUMNS} FROM events WHERE ${where.join(" AND ")} ORDER BY ${order}`;
    if (q.limit !== undefined) { sql += " LIMIT ?"; args.push(Math.max(0, Math.floor(q.limit))); }
    // Only the candidates are parsed: the rest of the stretch stays rows SQLite stepped past.
    const candidates = log.statement<EventRow>(sql).all(...args).map((r) => log.toEvent(r) as Decision);
    return { candidates, bound };
  }

  async latestEgressDecisions(plugin: string, maxSeq: number, window: { readonly from: string; readonly to: string }, limit: number): Promise<Decision[]> {
    const stream = egressStream(plugin);
    const v = this.#log.versionsBetweenNow(stream, 0, maxSeq);
    return this.#all(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND version >= ? AND version <= ? AND time >= ? AND time < ? ORDER BY version DESC LIMIT ?`,
      stream, v.from, v.to, window.from, window.to, limit,
    ) as Decision[];
  }
}
