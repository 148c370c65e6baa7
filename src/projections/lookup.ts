/**
 * Indexed lookups of single events: the latest of some types in a stream before a seq, the latest
 * config verdict for an image, the latest signature verdict for a digest. Their cost does not
 * grow with the log, which is what lets `why` and the reconciler gather a decider's state cheaply.
 */
import type { Statement } from "better-sqlite3";
import { EVENT_COLUMNS, isEventOf, STREAM_TYPE_INDEXED, toStoredEvent, UNINDEXED_TYPES } from "../events/index.js";
import type { EventOf, EventRow, EventStore, EventTypeName, KnownEvent } from "../events/index.js";

/** Prepared single-event lookups over one store. */
export class Lookup {
  readonly #cache = new Map<string, Statement>();
  readonly #store: EventStore;

  constructor(store: EventStore) {
    this.#store = store;
  }

  #one(sql: string, ...args: (string | number)[]): KnownEvent | null {
    let stmt = this.#cache.get(sql);
    if (stmt === undefined) { stmt = this.#store.database.prepare(sql); this.#cache.set(sql, stmt); }
    const row = stmt.get(...args) as EventRow | undefined;
    // A row adapter: every row was validated against its type's schema when it was appended.
    return row === undefined ? null : (toStoredEvent(this.#store.registry, row) as KnownEvent);
  }

  /** The latest event of any of `types` in `stream` before `beforeSeq`. */
  lastOf<T extends EventTypeName>(stream: string, types: readonly T[], beforeSeq: number): EventOf<T> | null {
    let best: EventOf<T> | null = null;
    for (const t of types) {
      const indexed = UNINDEXED_TYPES.has(t) ? "" : ` AND ${STREAM_TYPE_INDEXED}`;
      const e = this.#one(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = ?${indexed} AND seq < ? ORDER BY version DESC LIMIT 1`, stream, t, beforeSeq);
      if (e !== null && isEventOf(e, types) && (best === null || e.seq > best.seq)) best = e;
    }
    return best;
  }

  /** The latest config verdict of a plugin for an image, before `beforeSeq`. */
  configFor(stream: string, image: string, beforeSeq: number): EventOf<"config.verdict"> | null {
    const e = this.#one(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = 'config.verdict' AND ${STREAM_TYPE_INDEXED} AND seq < ? AND json_extract(data, '$.image') = ? ORDER BY version DESC LIMIT 1`,
      stream, beforeSeq, image,
    );
    return e?.type === "config.verdict" ? e : null;
  }

  /**
   * The latest signature verdict for a digest checked against `manifest` (a manifest digest)
   * before `beforeSeq`; when there is none, the latest checked against no manifest (which stands
   * for the digest whatever the manifest, as verdicts recorded before version 2 do). Index on the digest.
   */
  verdictFor(digest: string, manifest: string | null, beforeSeq: number): EventOf<"signature.verdict"> | null {
    const exact = manifest === null ? null : this.#one(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE type = 'signature.verdict' AND json_extract(data, '$.digest') = ? AND seq < ? AND json_extract(data, '$.manifest') = ? ORDER BY seq DESC LIMIT 1`,
      digest, beforeSeq, manifest,
    );
    const e = exact ?? this.#one(
      `SELECT ${EVENT_COLUMNS} FROM events WHERE type = 'signature.verdict' AND json_extract(data, '$.digest') = ? AND seq < ? AND json_extract(data, '$.manifest') IS NULL ORDER BY seq DESC LIMIT 1`,
      digest, beforeSeq,
    );
    return e?.type === "signature.verdict" ? e : null;
  }
}

const shared = new WeakMap<EventStore, Lookup>();

/** One {@link Lookup} per store, its statements prepared once: faces ask per plugin, per request. */
export function lookupFor(store: EventStore): Lookup {
  let l = shared.get(store);
  if (l === undefined) {
    l = new Lookup(store);
    shared.set(store, l);
  }
  return l;
}
