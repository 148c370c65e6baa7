/**
 * The decision check: re-run the deciders over the log and compare their answers with every
 * recorded decision. This is what makes the audit replayable rather than only readable: a decision
 * that the recorded facts do not reproduce is reported, whoever wrote it.
 *
 * Each decision names the version of the rules that made it (ADR 0150), and is re-decided under
 * those rules: a difference there is a divergence (a bug or tampering). A decision made under
 * older rules is also decided under today's, and a difference there is reported apart, as an
 * upgrade's effect (what the owner's upgrade changed), never as a divergence. The verdicts the
 * decisions rest on (signature, config, grant) name their rules too and are re-decided alike
 * (`check-verdicts.ts`, docs/adr/0191).
 */
import { canonicalize } from "json-canonicalize";
import { GATEWAY_RULES_VERSION, verdictKey } from "../events/index.js";
import type { EventOf, EventLog, EventTypeName, KnownEvent, VerdictOutcome } from "../events/index.js";
import { CONFIG_RULES, EGRESS_RULES, GRANT_RULES, loadSchemaChecks, SIGNATURE_RULES, type EgressListStep, type RulesRegistry, type VerdictFamily } from "../plugins/index.js";
import { emptyFacts, evolveFacts, ROLLOUT_RULES } from "./decide-rollout.js";
import type { DeciderState, PluginFacts, RolloutDecider, RolloutDecision } from "./decide-rollout.js";
import { checkEgress, type AddressRecheck, type AddressRules } from "./check-egress.js";
import { checkVerdicts, type VerdictCheckResult, type VerdictField, type VerdictRulesSet, type VerdictUpgrade } from "./check-verdicts.js";

/** The decider families whose decisions are re-decided. */
export type DecisionFamily = "rollout" | "egress";

/** One recorded decision that the rules it names do not reproduce: a bug or tampering. */
export interface Divergence {
  readonly seq: number;
  readonly name: string;
  /**
   * Which decider made it; a verdict's family (`signature`: the catalog part of a signature verdict,
   * docs/adr/0158; `config`, `grant`) for a verdict (docs/adr/0191).
   */
  readonly family: DecisionFamily | VerdictFamily;
  /** The rules version the decision names. */
  readonly rules: number;
  /**
   * Which part differs (`egress.*`: an egress decision, re-decided by `check-egress.ts`); `rules`
   * or `egress.rules`: the decision names rules this release does not know, so nothing re-decides it.
   */
  readonly field: "inputs" | "plan" | "rules" | "egress.list" | "egress.address" | "egress.refusal" | "egress.rules" | VerdictField;
  readonly recorded: unknown;
  readonly expected: unknown;
}

/** One decision made under older rules that today's rules would make differently: an upgrade's effect. */
export interface UpgradeEffect {
  readonly seq: number;
  readonly name: string;
  readonly family: DecisionFamily | VerdictFamily;
  /** The rules the decision was made with. */
  readonly rules: number;
  /** Today's rules (the newest of its family). */
  readonly today: number;
  readonly field: "inputs" | "plan" | "egress.list" | "egress.address" | "egress.refusal" | VerdictUpgrade["field"];
  /** The decision's answer under its own rules, and today's answer. */
  readonly before: unknown;
  readonly after: unknown;
}

/** Decisions of one family, by the rules version they name, and its rules today. */
export interface FamilyRules {
  readonly today: number;
  /** Decisions checked per rules version (`"1": 12`). */
  readonly decisions: Readonly<Record<string, number>>;
}

/** The outcome of a check. */
export interface CheckResult {
  /** Decisions compared. */
  readonly checked: number;
  readonly divergences: readonly Divergence[];
  /** Decisions under older rules that today's would make differently (not divergences). */
  readonly upgrades: readonly UpgradeEffect[];
  /** Per family: its rules today and the decisions checked under each version. */
  readonly rules: Readonly<Record<DecisionFamily, FamilyRules>>;
  /**
   * Decisions that name their rules but are not re-decided, by family: the gateway's, whose user
   * access review the cluster answered and the log does not hold.
   */
  readonly notRedecided: Readonly<Record<"gateway", FamilyRules>>;
  /**
   * Verdicts re-decided (not counted in `checked`): signature verdicts whose catalog part was
   * re-decided from the catalog each cites, config and grant verdicts; those their rules do not
   * reproduce are divergences of family `signature`, `config` or `grant`.
   */
  readonly verdicts: number;
  /** Per verdict family: its rules today and the verdicts re-decided under each version. */
  readonly verdictRules: Readonly<Record<VerdictFamily, FamilyRules>>;
}

