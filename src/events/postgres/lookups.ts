/**
 * The PostgreSQL log's lookups: each one statement whose cost does not grow with the log (an
 * index probe or a bounded index range; see docs/adr/0125 for the index behind each). A bound on
 * seqs within a stream is turned into a bound on its versions by `events_version_after`, so that
 * UNIQUE (stream, version) and the (stream, type, version) index serve it in order.
 */
import type { EventOf, EventTypeName, KnownEvent } from "../catalog.js";
import type { RawEventRow } from "../chain.js";
import type { EgressCandidateQuery, EgressCandidates, EventLookups } from "../port.js";
import type { EventRegistry } from "../registry.js";
import { eventOfRow } from "../rows.js";
import { egressStream, STREAM_TYPE_INDEXED, UNINDEXED_TYPES } from "../streams.js";
import type { Db } from "./db.js";
import { RAW_COLUMNS } from "./sql.js";

/** The highest code point: `prefix + TOP` bounds every name that starts with `prefix` (names compare by bytes). */
const TOP = "\u{10FFFF}";

/** The latest (or first) event of one type in a stream within a stretch of versions, as one subquery. */
function ofType(type: string, param: string, order: "ASC" | "DESC", versionTerm: string, limit: string): string {
  const indexed = UNINDEXED_TYPES.has(type) ? "" : ` AND ${STREAM_TYPE_INDEXED}`;
  return `(SELECT ${RAW_COLUMNS} FROM events WHERE stream = $1 AND type = ${param}${indexed} AND ${versionTerm} ORDER BY version ${order} LIMIT ${limit})`;
}

/** Whether `e` is of one of `types` (the query asked for no other). */
function isOf<T extends EventTypeName>(e: KnownEvent, types: readonly T[]): e is EventOf<T> {
  return (types as readonly string[]).includes(e.type);
}

export class PostgresLookups implements EventLookups {
  readonly #db: Db;
  readonly #registry: EventRegistry;

  constructor(db: Db, registry: EventRegistry) {
    this.#db = db;
    this.#registry = registry;
  }

  async #events(doing: string, text: string, values: readonly unknown[]): Promise<KnownEvent[]> {
    return (await this.#db.rows<RawEventRow>(doing, text, values)).map((r) => eventOfRow(this.#registry, r));
  }

  async lastOf<T extends EventTypeName>(stream: string, types: readonly T[], beforeSeq: number): Promise<EventOf<T> | null> {
    if (types.length === 0) return null;
    const parts = types.map((t, i) => ofType(t, `$${i + 3}`, "DESC", "version < events_version_after($1, $2::bigint - 1)", "1"));
    const [e] = await this.#events("lastOf", `SELECT * FROM (${parts.join(" UNION ALL ")}) u ORDER BY version DESC LIMIT 1`, [stream, beforeSeq, ...types]);
    return e !== undefined && isOf(e, types) ? e : null;
  }

  async firstAfter<T extends EventTypeName>(stream: string, type: T, afterSeq: number): Promise<EventOf<T> | null> {
    const [e] = await this.#events("firstAfter", ofType(type, "$3", "ASC", "version >= events_version_after($1, $2)", "1"), [stream, afterSeq, type]);
    return e !== undefined && isOf(e, [type]) ? e : null;
  }

  async newest<T extends EventTypeName>(stream: string, types: readonly T[], limit: number): Promise<EventOf<T>[]> {
    const n = Math.max(0, Math.floor(limit));
    if (types.length === 0 || n === 0) return [];
    const parts = types.map((t, i) => ofType(t, `$${i + 3}`, "DESC", "true", "$2"));
    const events = await this.#events("newest", `SELECT * FROM (${parts.join(" UNION ALL ")}) u ORDER BY version DESC LIMIT $2`, [stream, n, ...types]);
    return events.filter((e): e is EventOf<T> => isOf(e, types));
  }

