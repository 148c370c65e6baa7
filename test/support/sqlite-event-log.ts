/**
 * Today's synchronous SQLite store (src/events/store.ts) seen through the asynchronous port, so
 * that the contract suite and the copy between stores run against SQLite as well as PostgreSQL.
 * A stand-in for tests until the store itself implements the port: its lookups and raw copy are
 * SQL on the store's handle, written as the projections' lookups are.
 */
import { chainHash } from "../../src/events/hash.js";
import { ChainWalk } from "../../src/events/chain.js";
import type { RawEventRow } from "../../src/events/chain.js";
import { openStore, StoreError, StoreErrorCode } from "../../src/events/store.js";
import type { EventStore } from "../../src/events/store.js";
import type { EventOf, EventTypeName, KnownEvent } from "../../src/events/catalog.js";
import type { EgressCandidateQuery, EgressCandidates, EventListener, EventLog, EventLookups, PageFilter, RawPageFilter } from "../../src/events/port.js";
import type { EventRegistry } from "../../src/events/registry.js";
import type { LogTables } from "../../src/events/tables.js";
import { eventOfRow } from "../../src/events/rows.js";
import { egressStream, STREAM_TYPE_INDEXED, UNINDEXED_TYPES } from "../../src/events/streams.js";
import type { ChainPoint, NewEvent, ReadFilter } from "../../src/events/types.js";

const RAW = `seq, stream, version, type, schema_version AS schemaVersion, time, actor, caused_by AS causedBy, data, prev_hash AS prevHash, hash`;
const TOP = "\u{10FFFF}";

function isOf<T extends EventTypeName>(e: KnownEvent, types: readonly T[]): e is EventOf<T> {
  return (types as readonly string[]).includes(e.type);
}

class SqliteLookups implements EventLookups {
  constructor(private readonly store: EventStore) {}