/** The rules each family re-decides with: the released ones, or a test's with a version more. */
export interface DeciderRules extends VerdictRulesSet {
  readonly rollout?: RulesRegistry<RolloutDecider>;
  readonly egress?: RulesRegistry<EgressListStep>;
}

/** The event types the decider reads (a refused grant's verdict too: the decider then approves nothing of it). */
export const DECIDER_EVENT_TYPES: readonly EventTypeName[] = [
  "plugin.observed", "plugin.deleted", "grant.observed", "grant.deleted", "grant.verdict", "config.verdict", "signature.verdict", "previous.observed", "rollout.decided",
];

/** What re-deciding one rollout decision found: its divergences and its upgrade's effects. */
export interface RolloutFindings {
  readonly divergences: Divergence[];
  readonly upgrades: UpgradeEffect[];
}

/**
 * Re-decides one recorded rollout decision from the decider's state before it: under the rules it
 * names (divergences) and, when those are older, under today's (upgrade effects). Pure.
 */
export function recheckRollout(e: EventOf<"rollout.decided">, state: DeciderState, registry: RulesRegistry<RolloutDecider> = ROLLOUT_RULES): RolloutFindings {
  const name = e.data.name;
  const rules = e.data.rules;
  const own = registry.get(rules);
  if (own === undefined) {
    return { divergences: [{ seq: e.seq, name, family: "rollout", rules, field: "rules", recorded: rules, expected: `rules 1 to ${registry.today.version}` }], upgrades: [] };
  }
  const expected = own.decide(state);
  const divergences: Divergence[] = [];
  for (const field of ["inputs", "plan"] as const) {
    if (canonicalize(expected[field]) !== canonicalize(e.data[field])) divergences.push({ seq: e.seq, name, family: "rollout", rules, field, recorded: e.data[field], expected: expected[field] });
  }
  const upgrades: UpgradeEffect[] = [];
  if (registry.today.version !== rules) {
    const now: RolloutDecision = registry.today.decide(state);
    for (const field of ["inputs", "plan"] as const) {
      if (canonicalize(now[field]) !== canonicalize(expected[field])) upgrades.push({ seq: e.seq, name, family: "rollout", rules, today: registry.today.version, field, before: expected[field], after: now[field] });
    }
  }
  return { divergences, upgrades };
}

/** Feeds events in seq order; compares each decision with the decider's answer on the state before it. Pure. */
export class DecisionChecker {
  readonly #facts = new Map<string, PluginFacts>();
  readonly #verdicts = new Map<string, VerdictOutcome>();
  readonly #divergences: Divergence[] = [];
  readonly #upgrades: UpgradeEffect[] = [];
  readonly #byRules = new Map<number, number>();
  readonly #rules: RulesRegistry<RolloutDecider>;
  #checked = 0;

  constructor(rules: RulesRegistry<RolloutDecider> = ROLLOUT_RULES) {
    this.#rules = rules;
  }

