/**
 * The decision check kept as events arrive, for the console's integrity page: every decision
 * appended after the check's checkpoint is re-decided once — a rollout decision from the decider's
 * state as the log stood before it (the indexed lookups the reconciler decides with), an egress
 * decision against the allow-list its plugin had then (the egress re-decider's state, kept per
 * plugin), a verdict from the events before it (`check-verdicts.ts`, docs/adr/0191) — and what was
 * found is kept with the checkpoint. A page then costs what was appended
 * since it was last shown, not the whole log. `checkDecisions`, which folds the log from zero,
 * stays the full check; a property test holds the two to the same answer.
 */
import type { DecisionCheckList, DecisionCheckTable, EventOf, EventLog, EventTypeName, KnownEvent } from "../events/index.js";
import { EGRESS_RULES, loadSchemaChecks } from "../plugins/index.js";
import { recheckRollout } from "./check-decisions.js";
import type { DeciderRules, Divergence, RolloutFindings, UpgradeEffect } from "./check-decisions.js";
import { EgressChecker } from "./check-egress.js";
import type { AddressRecheck, AddressRules, EgressListState } from "./check-egress.js";
import { ROLLOUT_RULES } from "./decide-rollout.js";
import { loadDeciderState } from "./decider-state.js";
import { VERDICT_CHECK_EVENT_TYPES, VERDICT_INPUT_TYPES, VerdictChecker } from "./check-verdicts.js";

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
  /**
   * Decisions made under older rules that today's would make differently (upgrade effects, not
   * divergences): the first {@link MAX_KEPT} of their parts, in seq order.
   */
  readonly upgrades: readonly UpgradeEffect[];
  /** Whether more upgrade effects were found than kept (`check-decisions` lists them all). */
  readonly upgradesCapped: boolean;
}

/** The most differences kept to show; `check-decisions` lists them all. */
export const MAX_KEPT = 100;

/** The event types the check reads: the decisions, what the egress re-decider folds, the verdicts and what they are decided from. */
const TYPES: readonly EventTypeName[] = [...new Set<EventTypeName>(["rollout.decided", "egress.decision", "workload.desired", "plugin.deleted", ...VERDICT_CHECK_EVENT_TYPES])];
const EGRESS_TYPES: ReadonlySet<string> = new Set(["egress.decision", "workload.desired", "plugin.deleted"]);
const VERDICT_TYPES: ReadonlySet<string> = new Set(VERDICT_CHECK_EVENT_TYPES);
const VERDICTS: ReadonlySet<string> = new Set(["signature.verdict", "config.verdict", "grant.verdict"]);
/**
 * Version 2: each difference names its family and rules, and upgrade effects are kept too (ADR
 * 0150). Version 3: verdicts are re-decided too (ADR 0191).
 */
const VERSION = 3;
/** Seqs re-decided per transaction: a long catch-up commits in steps. */
const STEP = 5_000;
const PAGE = 5_000;

interface Totals { checked: number; diverged: number; more: number; listsKnown: boolean; divergences: Divergence[]; upgrades: UpgradeEffect[] }

const NO_TOTALS: Totals = { checked: 0, diverged: 0, more: 0, listsKnown: false, divergences: [], upgrades: [] };

/** A kept upgrade effect, told apart from the divergences it is stored beside. */
type KeptUpgrade = UpgradeEffect & { readonly upgrade: true };

/** The incremental decision check of one log. */
export class DecisionCheck {
  readonly #store: EventLog;
  readonly #recheck: AddressRecheck | AddressRules | undefined;
  readonly #rules: DeciderRules;
  #opened: Promise<void> | null = null;
  /** Catch-ups one at a time (two at once would only find each other's checkpoint moved and check again). */
  #queue: Promise<unknown> = Promise.resolve();