  #rows(sql: string, ...args: unknown[]): KnownEvent[] {
    return (this.store.database.prepare(sql).all(...args) as RawEventRow[]).map((r) => eventOfRow(this.store.registry, r));
  }

  #ofType(type: string): string {
    return UNINDEXED_TYPES.has(type) ? "" : ` AND ${STREAM_TYPE_INDEXED}`;
  }

  async lastOf<T extends EventTypeName>(stream: string, types: readonly T[], beforeSeq: number): Promise<EventOf<T> | null> {
    let best: EventOf<T> | null = null;
    for (const t of types) {
      const [e] = this.#rows(`SELECT ${RAW} FROM events WHERE stream = ? AND type = ?${this.#ofType(t)} AND seq < ? ORDER BY version DESC LIMIT 1`, stream, t, beforeSeq);
      if (e !== undefined && isOf(e, types) && (best === null || e.seq > best.seq)) best = e;
    }
    return best;
  }

  async firstAfter<T extends EventTypeName>(stream: string, type: T, afterSeq: number): Promise<EventOf<T> | null> {
    const [e] = this.#rows(`SELECT ${RAW} FROM events WHERE stream = ? AND type = ?${this.#ofType(type)} AND seq > ? ORDER BY version LIMIT 1`, stream, type, afterSeq);
    return e !== undefined && isOf(e, [type]) ? e : null;
  }

  async newest<T extends EventTypeName>(stream: string, types: readonly T[], limit: number): Promise<EventOf<T>[]> {
    const all = types.flatMap((t) => this.#rows(`SELECT ${RAW} FROM events WHERE stream = ? AND type = ?${this.#ofType(t)} ORDER BY version DESC LIMIT ?`, stream, t, limit));
    return all.sort((a, b) => b.seq - a.seq).slice(0, limit).filter((e): e is EventOf<T> => isOf(e, types));
  }

  async configVerdict(stream: string, image: string, beforeSeq: number): Promise<EventOf<"config.verdict"> | null> {
    const [e] = this.#rows(`SELECT ${RAW} FROM events WHERE stream = ? AND type = 'config.verdict' AND ${STREAM_TYPE_INDEXED} AND seq < ? AND json_extract(data, '$.image') = ? ORDER BY version DESC LIMIT 1`, stream, beforeSeq, image);
    return e?.type === "config.verdict" ? e : null;
  }

  async signatureVerdict(digest: string, manifest: string | null, beforeSeq = Number.MAX_SAFE_INTEGER): Promise<EventOf<"signature.verdict"> | null> {
    const m = manifest === null ? "json_extract(data, '$.manifest') IS NULL" : "json_extract(data, '$.manifest') = ?";
    const args: unknown[] = [digest, beforeSeq, ...(manifest === null ? [] : [manifest])];
    const [e] = this.#rows(`SELECT ${RAW} FROM events WHERE type = 'signature.verdict' AND json_extract(data, '$.digest') = ? AND seq < ? AND ${m} ORDER BY seq DESC LIMIT 1`, ...args);
    return e?.type === "signature.verdict" ? e : null;
  }

  async seqAt(time: Date): Promise<number> {
    return (this.store.database.prepare("SELECT max(seq) AS s FROM events WHERE time <= ?").get(time.toISOString()) as { s: number | null }).s ?? 0;
  }

  async streamHeads(prefix: string): Promise<{ readonly stream: string; readonly seq: number }[]> {
    return this.store.database.prepare("SELECT stream, max(seq) AS seq FROM events WHERE stream >= ? AND stream < ? GROUP BY stream ORDER BY stream").all(prefix, prefix + TOP) as { stream: string; seq: number }[];
  }

  async egressCandidates(q: EgressCandidateQuery): Promise<EgressCandidates> {
    const head = this.store.head();
    let scope: string;
    let args: unknown[];
    let order: string;
    if (q.plugin === undefined) {
      scope = "stream >= 'egress/' AND stream < 'egress0' AND type = 'egress.decision' AND seq > ? AND seq <= ?";
      args = [q.afterSeq, head];
      order = "seq";
    } else {
      const stream = egressStream(q.plugin);
      const v = this.store.versionsBetween(stream, q.afterSeq, head);
      scope = "stream = ? AND version >= ? AND version <= ?";
      args = [stream, v.from, v.to];
      order = "version";
    }
    const bound = (this.store.database.prepare(`SELECT seq FROM events WHERE ${scope} ORDER BY ${order} LIMIT 1 OFFSET ?`).get(...args, q.scan - 1) as { seq: number } | undefined)?.seq ?? null;
    const where = [scope, ...(bound === null ? [] : ["seq <= ?"])];
    args = [...args, ...(bound === null ? [] : [bound])];
    if (q.allowed !== undefined) { where.push("json_extract(data, '$.allowed') = ?"); args.push(q.allowed ? 1 : 0); }
    if (q.host !== undefined) { where.push("(lower(json_extract(data, '$.host')) = ? OR json_extract(data, '$.host') GLOB '*[^ -~]*')"); args.push(q.host); }
    const limit = q.limit === undefined ? "" : ` LIMIT ${Math.max(0, Math.floor(q.limit))}`;
    const candidates = this.#rows(`SELECT ${RAW} FROM events WHERE ${where.join(" AND ")} ORDER BY ${order}${limit}`, ...args)
      .filter((e): e is EventOf<"egress.decision"> => e.type === "egress.decision");
    return { candidates, bound };
  }

  async latestEgressDecisions(plugin: string, maxSeq: number, window: { readonly from: string; readonly to: string }, limit: number): Promise<EventOf<"egress.decision">[]> {
    const stream = egressStream(plugin);
    const v = this.store.versionsBetween(stream, 0, maxSeq);
    return this.#rows(`SELECT ${RAW} FROM events WHERE stream = ? AND version >= ? AND version <= ? AND time >= ? AND time < ? ORDER BY version DESC LIMIT ?`,
      stream, v.from, v.to, window.from, window.to, limit).filter((e): e is EventOf<"egress.decision"> => e.type === "egress.decision");
  }
}

class SqliteEventLog implements EventLog {
  readonly kind = "sqlite" as const;
  readonly lookups: SqliteLookups;
  /**
   * None: this stand-in keeps no tables beside the log, and the contract suite skips their tests
   * on a log without them (the SQLite store's own adapter has them).
   */
  readonly tables = undefined as unknown as LogTables;
  #durable = 0;

  constructor(readonly store: EventStore) {
    this.lookups = new SqliteLookups(store);
  }

  get location(): string { return this.store.file; }
  get registry(): EventRegistry { return this.store.registry; }

  async append(batch: readonly NewEvent[], opts: { expected?: Readonly<Record<string, number>>; durable?: boolean } = {}): Promise<KnownEvent[]> {
    const run = () => this.store.append(batch, opts.expected === undefined ? {} : { expected: opts.expected });
    return opts.durable === true ? this.store.durably(run) : run();
  }

  async observe(event: NewEvent, opts: { durable?: boolean } = {}): Promise<KnownEvent | null> {
    return opts.durable === true ? this.store.durably(() => this.store.observe(event)) : this.store.observe(event);
  }

  async durably<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#durable++ === 0) this.store.database.pragma("synchronous = FULL");
    try {
      return await fn();
    } finally {
      if (--this.#durable === 0) this.store.database.pragma("synchronous = NORMAL");
    }
  }

  read(filter?: ReadFilter): Promise<KnownEvent[]>;
  read<T extends EventTypeName>(filter: ReadFilter & { readonly type: T | readonly T[] }): Promise<EventOf<T>[]>;
  async read(filter: ReadFilter = {}): Promise<KnownEvent[]> {
    return this.store.read(filter);
  }

