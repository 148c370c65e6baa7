/** Replay: the projected state as of a sequence number or a time, folded in memory from the log. */
import type { EventLog } from "../events/index.js";
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
export async function stateAt(
  store: EventLog,
  at: { seq: number } | { time: Date },
  projections: readonly Projection<unknown>[] = PROJECTIONS,
): Promise<ProjectedState> {
  const asked = "seq" in at ? at.seq : await store.lookups.seqAt(at.time);
  const toSeq = Math.min(asked, await store.head());
  const tables = new Map(projections.map((p) => [p.name, new Map<string, unknown>()]));
  const types = [...new Set(projections.flatMap((p) => p.types))];
  for await (const page of store.pages({ types, toSeq, pageSize: PAGE_SIZE })) {
    for (const e of page) {
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
  }
  return { seq: toSeq, tables };
}
