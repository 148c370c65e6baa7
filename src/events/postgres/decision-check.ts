/**
 * The incremental decision check's tables in the PostgreSQL log's database (migration 0009): one
 * row of totals (with the first differences kept, as JSON) and the egress re-decider's list state
 * per plugin; the checkpoint in `projection_checkpoints`. A new version empties them.
 */
import type { DecisionCheckList, DecisionCheckTable, DecisionCheckTotals } from "../tables.js";
import { checkpointsOf, moveFrom, openAt, resetTo } from "./checkpoints.js";
import type { Db, TxQuery } from "./db.js";

const NAME = "decision_check";
/** Plugins' lists per INSERT. */
const CHUNK = 5_000;

const SET_TOTALS = `
  INSERT INTO proj_decision_check (id, checked, diverged, more, lists_known, divergences) VALUES (1, $1, $2, $3, $4, $5)
  ON CONFLICT (id) DO UPDATE SET checked = excluded.checked, diverged = excluded.diverged, more = excluded.more,
    lists_known = excluded.lists_known, divergences = excluded.divergences`;

const SET_LISTS = `
  INSERT INTO proj_decision_check_lists (plugin, current, changed, previous)
  SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[]) AS u(plugin, current, changed, previous)
  ON CONFLICT (plugin) DO UPDATE SET current = excluded.current, changed = excluded.changed, previous = excluded.previous`;

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));
const unjson = (v: string | null): unknown => (v === null ? null : JSON.parse(v));

/** {@link DecisionCheckTable} in the log's database. */
export class PostgresDecisionCheck implements DecisionCheckTable {
  readonly #db: Db;
  /** The version {@link open} was given: a reset keeps it. */
  #version = 0;

  constructor(db: Db) {
    this.#db = db;
  }

  async open(version: number): Promise<void> {
    await openAt(this.#db, "opening the decision check", [{ name: NAME, version }], (q) => empty(q));
    this.#version = version;
  }

  async checkpoint(): Promise<number> {
    return (await checkpointsOf(this.#db, "reading the decision check's checkpoint", [NAME])).get(NAME)?.seq ?? 0;
  }

  async load(): Promise<{ totals: DecisionCheckTotals | null; lists: Map<string, DecisionCheckList> }> {
    const [t, l] = await Promise.all([
      this.#db.row<{ checked: number; diverged: number; more: number; lists_known: boolean; divergences: string }>("reading the decision check",
        "SELECT checked, diverged, more, lists_known, divergences FROM proj_decision_check WHERE id = 1"),
      this.#db.rows<{ plugin: string; current: string | null; changed: boolean; previous: string | null }>("reading the decision check",
        "SELECT plugin, current, changed, previous FROM proj_decision_check_lists"),
    ]);
    const totals = t === undefined ? null : { checked: t.checked, diverged: t.diverged, more: t.more, listsKnown: t.lists_known, divergences: JSON.parse(t.divergences) as unknown[] };
    const lists = new Map<string, DecisionCheckList>();
    for (const r of l) lists.set(r.plugin, { current: unjson(r.current), changed: r.changed, previous: unjson(r.previous) });
    return { totals, lists };
  }

  async save(from: number, to: number, totals: DecisionCheckTotals, lists: ReadonlyMap<string, DecisionCheckList>): Promise<boolean> {
    const entries = [...lists];
    return this.#db.transaction("saving the decision check", async (q) => {
      // Another process checked these seqs meanwhile: counting them again would count them twice.
      if (!(await moveFrom(q, NAME, this.#version, from, to))) return false;
      await q(SET_TOTALS, [totals.checked, totals.diverged, totals.more, totals.listsKnown, JSON.stringify(totals.divergences)]);
      for (let i = 0; i < entries.length; i += CHUNK) {
        const c = entries.slice(i, i + CHUNK);
        await q(SET_LISTS, [c.map(([p]) => p), c.map(([, s]) => json(s.current)), c.map(([, s]) => s.changed), c.map(([, s]) => json(s.previous))]);
      }
      return true;
    });
  }

  async reset(): Promise<void> {
    await this.#db.transaction("emptying the decision check", async (q) => {
      await empty(q);
      await resetTo(q, [{ name: NAME, version: this.#version }]);
    });
  }
}

async function empty(q: TxQuery): Promise<void> {
  await q("TRUNCATE proj_decision_check, proj_decision_check_lists");
}