  async configVerdict(stream: string, image: string, beforeSeq: number): Promise<EventOf<"config.verdict"> | null> {
    const [e] = await this.#events("configVerdict",
      `SELECT ${RAW_COLUMNS} FROM events WHERE type = 'config.verdict' AND stream = $1 AND (data::jsonb ->> 'image') = $2 AND seq < $3 ORDER BY seq DESC LIMIT 1`,
      [stream, image, beforeSeq]);
    return e?.type === "config.verdict" ? e : null;
  }

  async signatureVerdict(digest: string, manifest: string | null, beforeSeq?: number): Promise<EventOf<"signature.verdict"> | null> {
    const manifestTerm = manifest === null ? "(data::jsonb ->> 'manifest') IS NULL" : "(data::jsonb ->> 'manifest') = $3";
    const values: unknown[] = [digest, beforeSeq ?? Number.MAX_SAFE_INTEGER];
    if (manifest !== null) values.push(manifest);
    const [e] = await this.#events("signatureVerdict",
      `SELECT ${RAW_COLUMNS} FROM events WHERE type = 'signature.verdict' AND (data::jsonb ->> 'digest') = $1 AND ${manifestTerm} AND seq < $2 ORDER BY seq DESC LIMIT 1`,
      values);
    return e?.type === "signature.verdict" ? e : null;
  }

  async seqAt(time: Date): Promise<number> {
    // Times rise with seqs (each append stamps its time under the write lock): the latest event
    // at a time is the last entry of (time, seq) at or before it.
    const r = await this.#db.row<{ seq: number }>("seqAt", "SELECT seq FROM events WHERE time <= $1 ORDER BY time DESC, seq DESC LIMIT 1", [time.toISOString()]);
    return r?.seq ?? 0;
  }

  async streamHeads(prefix: string): Promise<{ readonly stream: string; readonly seq: number }[]> {
    // A skip over UNIQUE (stream, version): one probe per stream, however long each stream is.
    return this.#db.rows<{ stream: string; seq: number }>("streamHeads", `
      WITH RECURSIVE s(stream) AS (
        (SELECT stream FROM events WHERE stream >= $1 AND stream < $2 ORDER BY stream LIMIT 1)
        UNION ALL
        SELECT (SELECT e.stream FROM events e WHERE e.stream > s.stream AND e.stream < $2 ORDER BY e.stream LIMIT 1) FROM s WHERE s.stream IS NOT NULL
      )
      SELECT s.stream, (SELECT e.seq FROM events e WHERE e.stream = s.stream ORDER BY e.version DESC LIMIT 1) AS seq
      FROM s WHERE s.stream IS NOT NULL ORDER BY s.stream`, [prefix, prefix + TOP]);
  }

  async egressCandidates(q: EgressCandidateQuery): Promise<EgressCandidates> {
    const values: unknown[] = [q.afterSeq, Math.max(1, Math.floor(q.scan))];
    let scope: string;
    if (q.plugin === undefined) {
      scope = `SELECT ${RAW_COLUMNS} FROM events WHERE seq > $1 AND stream >= 'egress/' AND stream < 'egress0' AND type = 'egress.decision' ORDER BY seq LIMIT $2`;
    } else {
      // An egress stream holds decisions only; its versions are in seq order.
      values.push(egressStream(q.plugin));
      scope = `SELECT ${RAW_COLUMNS} FROM events WHERE stream = $3 AND version >= events_version_after($3, $1) ORDER BY version LIMIT $2`;
    }
    const terms: string[] = [];
    if (q.allowed !== undefined) { values.push(q.allowed ? "true" : "false"); terms.push(`(c.data::jsonb ->> 'allowed') = $${values.length}`); }
    if (q.host !== undefined) {
      // Lower-cased as ASCII (the "C" collation), as SQLite does; a host with any other character is kept for the caller.
      values.push(q.host);
      terms.push(`(lower((c.data::jsonb ->> 'host') COLLATE "C") = $${values.length} OR (c.data::jsonb ->> 'host') ~ '[^ -~]')`);
    }
    let limit = "";
    if (q.limit !== undefined) { values.push(Math.max(0, Math.floor(q.limit))); limit = ` ORDER BY c.seq LIMIT $${values.length}`; }
    // Only the candidates are parsed into events: the rest of the scan stays rows the server stepped past.
    const rows = await this.#db.rows<RawEventRow & { n: number; last: number | null }>("egressCandidates", `
      WITH scope AS MATERIALIZED (${scope})
      SELECT m.n, m.last, c.* FROM (SELECT count(*)::int AS n, max(seq) AS last FROM scope) m
      LEFT JOIN LATERAL (SELECT * FROM scope c ${terms.length === 0 ? "" : `WHERE ${terms.join(" AND ")}`}${limit}) c ON true
      ORDER BY c.seq`, values);
    const first = rows[0];
    const bound = first !== undefined && first.n === values[1] ? first.last : null;
    const candidates: EventOf<"egress.decision">[] = [];
    for (const r of rows) {
      if (r.seq === null) continue;
      const e = eventOfRow(this.#registry, r);
      if (e.type === "egress.decision") candidates.push(e);
    }
    return { candidates, bound };
  }

  async latestEgressDecisions(plugin: string, maxSeq: number, window: { readonly from: string; readonly to: string }, limit: number): Promise<EventOf<"egress.decision">[]> {
    const events = await this.#events("latestEgressDecisions",
      // The window filters the stream's newest decisions as they are read (OFFSET 0 keeps it out
      // of the inner scan): a planner that misjudged the time range would otherwise scan it whole.
      `SELECT * FROM (SELECT ${RAW_COLUMNS} FROM events WHERE stream = $1 AND version < events_version_after($1, $2) ORDER BY version DESC OFFSET 0) d
       WHERE time >= $3 AND time < $4 ORDER BY version DESC LIMIT $5`,
      [egressStream(plugin), maxSeq, window.from, window.to, Math.max(0, Math.floor(limit))]);
    return events.filter((e): e is EventOf<"egress.decision"> => e.type === "egress.decision");
  }
}
