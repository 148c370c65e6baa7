/**
 * The decision check: re-run the rollout decider over the log and compare its answer with every
 * recorded `rollout.decided`. This is what makes the audit replayable rather than only readable:
 * a decision that the recorded facts do not reproduce is reported, whoever wrote it.
 */
import { canonicalize } from "json-canonicalize";
import { verdictKey } from "../events/index.js";
import type { EventOf, EventLog, EventTypeName, KnownEvent, VerdictOutcome } from "../events/index.js";
import { decideRollout, emptyFacts, evolveFacts } from "./decide-rollout.js";
import type { PluginFacts } from "./decide-rollout.js";
import { checkEgress, type AddressRecheck } from "./check-egress.js";

/** One recorded decision that the decider does not reproduce. */
export interface Divergence {
  readonly seq: number;
  readonly name: string;
  /** Which part differs (`egress.*`: an egress decision, re-decided by `check-egress.ts`). */
  readonly field: "inputs" | "plan" | "egress.list" | "egress.address" | "egress.refusal";
  readonly recorded: unknown;
  readonly expected: unknown;
}

/** The outcome of a check. */
export interface CheckResult {
  /** Decisions compared. */
  readonly checked: number;
  readonly divergences: readonly Divergence[];
}

/** The event types the decider reads. */
export const DECIDER_EVENT_TYPES: readonly EventTypeName[] = [
  "plugin.observed", "plugin.deleted", "grant.observed", "grant.deleted", "config.verdict", "signature.verdict", "previous.observed", "rollout.decided",
];

/** Feeds events in seq order; compares each decision with the decider's answer on the state before it. Pure. */
export class DecisionChecker {
  readonly #facts = new Map<string, PluginFacts>();
  readonly #verdicts = new Map<string, VerdictOutcome>();
  readonly #divergences: Divergence[] = [];
  #checked = 0;

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
    return { checked: this.#checked, divergences: [...this.#divergences] };
  }

  #check(e: EventOf<"rollout.decided">): void {
    this.#checked++;
    const name = e.data.name;
    const facts = this.#facts.get(name) ?? emptyFacts(name);
    const expected = decideRollout({ ...facts, verdicts: this.#verdicts });
    if (canonicalize(expected.inputs) !== canonicalize(e.data.inputs)) {
      this.#divergences.push({ seq: e.seq, name, field: "inputs", recorded: e.data.inputs, expected: expected.inputs });
    }
    if (canonicalize(expected.plan) !== canonicalize(e.data.plan)) {
      this.#divergences.push({ seq: e.seq, name, field: "plan", recorded: e.data.plan, expected: expected.plan });
    }
  }
}

/** Checks every recorded rollout decision in the store (up to `toSeq` when given). */
export async function checkDecisions(store: EventLog, opts: { toSeq?: number; pageSize?: number; egressAddresses?: AddressRecheck } = {}): Promise<CheckResult> {
  const checker = new DecisionChecker();
  const toSeq = opts.toSeq ?? await store.head();
  const pageSize = opts.pageSize ?? 20_000;
  for await (const page of store.pages({ types: DECIDER_EVENT_TYPES, toSeq, pageSize })) for (const e of page) checker.feed(e);
  const rollouts = checker.result();
  // Egress decisions too (ADR 0032); their address step is the proxy's, passed in by the caller.
  const egress = await checkEgress(store, { toSeq, pageSize, ...(opts.egressAddresses !== undefined ? { recheck: opts.egressAddresses } : {}) });
  const more = egress.divergences.map((d): Divergence => ({ seq: d.seq, name: d.plugin, field: `egress.${d.field}`, recorded: d.recorded, expected: d.expected }));
  return { checked: rollouts.checked + egress.checked, divergences: [...rollouts.divergences, ...more].sort((a, b) => a.seq - b.seq) };
}
