/**
 * The checkpoints of the tables beside the PostgreSQL log (`projection_checkpoints`): for each
 * table, the version its rows were made by and the seq they reflect. A checkpoint is moved only in
 * the transaction that writes its table's rows, under its row's lock, so two processes writing the
 * same table take turns and the second sees where the first left it.
 */
import type { Db, TxQuery } from "./db.js";

/** Where a table stands. */
export interface Checkpoint {
  readonly version: number;
  readonly seq: number;
}

/** A table's checkpoint name and the version its rows must have been made by. */
export interface Wanted {
  readonly name: string;
  readonly version: number;
}

/** The stored checkpoints of `names` (a name without one is absent). */
export async function checkpointsOf(db: Db, doing: string, names: readonly string[]): Promise<Map<string, Checkpoint>> {
  const rows = await db.rows<{ name: string; version: number; seq: number }>(doing,
    "SELECT name, version, seq FROM projection_checkpoints WHERE name = ANY($1::text[])", [names]);
  return new Map(rows.map((r) => [r.name, { version: r.version, seq: r.seq }]));
}

/** Sets each checkpoint to 0 at its version (the caller empties what it counts, in the same transaction). */
export async function resetTo(q: TxQuery, wanted: readonly Wanted[]): Promise<void> {
  await q(`INSERT INTO projection_checkpoints (name, version, seq) SELECT n, v, 0 FROM unnest($1::text[], $2::int[]) AS w(n, v)
           ON CONFLICT (name) DO UPDATE SET version = excluded.version, seq = 0`,
  [wanted.map((w) => w.name), wanted.map((w) => w.version)]);
}

/**
 * Brings each checkpoint to its wanted version: one stored at another version, or not at all, has
 * its table emptied by `empty` and is set to 0, in one transaction. What was read outside it is read
 * again under the rows' locks, so a table another process brought there meanwhile is left as it is.
 */
export async function openAt(db: Db, doing: string, wanted: readonly Wanted[], empty: (q: TxQuery, stale: readonly Wanted[]) => Promise<void>): Promise<void> {
  const isStale = (stored: Map<string, Checkpoint>) => (w: Wanted): boolean => stored.get(w.name)?.version !== w.version;
  const stale = wanted.filter(isStale(await checkpointsOf(db, doing, wanted.map((w) => w.name))));
  if (stale.length === 0) return;
  await db.transaction(doing, async (q) => {
    const rows = await q<{ name: string; version: number; seq: number }>(
      "SELECT name, version, seq FROM projection_checkpoints WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE", [stale.map((w) => w.name)]);
    const still = stale.filter(isStale(new Map(rows.rows.map((r) => [r.name, r]))));
    if (still.length === 0) return;
    await empty(q, still);
    await resetTo(q, still);
  });
}

/**
 * Moves a checkpoint from `from` to `to`, taking its row's lock; false (nothing moved) when it is no
 * longer at `from`. A table never opened has no checkpoint, which reads as 0: moving from 0 makes
 * it, at `version`.
 */
export async function moveFrom(q: TxQuery, name: string, version: number, from: number, to: number): Promise<boolean> {
  const moved = await q("UPDATE projection_checkpoints SET seq = $2 WHERE name = $1 AND seq = $3", [name, to, from]);
  if (moved.rowCount === 1) return true;
  if (from !== 0) return false;
  const made = await q("INSERT INTO projection_checkpoints (name, version, seq) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING", [name, version, to]);
  return made.rowCount === 1;
}
