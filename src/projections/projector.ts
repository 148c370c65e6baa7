/**
 * Runs projections over the log: incremental catch-up from each projection's checkpoint, and
 * drop-and-rebuild from zero. Events are read in pages, folded in memory with the projections'
 * pure `evolve`, and the changed rows and the checkpoints are written in one transaction (the
 * log's {@link ProjectionTables}), so a projection's table always matches its checkpoint.
 */
import type { EventLog, KnownEvent, ProjectionChanges, ProjectionTables } from "../events/index.js";
import type { Cell, Projection } from "./projection.js";
import { PROJECTIONS } from "./projections.js";

/** Options of {@link Projector}. */
export interface ProjectorOptions {
  /** Where the tables go; defaults to the log's own. */
  readonly tables?: ProjectionTables;
  readonly projections?: readonly Projection<unknown>[];
  /** Events read per query. */
  readonly pageSize?: number;
}

/** What one catch-up did. */
export interface CatchUpResult {
  /** Events folded (counted once per projection that folded them). */
  readonly applied: number;
  /** Events read from the log. */
  readonly read: number;
  /** The seq every projection now reflects. */
  readonly checkpoint: number;
}

interface Run {
  readonly p: Projection<unknown>;
  readonly types: ReadonlySet<string>;
  seq: number;
  state: Map<string, unknown> | null;
  readonly dirty: Set<string>;
}

/** Keeps a set of projections' tables up to date with an event log. */
export class Projector {
  readonly #store: EventLog;
  readonly #given: ProjectionTables | undefined;
  readonly #runs: Run[];
  readonly #pageSize: number;
  #opened: Promise<void> | null = null;
  /** Catch-ups and rebuilds one at a time: two folding into the same state would fold an event twice. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(store: EventLog, opts: ProjectorOptions = {}) {
    this.#store = store;
    this.#given = opts.tables;
    this.#pageSize = opts.pageSize ?? 20_000;
    this.#runs = (opts.projections ?? PROJECTIONS).map((p) => ({ p, types: new Set(p.types), seq: 0, state: null, dirty: new Set<string>() }));
  }

  /** The seq a projection reflects. */
  async checkpoint(name: string): Promise<number> {
    const r = this.#run(name);
    await this.#open();
    return (await this.#tables.checkpoints([r.p.name])).get(r.p.name) ?? 0;
  }

  /** Folds every event after each projection's checkpoint, up to the log's head. */
  catchUp(): Promise<CatchUpResult> {
    return this.#serial(() => this.#catchUp());
  }

  /** Drops the tables of the named projections (all when none named) and folds the log from zero. */
  rebuild(names?: readonly string[]): Promise<CatchUpResult> {
    const runs = names === undefined ? this.#runs : names.map((n) => this.#run(n));
    return this.#serial(async () => {
      await this.#open();
      await this.#tables.reset(runs.map((r) => r.p));
      for (const r of runs) {
        r.seq = 0;
        r.state = new Map();
        r.dirty.clear();
      }
      return this.#catchUp();
    });
  }

  /** Every row of a projection's table, by key, as its state type. */
  async rows<S>(name: string): Promise<Map<string, S>> {
    return (await this.#rowsOf(this.#run(name))) as Map<string, S>;
  }

  /** The names of the projections run. */
  names(): string[] {
    return this.#runs.map((r) => r.p.name);
  }

  #run(name: string): Run {
    const r = this.#runs.find((x) => x.p.name === name);
    if (r === undefined) throw new Error(`no projection named ${name}`);
    return r;
  }

  /** The tables: the given ones, else the log's. */
  get #tables(): ProjectionTables {
    return this.#given ?? this.#store.tables.projections;
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #open(): Promise<void> {
    this.#opened ??= this.#tables.open(this.#runs.map((r) => r.p)).catch((err: unknown) => {
      this.#opened = null;
      throw err;
    });
    return this.#opened;
  }

  async #rowsOf(r: Run): Promise<Map<string, unknown>> {
    await this.#open();
    const out = new Map<string, unknown>();
    for (const [key, cells] of await this.#tables.rows(r.p)) out.set(key, r.p.fromRow([key, ...cells] as readonly Cell[]));
    return out;
  }

  async #catchUp(): Promise<CatchUpResult> {
    await this.#open();
    const head = await this.#store.head();
    const checkpoints = await this.#tables.checkpoints(this.#runs.map((r) => r.p.name));
    for (const r of this.#runs) {
      const seq = checkpoints.get(r.p.name) ?? 0;
      if (seq !== r.seq) { r.state = null; r.seq = seq; }
    }
    const behind = this.#runs.filter((r) => r.seq < head);
    if (behind.length === 0) return { applied: 0, read: 0, checkpoint: head };
    const types = [...new Set(behind.flatMap((r) => r.p.types))];
    let applied = 0;
    let read = 0;
    try {
      const afterSeq = Math.min(...behind.map((r) => r.seq));
      for await (const page of this.#store.pages({ afterSeq, toSeq: head, types, pageSize: this.#pageSize, hashes: false })) {
        read += page.length;
        // A table is read only once an event it folds turns up (most catch-ups fold into few).
        for (const r of behind) if (r.state === null && page.some((e) => e.seq > r.seq && r.types.has(e.type))) r.state = await this.#rowsOf(r);
        for (const e of page) applied += this.#fold(behind, e);
      }
      await this.#flush(behind, head);
    } catch (err) {
      // Nothing or all was committed: forget the folded state, reload it from the tables next time.
      for (const r of behind) { r.state = null; r.dirty.clear(); r.seq = -1; }
      throw err;
    }
    return { applied, read, checkpoint: head };
  }

  #fold(runs: readonly Run[], e: KnownEvent): number {
    let n = 0;
    for (const r of runs) {
      if (e.seq <= r.seq || !r.types.has(e.type)) continue;
      const key = r.p.keyOf(e);
      if (key === null || r.state === null) continue;
      const next = r.p.evolve(r.state.get(key), e);
      if (next === undefined) r.state.delete(key);
      else r.state.set(key, next);
      r.dirty.add(key);
      n++;
    }
    return n;
  }

  async #flush(runs: readonly Run[], head: number): Promise<void> {
    const changes: ProjectionChanges[] = runs.map((r) => {
      const upserts: (readonly [string, readonly Cell[]])[] = [];
      const deletes: string[] = [];
      for (const key of r.dirty) {
        const s = r.state?.get(key);
        if (s === undefined) deletes.push(key);
        else upserts.push([key, r.p.toRow(s)]);
      }
      return { spec: r.p, upserts, deletes };
    });
    await this.#tables.commit(changes, head);
    for (const r of runs) {
      r.dirty.clear();
      r.seq = head;
    }
  }
}