  /** Folds one event (checking it first when it is a decision). */
  feed(e: KnownEvent): void {
    if (e.type === "signature.verdict") {
      this.#verdicts.set(verdictKey(e.data.digest, e.data.manifest), e.data.outcome);
      return;
    }
    if (e.type === "rollout.decided") this.#check(e);
    if (!("name" in e.data)) return;
    const name = e.data.name;
    const next = evolveFacts(this.#facts.get(name), e);
    if (next !== undefined) this.#facts.set(name, next);
  }

  /** What was found so far. */
  result(): CheckResult {
    return {
      checked: this.#checked,
      divergences: [...this.#divergences],
      upgrades: [...this.#upgrades],
      rules: { rollout: familyRules(this.#rules.today.version, this.#byRules), egress: familyRules(EGRESS_RULES.today.version, new Map()) },
      notRedecided: { gateway: familyRules(GATEWAY_RULES_VERSION, new Map()) },
      // The rollout checker alone: verdicts are re-checked by checkVerdicts.
      verdicts: 0,
      verdictRules: { signature: familyRules(SIGNATURE_RULES.today.version, new Map()), config: familyRules(CONFIG_RULES.today.version, new Map()), grant: familyRules(GRANT_RULES.today.version, new Map()) },
    };
  }

  #check(e: EventOf<"rollout.decided">): void {
    this.#checked++;
    this.#byRules.set(e.data.rules, (this.#byRules.get(e.data.rules) ?? 0) + 1);
    const facts = this.#facts.get(e.data.name) ?? emptyFacts(e.data.name);
    const found = recheckRollout(e, { ...facts, verdicts: this.#verdicts }, this.#rules);
    this.#divergences.push(...found.divergences);
    this.#upgrades.push(...found.upgrades);
  }
}

/** The per-version counts as JSON (`{"1": 12}`). */
export function familyRules(today: number, byRules: ReadonlyMap<number, number>): FamilyRules {
  const decisions: Record<string, number> = {};
  for (const [v, n] of [...byRules].sort((a, b) => a[0] - b[0])) decisions[String(v)] = n;
  return { today, decisions };
}

/**
 * Checks every recorded decision in the store (up to `toSeq` when given). `egressAddresses`: the
 * egress rules' address step (`ADDRESS_RULES` from `src/egress`, or one step for every version);
 * `rules`: the rules re-decided with (the released ones unless a test gives others).
 */
export async function checkDecisions(
  store: EventLog,
  opts: { toSeq?: number; pageSize?: number; egressAddresses?: AddressRecheck | AddressRules; rules?: DeciderRules } = {},
): Promise<CheckResult> {
  const rules = opts.rules ?? {};
  const rolloutRules = rules.rollout ?? ROLLOUT_RULES;
  const egressRules = rules.egress ?? EGRESS_RULES;
  const checker = new DecisionChecker(rolloutRules);
  const toSeq = opts.toSeq ?? await store.head();
  const pageSize = opts.pageSize ?? 20_000;
  // The deciders parse each spec with its config schema checked for real (an audit takes no
  // verdict's word for it), and config verdicts are re-decided below: the checks load first.
  const schemaChecks = await loadSchemaChecks();
  for await (const page of store.pages({ types: DECIDER_EVENT_TYPES, toSeq, pageSize })) for (const e of page) checker.feed(e);
  const rollouts = checker.result();
  // Egress decisions too (ADR 0032); their address step is the proxy's, passed in by the caller.
  const egress = await checkEgress(store, { toSeq, pageSize, rules: egressRules, ...(opts.egressAddresses !== undefined ? { recheck: opts.egressAddresses } : {}) });
  const more = egress.divergences.map((d): Divergence => ({ seq: d.seq, name: d.plugin, family: "egress", rules: d.rules, field: `egress.${d.field}`, recorded: d.recorded, expected: d.expected }));
  const gateway = new Map<number, number>();
  for await (const page of store.pages({ types: ["gateway.decision"], toSeq, pageSize, hashes: false })) {
    for (const e of page) if (e.type === "gateway.decision") gateway.set(e.data.rules, (gateway.get(e.data.rules) ?? 0) + 1);
  }
  // The verdicts, each under the rules it names (docs/adr/0191): the catalog part of signature
  // verdicts from the catalog they cite (docs/adr/0158), config and grant verdicts from the log.
  const verdicts = await checkVerdicts(store, { toSeq, pageSize, check: schemaChecks.validateConfig, rules });
  more.push(...verdicts.divergences);
  const upgrades = egress.upgrades.map((u): UpgradeEffect => ({ seq: u.seq, name: u.plugin, family: "egress", rules: u.rules, today: u.today, field: `egress.${u.field}`, before: u.before, after: u.after }));
  upgrades.push(...verdicts.upgrades);
  return {
    checked: rollouts.checked + egress.checked,
    divergences: [...rollouts.divergences, ...more].sort((a, b) => a.seq - b.seq),
    upgrades: [...rollouts.upgrades, ...upgrades].sort((a, b) => a.seq - b.seq),
    rules: { rollout: rollouts.rules.rollout, egress: familyRules(egressRules.today.version, egress.byRules) },
    notRedecided: { gateway: familyRules(GATEWAY_RULES_VERSION, gateway) },
    ...verdictTotals(verdicts, rules),
  };
}

/** The verdicts re-decided, in all and per family with its rules today. */
function verdictTotals(r: VerdictCheckResult, rules: VerdictRulesSet): Pick<CheckResult, "verdicts" | "verdictRules"> {
  return {
    verdicts: [...Object.values(r.byRules)].reduce((n, m) => n + [...m.values()].reduce((a, b) => a + b, 0), 0),
    verdictRules: {
      signature: familyRules((rules.signature ?? SIGNATURE_RULES).today.version, r.byRules.signature),
      config: familyRules((rules.config ?? CONFIG_RULES).today.version, r.byRules.config),
      grant: familyRules((rules.grant ?? GRANT_RULES).today.version, r.byRules.grant),
    },
  };
}
