/**
 * The decision check kept as events arrive, for the console's integrity page: every decision
 * appended after the check's checkpoint is re-decided once — a rollout decision from the decider's
 * state as the log stood before it (the indexed lookups the reconciler decides with), an egress
 * decision against the allow-list its plugin had then (the egress re-decider's state, kept per
 * plugin) — and what was found is kept with the checkpoint. A page then costs what was appended
 * since it was last shown, not the whole log. `checkDecisions`, which folds the log from zero,
 * stays the full check; a property test holds the two to the same answer.
 */
import type Database from "better-sqlite3";
import { canonicalize } from "json-canonicalize";
import type { EventOf, EventStore, EventTypeName } from "../events/index.js";
import type { Divergence } from "./check-decisions.js";
import { EgressChecker } from "./check-egress.js";
import type { AddressRecheck, EgressListState } from "./check-egress.js";
import { decideRollout } from "./decide-rollout.js";
import { loadDeciderState } from "./decider-state.js";
import type { AllowListState } from "./folds.js";

/** What the check found up to its checkpoint. */
export interface DecisionCheckState {
  /** The seq every decision up to which was re-decided. */
  readonly upTo: number;
  /** Decisions re-decided. */
  readonly checked: number;
  /** Decisions that do not reproduce (one decision may differ in several parts). */
  readonly diverged: number;
  /** The first {@link MAX_KEPT} differences, in seq order. */
  readonly divergences: readonly Divergence[];
  /** Differences found beyond those kept. */
  readonly more: number;
}

/** The most differences kept to show; `check-decisions` lists them all. */
export const MAX_KEPT = 100;

/** The event types the check reads: the decisions, and what the egress re-decider folds. */
const TYPES: readonly EventTypeName[] = ["rollout.decided", "egress.decision", "workload.desired", "plugin.deleted"];
const NAME = "decision_check";
const VERSION = 1;
/** Seqs re-decided per transaction: a long catch-up commits in steps. */
const STEP = 5_000;
const PAGE = 5_000;

const DDL = [
  "CREATE TABLE IF NOT EXISTS proj_decision_check (id INTEGER PRIMARY KEY CHECK (id = 1), checked INTEGER NOT NULL, diverged INTEGER NOT NULL, more INTEGER NOT NULL, lists_known INTEGER NOT NULL, divergences TEXT NOT NULL) STRICT",
  "CREATE TABLE IF NOT EXISTS proj_decision_check_lists (plugin TEXT PRIMARY KEY, current TEXT, changed INTEGER NOT NULL, previous TEXT) STRICT",
];

interface Totals { checked: number; diverged: number; more: number; listsKnown: boolean; divergences: Divergence[] }

/** The incremental decision check of one store. */
export class DecisionCheck {
  readonly #store: EventStore;
  readonly #db: Database.Database;
  readonly #recheck: AddressRecheck | undefined;
  readonly #stmts;

