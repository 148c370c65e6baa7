/**
 * The egress re-decider (issue 11, "Egress recording"): re-run the proxy's pure decision over what
 * each `egress.decision` recorded — the allow-list in force (folded from this log's
 * `workload.desired`/`plugin.deleted`), the plugin, the destination and the recorded addresses —
 * and report every decision the inputs do not reproduce, like rollout divergences (ADR 0032).
 *
 * The allow-list step is the pure model's `decideEgress`, the one the proxy runs. The address
 * step is the proxy's own (`src/egress`), which this room may not import (DESIGN.md's arrows): the
 * caller passes it in as an {@link AddressRecheck} (`recheckAddresses` from `src/egress`); without
 * one, only the allow-list is re-decided and the rest is counted.
 */
import type { EgressDecision, EventLog, EventTypeName, KnownEvent } from "../events/index.js";
import { allowListFromHosts, EGRESS_RULES, type AllowLists, type EgressAllowList, type EgressListStep, type RulesRegistry } from "../plugins/index.js";
import { entryToHost } from "./allowlists.js";
import { evolveAllowList, type AllowListState } from "./folds.js";

/** One recorded egress decision its inputs do not reproduce under the rules it names. */
export interface EgressDivergence {
  readonly seq: number;
  readonly plugin: string;
  /** The egress rules the decision names. */
  readonly rules: number;
  /**
   * Which part differs: the allow-list's answer, the dialed address, the address refusal, or the
   * rules themselves (a version this release does not know: re-deciding is impossible).
   */
  readonly field: "list" | "address" | "refusal" | "rules";
  readonly recorded: unknown;
  readonly expected: unknown;
}

/** One egress decision today's rules would make differently from the older rules it was made with. */
export interface EgressUpgrade {
  readonly seq: number;
  readonly plugin: string;
  /** The rules the decision was made with, and today's. */
  readonly rules: number;
  readonly today: number;
  readonly field: "list" | "address" | "refusal";
  /** What was recorded, and what today's rules answer. */
  readonly before: unknown;
  readonly after: unknown;
}

/**
 * The proxy's address step over recorded addresses, with the seed's fixed ranges only: the first
 * address to dial, or the first refused one and why (`src/egress`'s `recheckAddresses`).
 */
export type AddressRecheck = (addresses: readonly string[]) =>
  | { readonly ok: true; readonly address: string }
  | { readonly ok: false; readonly code: "forbidden_address"; readonly refusedAddress: string; readonly addressRefusal: string }
  | { readonly ok: false; readonly code: "dns_no_addresses" };

/**
 * The egress rules' address step, version by version (`ADDRESS_RULES` from `src/egress`), or one
 * step for every version (a test's).
 */
export type AddressRules = RulesRegistry<AddressRecheck>;

/** The outcome of an egress check. */
export interface EgressCheckResult {
  /** Decisions compared. */
  readonly checked: number;
  readonly divergences: readonly EgressDivergence[];
  /** Decisions made under older rules that today's rules would make differently. */
  readonly upgrades: readonly EgressUpgrade[];
  /** Decisions checked, by the rules version they name. */
  readonly byRules: ReadonlyMap<number, number>;
  /** Decisions whose allow-list this log does not hold (a proxy's own log): addresses only. */
  readonly listsUnknown: number;
  /** Decisions whose addresses were not re-checked: version-1 rows (none recorded), or no {@link AddressRecheck} given. */
  readonly addressesUnchecked: number;
}

/** The event types the egress re-decider reads. */
export const EGRESS_CHECK_EVENT_TYPES: readonly EventTypeName[] = ["workload.desired", "plugin.deleted", "egress.decision"];

/** Address refusals that depend on the deployment (its deny CIDRs, its own addresses). */
const DEPLOYMENT_REFUSALS: ReadonlySet<string> = new Set(["denied_cidr", "own_address"]);
const LIST_REFUSALS: ReadonlySet<string> = new Set(["not_listed", "no_allow_list"]);

/**
 * What the egress re-decider knows of one plugin: its allow-list, and, once the list changed, the
 * list before its latest change (null when there was none then).
 */
export interface EgressListState {
  readonly current: AllowListState | null;
  readonly changed: boolean;
  readonly previous: AllowListState | null;
}

/** The re-decider's state carried from one stretch of the log to the next (the incremental check keeps it). */
export interface EgressCheckerState {
  readonly lists: ReadonlyMap<string, EgressListState>;
  /** Whether any allow-list event was seen: before one, the log is a proxy's own and lists are unknown. */
  readonly listsKnown: boolean;
}

