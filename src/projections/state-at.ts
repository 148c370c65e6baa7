/** Replay: the projected state as of a sequence number or a time, folded in memory from the log. */
import type { EventStore } from "../events/index.js";
import { eventsInPages } from "./pages.js";
import type { Projection } from "./projection.js";
import { PROJECTIONS } from "./projections.js";

/** Projected state: each projection's rows by key. */
export interface ProjectedState {
  /** The last seq folded. */
  readonly seq: number;
  readonly tables: ReadonlyMap<string, ReadonlyMap<string, unknown>>;
}

const PAGE_SIZE = 20_000;

/** Folds the log into every projection, in memory, as of a seq or a time (events with time ≤ it). */
export function stateAt(
  store: EventStore,
  at: { seq: number } | { time: Date },
  projections: readonly Projection<unknown>[] = PROJECTIONS,
): ProjectedState {
  let toSeq: number;
  if ("seq" in at) toSeq = at.seq;
  else {
    const row = store.database.prepare<[string], { s: number | null }>("SELECT max(seq) AS s FROM events WHERE time <= ?").get(at.time.toISOString());
    toSeq = row?.s ?? 0;
  }
  toSeq = Math.min(toSeq, store.head());
  const tables = new Map(projections.map((p) => [p.name, new Map<string, unknown>()]));
  const types = [...new Set(projections.flatMap((p) => p.types))];
  for (const e of eventsInPages(store, { types, toSeq, pageSize: PAGE_SIZE })) {
    for (const p of projections) {
      if (!p.types.includes(e.type)) continue;
      const key = p.keyOf(e);
      const t = tables.get(p.name);
      if (key === null || t === undefined) continue;
      const next = p.evolve(t.get(key), e);
      if (next === undefined) t.delete(key);
      else t.set(key, next);
    }
  }
  return { seq: toSeq, tables };
}