  async *pages(filter: PageFilter): AsyncIterable<readonly KnownEvent[]> {
    const types = filter.types === undefined ? null : [...filter.types];
    if (types !== null && types.length === 0) return;
    const cols = filter.hashes === false ? RAW.replace("prev_hash AS prevHash, hash", "'' AS prevHash, '' AS hash") : RAW;
    const typeTerm = types === null ? "" : ` AND type IN (${types.map(() => "?").join(", ")})`;
    for await (const rows of this.#walk(`SELECT ${cols} FROM events WHERE seq > ? AND seq <= ?${typeTerm} ORDER BY seq LIMIT ?`, filter, types ?? [])) {
      yield rows.map((r) => eventOfRow(this.registry, r));
    }
  }

  rawPages(filter: RawPageFilter = {}): AsyncIterable<readonly RawEventRow[]> {
    return this.#walk(`SELECT ${RAW} FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`, filter, []);
  }

  async *#walk(sql: string, filter: RawPageFilter, types: readonly string[]): AsyncIterable<RawEventRow[]> {
    const to = filter.toSeq ?? this.store.head();
    const size = Math.max(1, Math.floor(filter.pageSize ?? 1000));
    const stmt = this.store.database.prepare(sql);
    let after = filter.afterSeq ?? 0;
    while (after < to) {
      const rows = (types.length === 0 ? stmt.all(after, to, size) : stmt.all(after, to, ...types, size)) as RawEventRow[];
      const last = rows[rows.length - 1];
      if (last === undefined) return;
      after = last.seq;
      yield rows;
      if (rows.length < size) return;
    }
  }

  last(stream: string): Promise<KnownEvent | null>;
  last<T extends EventTypeName>(stream: string, type: T): Promise<EventOf<T> | null>;
  async last(stream: string, type?: EventTypeName): Promise<KnownEvent | null> {
    return type === undefined ? this.store.last(stream) : this.store.last(stream, type);
  }

  async get(seq: number): Promise<KnownEvent | null> { return this.store.get(seq); }
  async version(stream: string): Promise<number> { return this.store.version(stream); }
  async versionsBetween(stream: string, afterSeq?: number, toSeq?: number): Promise<{ readonly from: number; readonly to: number }> {
    return this.store.versionsBetween(stream, afterSeq, toSeq);
  }
  async head(): Promise<number> { return this.store.head(); }
  async headPoint(): Promise<ChainPoint> { return this.store.headPoint(); }
  async verify(from?: ChainPoint) { return this.store.verify(from); }
  async verifySinceCheckpoint() { return this.store.verifySinceCheckpoint(); }
  async verifiedPoint() { return this.store.verifiedPoint(); }
  async checkGuards() { return this.store.checkGuards(); }
  async restoreGuards() { return this.store.restoreGuards(); }

  async importRaw(rows: readonly RawEventRow[]): Promise<ChainPoint> {
    const db = this.store.database;
    const insert = db.prepare("INSERT INTO events (seq, stream, version, type, schema_version, time, actor, caused_by, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const point = db.transaction(() => {
      const head = this.store.headPoint();
      const first = rows[0];
      if (first === undefined) return head;
      if (head.seq > 0 && (first.seq !== head.seq + 1 || first.prevHash !== head.hash)) {
        throw new StoreError(StoreErrorCode.NotEmpty, `the log holds ${head.seq} events and the rows imported (from seq ${first.seq}) do not continue it`);
      }
      const walk = new ChainWalk({ seq: head.seq + 1, prevHash: head.hash });
      for (const r of rows) {
        const broke = walk.step(r);
        if (broke !== null) throw new StoreError(StoreErrorCode.Tampered, `import refused, nothing written: seq ${broke.seq}: ${broke.reason}`);
        insert.run(r.seq, r.stream, r.version, r.type, r.schemaVersion, r.time, r.actor, r.causedBy, r.data, r.prevHash, r.hash);
      }
      return walk.point;
    }).immediate();
    this.store.announce(rows.map((r) => eventOfRow(this.registry, r)));
    return point;
  }

  subscribe(fn: EventListener): () => void { return this.store.subscribe(fn); }
  announce(events: readonly KnownEvent[]): void { this.store.announce(events); }
  async close(): Promise<void> { await this.store.close(); }
}

/** Opens the SQLite store in `file` as an {@link EventLog}. */
export async function openSqliteEventLog(opts: { file: string; registry?: EventRegistry; clock?: () => Date }): Promise<EventLog & { readonly store: EventStore }> {
  return new SqliteEventLog(await openStore(opts));
}

/** The hash a row must have (to check a store's rows without trusting its own verify). */
export function expectedHash(r: RawEventRow): string {
  return chainHash(r.prevHash, r.seq, r.stream, r.version, r.type, r.schemaVersion, r.time, r.actor, r.causedBy, r.data);
}