/** Feeds events in seq order; checks each egress decision against the state before it. Pure. */
export class EgressChecker {
  readonly #states = new Map<string, AllowListState>();
  /** The list each plugin had before its latest change: a decision may race one swap (ADR 0032). */
  readonly #previous = new Map<string, AllowListState | undefined>();
  readonly #divergences: EgressDivergence[] = [];
  readonly #upgrades: EgressUpgrade[] = [];
  readonly #byRules = new Map<number, number>();
  #listsKnown = false;
  #checked = 0;
  #listsUnknown = 0;
  #addressesUnchecked = 0;
  readonly #recheck: AddressRecheck | AddressRules | undefined;
  readonly #rules: RulesRegistry<EgressListStep>;

  /**
   * `recheck`: the address step (per rules version, or one for all); `from`: the state after an
   * earlier stretch of the log, this checker then goes on from; `rules`: the allow-list step's
   * versions (the pure model's `EGRESS_RULES`; a test passes one with a version more).
   */
  constructor(recheck?: AddressRecheck | AddressRules, from?: EgressCheckerState, rules: RulesRegistry<EgressListStep> = EGRESS_RULES) {
    this.#recheck = recheck;
    this.#rules = rules;
    if (from === undefined) return;
    this.#listsKnown = from.listsKnown;
    for (const [plugin, l] of from.lists) {
      if (l.current !== null) this.#states.set(plugin, l.current);
      if (l.changed) this.#previous.set(plugin, l.previous ?? undefined);
    }
  }