  /** `recheck`: the egress proxy's address step (`ADDRESS_RULES`), and `rules` the deciders' rules, as `checkDecisions` takes them. */
  constructor(store: EventLog, recheck?: AddressRecheck | AddressRules, rules: DeciderRules = {}) {
    this.#store = store;
    this.#recheck = recheck;
    this.#rules = rules;
  }

  /** The seq the check reached. */
  async checkpoint(): Promise<number> {
    await this.#open();
    return this.#table.checkpoint();
  }

  /** What was found up to the checkpoint, without checking anything new. */
  async state(): Promise<DecisionCheckState> {
    await this.#open();
    const upTo = await this.#table.checkpoint();
    const t = (await this.#load()).totals;
    return { upTo, checked: t.checked, diverged: t.diverged, divergences: t.divergences, more: t.more, upgrades: t.upgrades, upgradesCapped: t.upgrades.length >= MAX_KEPT };
  }

  /**
   * Re-decides every decision appended after the checkpoint, up to the log's head, in steps of
   * {@link STEP} seqs, each its own transaction (at most `steps` of them).
   */
  catchUp(steps = Number.POSITIVE_INFINITY): Promise<DecisionCheckState> {
    return this.#serial(async () => {
      await this.#catchUp(steps);
      return this.state();
    });
  }

  /** Forgets what was found and checks the whole log again. */
  rebuild(): Promise<DecisionCheckState> {
    return this.#serial(async () => {
      await this.#open();
      await this.#table.reset();
      await this.#catchUp(Number.POSITIVE_INFINITY);
      return this.state();
    });
  }

  /** The log's table. */
  get #table(): DecisionCheckTable {
    return this.#store.tables.decisionCheck;
  }

  #open(): Promise<void> {
    this.#opened ??= this.#table.open(VERSION).catch((err: unknown) => {
      this.#opened = null;
      throw err;
    });
    return this.#opened;
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #catchUp(steps: number): Promise<void> {
    await this.#open();
    const head = await this.#store.head();
    for (let from = await this.#table.checkpoint(), step = 0; from < head && step < steps; step++) {
      const to = Math.min(head, from + STEP);
      const { totals, lists } = await this.#load();
      const egress = new EgressChecker(this.#recheck, { lists, listsKnown: totals.listsKnown }, this.#rules.egress ?? EGRESS_RULES);
      const found: Divergence[] = [];
      const upgraded: UpgradeEffect[] = [];
      let rollouts = 0;
      const verdictEvents: KnownEvent[] = [];
      for await (const page of this.#store.pages({ afterSeq: from, toSeq: to, types: TYPES, pageSize: PAGE })) {
        for (const e of page) {
          if (VERDICT_TYPES.has(e.type)) verdictEvents.push(e);
          if (EGRESS_TYPES.has(e.type)) egress.feed(e);
          if (e.type !== "rollout.decided") continue;
          rollouts++;
          const r = await this.#checkRollout(e);
          found.push(...r.divergences);
          upgraded.push(...r.upgrades);
        }
      }
      const v = await this.#checkVerdicts(from, verdictEvents);
      found.push(...v.divergences);
      upgraded.push(...v.upgrades);
      const r = egress.result();
      for (const d of r.divergences) found.push({ seq: d.seq, name: d.plugin, family: "egress", rules: d.rules, field: `egress.${d.field}`, recorded: d.recorded, expected: d.expected });
      for (const u of r.upgrades) upgraded.push({ seq: u.seq, name: u.plugin, family: "egress", rules: u.rules, today: u.today, field: `egress.${u.field}`, before: u.before, after: u.after });
      const next = egress.state();
      const { diverged, more, stored } = keep(totals, found, upgraded);
      const saved = await this.#table.save(from, to, { checked: totals.checked + rollouts + r.checked, diverged, more, listsKnown: next.listsKnown, divergences: stored }, changedLists(lists, next.lists));
      // Not saved: another process checked these seqs meanwhile, and counting them again would count them twice.
      from = saved ? to : await this.#table.checkpoint();
    }
  }

  /**
   * The verdicts among `events` (the verdict check's types after `from`, in seq order) re-decided:
   * only when there is one, the inputs before `from` are folded first (catalogs, plugins, grants).
   */
  async #checkVerdicts(from: number, events: readonly KnownEvent[]): Promise<{ divergences: Divergence[]; upgrades: UpgradeEffect[] }> {
    if (!events.some((e) => VERDICTS.has(e.type))) return { divergences: [], upgrades: [] };
    const checker = new VerdictChecker((await loadSchemaChecks()).validateConfig, this.#rules);
    if (from > 0) for await (const page of this.#store.pages({ toSeq: from, types: VERDICT_INPUT_TYPES, pageSize: PAGE, hashes: false })) for (const e of page) checker.feed(e);
    for (const e of events) checker.feed(e);
    const r = checker.result();
    return { divergences: r.divergences, upgrades: r.upgrades };
  }

  async #checkRollout(e: EventOf<"rollout.decided">): Promise<RolloutFindings> {
    return recheckRollout(e, (await loadDeciderState(this.#store, e.data.name, e.seq)).state, this.#rules.rollout ?? ROLLOUT_RULES);
  }

  async #load(): Promise<{ totals: Totals; lists: Map<string, EgressListState> }> {
    const { totals, lists } = await this.#table.load();
    // The table holds what this class saved: divergences, upgrade effects and list states, as JSON.
    const kept = (totals?.divergences ?? []) as (Divergence | KeptUpgrade)[];
    const divergences = kept.filter((d): d is Divergence => !("upgrade" in d));
    const upgrades = kept.filter((d): d is KeptUpgrade => "upgrade" in d).map(({ upgrade: _u, ...u }): UpgradeEffect => u);
    const t: Totals = totals === null ? NO_TOTALS : { ...totals, divergences, upgrades };
    return { totals: t, lists: lists as Map<string, EgressListState> };
  }
}

/**
 * The totals after a step that found `found` and `upgraded`: the first {@link MAX_KEPT} of each
 * kept (upgrade effects marked apart in the one stored list), the rest of the differences counted.
 */
function keep(totals: Totals, found: Divergence[], upgraded: UpgradeEffect[]): { diverged: number; more: number; stored: (Divergence | KeptUpgrade)[] } {
  // Stable: a decision's parts stay in the order the full check reports them.
  found.sort((a, b) => a.seq - b.seq);
  upgraded.sort((a, b) => a.seq - b.seq);
  const kept = [...totals.divergences, ...found.slice(0, Math.max(0, MAX_KEPT - totals.divergences.length))];
  const upgrades = [...totals.upgrades, ...upgraded.slice(0, Math.max(0, MAX_KEPT - totals.upgrades.length))];
  return {
    diverged: totals.diverged + new Set(found.map((d) => d.seq)).size,
    more: totals.more + found.length - (kept.length - totals.divergences.length),
    stored: [...kept, ...upgrades.map((u): KeptUpgrade => ({ ...u, upgrade: true }))],
  };
}

/** The list states that differ from the ones read (only those are written back). */
function changedLists(before: ReadonlyMap<string, EgressListState>, after: ReadonlyMap<string, EgressListState>): Map<string, DecisionCheckList> {
  const changed = new Map<string, DecisionCheckList>();
  for (const [plugin, l] of after) {
    const b = before.get(plugin);
    if (b === undefined || b.current?.seq !== l.current?.seq || b.changed !== l.changed || b.previous?.seq !== l.previous?.seq) changed.set(plugin, l);
  }
  return changed;
}

const opened = new WeakMap<EventLog, DecisionCheck>();

/** The incremental check of a log (one per log object, made on first use). */
export function decisionCheck(store: EventLog, recheck?: AddressRecheck | AddressRules): DecisionCheck {
  let c = opened.get(store);
  if (c === undefined) { c = new DecisionCheck(store, recheck); opened.set(store, c); }
  return c;
}