  /** `recheck`: the egress proxy's address step (`recheckAddresses`), as `checkDecisions` takes it. */
  constructor(store: EventStore, recheck?: AddressRecheck) {
    this.#store = store;
    this.#db = store.database;
    this.#recheck = recheck;
    const db = this.#db;
    db.exec("CREATE TABLE IF NOT EXISTS projection_checkpoints (name TEXT PRIMARY KEY, version INTEGER NOT NULL, seq INTEGER NOT NULL) STRICT");
    const cp = db.prepare<[string], { version: number }>("SELECT version FROM projection_checkpoints WHERE name = ?").get(NAME);
    if (cp?.version !== VERSION) this.#reset();
    else for (const ddl of DDL) db.exec(ddl);
    this.#stmts = {
      checkpoint: db.prepare<[string], { seq: number }>("SELECT seq FROM projection_checkpoints WHERE name = ?"),
      setCheckpoint: db.prepare<[number, string]>("UPDATE projection_checkpoints SET seq = ? WHERE name = ?"),
      totals: db.prepare<[], { checked: number; diverged: number; more: number; lists_known: number; divergences: string }>("SELECT checked, diverged, more, lists_known, divergences FROM proj_decision_check WHERE id = 1"),
      setTotals: db.prepare<[number, number, number, number, string]>(
        "INSERT INTO proj_decision_check (id, checked, diverged, more, lists_known, divergences) VALUES (1, ?, ?, ?, ?, ?) " +
        "ON CONFLICT (id) DO UPDATE SET checked = excluded.checked, diverged = excluded.diverged, more = excluded.more, lists_known = excluded.lists_known, divergences = excluded.divergences",
      ),
      lists: db.prepare<[], { plugin: string; current: string | null; changed: number; previous: string | null }>("SELECT plugin, current, changed, previous FROM proj_decision_check_lists"),
      setList: db.prepare<[string, string | null, number, string | null]>(
        "INSERT INTO proj_decision_check_lists (plugin, current, changed, previous) VALUES (?, ?, ?, ?) " +
        "ON CONFLICT (plugin) DO UPDATE SET current = excluded.current, changed = excluded.changed, previous = excluded.previous",
      ),
    };
  }

  /** The seq the check reached. */
  checkpoint(): number {
    return this.#stmts.checkpoint.get(NAME)?.seq ?? 0;
  }

  /** What was found up to the checkpoint, without checking anything new. */
  state(): DecisionCheckState {
    const t = this.#totals();
    return { upTo: this.checkpoint(), checked: t.checked, diverged: t.diverged, divergences: t.divergences, more: t.more };
  }

  /**
   * Re-decides every decision appended after the checkpoint, up to the log's head, in steps of
   * {@link STEP} seqs, each its own transaction (at most `steps` of them).
   */
  catchUp(steps = Number.POSITIVE_INFINITY): DecisionCheckState {
    const head = this.#store.head();
    for (let from = this.checkpoint(), step = 0; from < head && step < steps; step++) {
      const to = Math.min(head, from + STEP);
      const totals = this.#totals();
      const lists = this.#lists();
      const egress = new EgressChecker(this.#recheck, { lists, listsKnown: totals.listsKnown });
      const found: Divergence[] = [];
      let rollouts = 0;
      for (let cursor = from; ;) {
        const page = this.#store.read({ afterSeq: cursor, toSeq: to, type: TYPES, limit: PAGE });
        for (const e of page) {
          if (e.type === "rollout.decided") { rollouts++; found.push(...this.#checkRollout(e)); } else egress.feed(e);
        }
        const last = page[page.length - 1];
        if (last === undefined || page.length < PAGE) break;
        cursor = last.seq;
      }
      const r = egress.result();
      for (const d of r.divergences) found.push({ seq: d.seq, name: d.plugin, field: `egress.${d.field}`, recorded: d.recorded, expected: d.expected });
      // Stable: a decision's parts stay in the order the full check reports them.
      found.sort((a, b) => a.seq - b.seq);
      const next = egress.state();
      const moved = this.#db.transaction(() => {
        // Another process checked these seqs meanwhile: counting them again would count them twice.
        if (this.checkpoint() !== from) return true;
        const kept = [...totals.divergences, ...found.slice(0, Math.max(0, MAX_KEPT - totals.divergences.length))];
        const diverged = totals.diverged + new Set(found.map((d) => d.seq)).size;
        const more = totals.more + found.length - (kept.length - totals.divergences.length);
        this.#stmts.setTotals.run(totals.checked + rollouts + r.checked, diverged, more, next.listsKnown ? 1 : 0, JSON.stringify(kept));
        for (const [plugin, l] of next.lists) {
          const before = lists.get(plugin);
          if (before === undefined || before.current?.seq !== l.current?.seq || before.changed !== l.changed || before.previous?.seq !== l.previous?.seq) {
            this.#stmts.setList.run(plugin, json(l.current), l.changed ? 1 : 0, json(l.previous));
          }
        }
        this.#stmts.setCheckpoint.run(to, NAME);
        return false;
      }).immediate();
      from = moved ? this.checkpoint() : to;
    }
    return this.state();
  }

  /** Forgets what was found and checks the whole log again. */
  rebuild(): DecisionCheckState {
    this.#db.transaction(() => this.#reset()).immediate();
    return this.catchUp();
  }

  #checkRollout(e: EventOf<"rollout.decided">): Divergence[] {
    const name = e.data.name;
    const expected = decideRollout(loadDeciderState(this.#store, name, e.seq).state);
    const out: Divergence[] = [];
    if (canonicalize(expected.inputs) !== canonicalize(e.data.inputs)) out.push({ seq: e.seq, name, field: "inputs", recorded: e.data.inputs, expected: expected.inputs });
    if (canonicalize(expected.plan) !== canonicalize(e.data.plan)) out.push({ seq: e.seq, name, field: "plan", recorded: e.data.plan, expected: expected.plan });
    return out;
  }

  #totals(): Totals {
    const t = this.#stmts.totals.get();
    if (t === undefined) return { checked: 0, diverged: 0, more: 0, listsKnown: false, divergences: [] };
    return { checked: t.checked, diverged: t.diverged, more: t.more, listsKnown: t.lists_known === 1, divergences: JSON.parse(t.divergences) as Divergence[] };
  }

  #lists(): Map<string, EgressListState> {
    const out = new Map<string, EgressListState>();
    for (const r of this.#stmts.lists.all()) {
      out.set(r.plugin, { current: unjson(r.current), changed: r.changed === 1, previous: unjson(r.previous) });
    }
    return out;
  }

  #reset(): void {
    this.#db.exec("DROP TABLE IF EXISTS proj_decision_check");
    this.#db.exec("DROP TABLE IF EXISTS proj_decision_check_lists");
    for (const ddl of DDL) this.#db.exec(ddl);
    this.#db.prepare("INSERT INTO projection_checkpoints (name, version, seq) VALUES (?, ?, 0) ON CONFLICT (name) DO UPDATE SET version = excluded.version, seq = 0").run(NAME, VERSION);
  }
}

function json(s: AllowListState | null): string | null {
  return s === null ? null : JSON.stringify(s);
}

function unjson(s: string | null): AllowListState | null {
  return s === null ? null : (JSON.parse(s) as AllowListState);
}

const opened = new WeakMap<EventStore, DecisionCheck>();

/** The incremental check of a store (one per store object, made on first use). */
export function decisionCheck(store: EventStore, recheck?: AddressRecheck): DecisionCheck {
  let c = opened.get(store);
  if (c === undefined) { c = new DecisionCheck(store, recheck); opened.set(store, c); }
  return c;
}