  /** The state to go on from after the events fed so far. */
  state(): EgressCheckerState {
    const lists = new Map<string, EgressListState>();
    for (const plugin of new Set([...this.#states.keys(), ...this.#previous.keys()])) {
      lists.set(plugin, { current: this.#states.get(plugin) ?? null, changed: this.#previous.has(plugin), previous: this.#previous.get(plugin) ?? null });
    }
    return { lists, listsKnown: this.#listsKnown };
  }

  /** Folds one event (checking it first when it is an egress decision). */
  feed(e: KnownEvent): void {
    switch (e.type) {
      case "egress.decision":
        this.#check(e.seq, e.data);
        return;
      case "workload.desired":
      case "plugin.deleted": {
        this.#listsKnown = true;
        const name = e.data.name;
        const before = this.#states.get(name);
        const next = evolveAllowList(before, e);
        if (next === before) return;
        this.#previous.set(name, before);
        if (next === undefined) this.#states.delete(name);
        else this.#states.set(name, next);
        return;
      }
      default:
        return;
    }
  }

  /** What was found so far. */
  result(): EgressCheckResult {
    return {
      checked: this.#checked, divergences: [...this.#divergences], upgrades: [...this.#upgrades], byRules: new Map(this.#byRules),
      listsUnknown: this.#listsUnknown, addressesUnchecked: this.#addressesUnchecked,
    };
  }

  /** The address step of a rules version: the registry's, or the one given for all. */
  #addressStep(version: number): AddressRecheck | undefined {
    const r = this.#recheck;
    return r === undefined || typeof r === "function" ? r : r.get(version)?.decide;
  }

  #check(seq: number, d: EgressDecision): void {
    this.#checked++;
    this.#byRules.set(d.rules, (this.#byRules.get(d.rules) ?? 0) + 1);
    const own = this.#rules.get(d.rules);
    if (!this.#listsKnown) this.#listsUnknown++;
    const unchecked = !LIST_REFUSALS.has(d.reason) && (d.addresses === undefined || this.#recheck === undefined);
    if (unchecked) this.#addressesUnchecked++;
    if (own === undefined) {
      // Rules this release does not know (a newer release's, or a number written by hand): nothing re-decides it.
      this.#divergences.push({ seq, plugin: d.plugin, rules: d.rules, field: "rules", recorded: d.rules, expected: `rules 1 to ${this.#rules.today.version}` });
      return;
    }
    const found = this.#redecide(d, own.decide, this.#addressStep(d.rules));
    for (const f of found) this.#divergences.push({ seq, plugin: d.plugin, rules: d.rules, ...f });
    const today = this.#rules.today;
    if (today.version === d.rules) return;
    // An upgrade's effect: what today's rules answer where the decision's own rules answer otherwise.
    const differs = new Set(found.map((f) => f.field));
    for (const f of this.#redecide(d, today.decide, this.#addressStep(today.version))) {
      if (!differs.has(f.field)) this.#upgrades.push({ seq, plugin: d.plugin, rules: d.rules, today: today.version, field: f.field, before: f.recorded, after: f.expected });
    }
  }

  /** Re-decides one decision under one version's steps: the parts it does not reproduce. */
  #redecide(d: EgressDecision, list: EgressListStep, recheck: AddressRecheck | undefined): Finding[] {
    const out: Finding[] = [];
    if (this.#listsKnown) this.#checkList(d, list, out);
    if (LIST_REFUSALS.has(d.reason)) return out;
    if (d.addresses === undefined || recheck === undefined) return out;
    checkAddresses(d, d.addresses, recheck, out);
    return out;
  }

  #checkList(d: EgressDecision, list: EgressListStep, out: Finding[]): void {
    const recorded = LIST_REFUSALS.has(d.reason) ? d.reason : "listed";
    const answer = (s: AllowListState | undefined): string => {
      const v = list(listsOf(d.plugin, s), d.plugin, d.host, d.port);
      return v.allowed ? "listed" : v.reason;
    };
    const expected = answer(this.#states.get(d.plugin));
    if (expected === recorded) return;
    if (this.#previous.has(d.plugin) && answer(this.#previous.get(d.plugin)) === recorded) return;
    out.push({ field: "list", recorded, expected });
  }
}

/** A part of a decision that one version's steps do not reproduce. */
interface Finding {
  readonly field: "list" | "address" | "refusal";
  readonly recorded: unknown;
  readonly expected: unknown;
}

/** The address step again over the recorded addresses (pure). */
function checkAddresses(d: EgressDecision, addresses: readonly string[], recheck: AddressRecheck, out: Finding[]): void {
  const again = recheck(addresses);
  const diverge = (field: Finding["field"], recorded: unknown, expected: unknown): void => {
    out.push({ field, recorded, expected });
  };
  if (d.allowed) {
    // Every address passed the proxy's policy, so each passes the fixed ranges; the first is dialed.
    if (!again.ok) diverge("refusal", null, again.code === "forbidden_address" ? { refusedAddress: again.refusedAddress, addressRefusal: again.addressRefusal } : again.code);
    else if (again.address !== d.address) diverge("address", d.address ?? null, again.address);
    return;
  }
  if (d.reason === "forbidden_address") {
    const recorded = { refusedAddress: d.refusedAddress ?? null, addressRefusal: d.addressRefusal ?? null };
    const at = d.refusedAddress === undefined ? -1 : addresses.indexOf(d.refusedAddress);
    if (at < 0) return diverge("refusal", recorded, "an address among the recorded ones");
    if (DEPLOYMENT_REFUSALS.has(d.addressRefusal ?? "")) {
      // The deployment's own ranges are not in the log; the addresses before the refused one
      // passed the proxy's whole policy, so they pass the fixed ranges too.
      const before = recheck(addresses.slice(0, at));
      if (!before.ok && before.code === "forbidden_address") diverge("refusal", recorded, { refusedAddress: before.refusedAddress, addressRefusal: before.addressRefusal });
      return;
    }
    const expected = again.ok || again.code !== "forbidden_address" ? null : { refusedAddress: again.refusedAddress, addressRefusal: again.addressRefusal };
    if (expected === null || expected.refusedAddress !== recorded.refusedAddress || expected.addressRefusal !== recorded.addressRefusal) diverge("refusal", recorded, expected);
    return;
  }
  // Refused by DNS: it gave no address the proxy could use.
  if (addresses.length !== 0) diverge("refusal", d.reason, again.ok ? "listed" : again.code);
}

function listsOf(plugin: string, s: AllowListState | undefined): AllowLists {
  const lists = new Map<string, EgressAllowList>();
  if (s === undefined) return lists;
  const list = allowListFromHosts(s.entries.map(entryToHost));
  // An entry the codec refuses was never on any proxy's list: the plugin then has none.
  if (list.ok) lists.set(plugin, list.value);
  return lists;
}

/** Re-decides every recorded egress decision in the store (up to `toSeq` when given). */
export async function checkEgress(
  store: EventLog,
  opts: { toSeq?: number; pageSize?: number; recheck?: AddressRecheck | AddressRules; rules?: RulesRegistry<EgressListStep> } = {},
): Promise<EgressCheckResult> {
  const checker = new EgressChecker(opts.recheck, undefined, opts.rules);
  const toSeq = opts.toSeq ?? await store.head();
  const pageSize = opts.pageSize ?? 20_000;
  for await (const page of store.pages({ types: EGRESS_CHECK_EVENT_TYPES, toSeq, pageSize })) for (const e of page) checker.feed(e);
  return checker.result();
}
