/**
 * The log's integrity: the hash chain and the schema's guards. `verify-log` walks the whole chain
 * and checks the guards; `up` and `reconcile` walk what was appended since the last verified point
 * and check the guards before every pass, and refuse to act on a log that does not hold.
 */
import { ADDRESS_RULES } from "../egress/index.js";
import type { EventLog, GuardsResult, VerifyResult } from "../events/index.js";
import { checkDecisions, decisionCheck } from "../projections/index.js";
import type { CheckResult, DeciderRules, DecisionCheckState, Divergence } from "../projections/index.js";
import { AppError } from "./errors.js";

/** What `verify-log` found. */
export interface LogIntegrity {
  readonly chain: VerifyResult;
  readonly guards: GuardsResult;
  /** The guards restored on request (only when the chain held). */
  readonly restored: readonly string[];
  readonly ok: boolean;
}

/** Walks the whole chain and checks the guards; with `restoreGuards`, re-creates missing guards once the chain is seen to hold. */
export async function verifyLog(store: EventLog, opts: { restoreGuards?: boolean } = {}): Promise<LogIntegrity> {
  const chain = await store.verify();
  let guards = await store.checkGuards();
  let restored: string[] = [];
  if (opts.restoreGuards === true && chain.ok && !guards.ok) {
    restored = await store.restoreGuards();
    guards = await store.checkGuards();
  }
  return { chain, guards, restored, ok: chain.ok && guards.ok };
}

/**
 * Refuses (`log_broken`) unless the guards are in place and the chain holds — since the last
 * verified point (the point's own row hashed again), or from the first event with `full`.
 */
export async function assertLogHolds(store: EventLog, opts: { full?: boolean } = {}): Promise<void> {
  const guards = await store.checkGuards();
  if (!guards.ok) {
    throw new AppError("log_broken", `the log's guards are missing (${guards.missing.join(", ")}): someone changed the database by hand; run \`openfief verify-log --restore-guards\` after checking it`);
  }
  const chain = opts.full === true ? await store.verify() : await store.verifySinceCheckpoint();
  if (!chain.ok) throw new AppError("log_broken", `the log does not hold at event ${chain.seq}: ${chain.reason}; nothing acts on it (run \`openfief verify-log\`)`);
}

/** What `check-decisions` found, counted by decision. */
export interface DecisionsCheck extends CheckResult {
  /** Decisions the rules they name reproduce. */
  readonly reproduced: number;
  /** Decisions they do not (a bug or tampering): `check-decisions` fails on any. */
  readonly diverged: number;
  /** Verdicts the rules they name do not reproduce (a bug or tampering): `check-decisions` fails on any too. */
  readonly verdictsDiverged: number;
  /** Decisions made under older rules that today's would make differently (an upgrade's effect; not a failure). */
  readonly upgraded: number;
}

/**
 * Re-runs the deciders over the log and compares with every recorded decision: each under the
 * rules it names, and one made under older rules under today's too (ADR 0150).
 */
export async function checkLogDecisions(store: EventLog, opts: { rules?: DeciderRules } = {}): Promise<DecisionsCheck> {
  // Egress decisions are re-decided too; their address step is the proxy's own (ADR 0032), by rules version.
  const r = await checkDecisions(store, { egressAddresses: ADDRESS_RULES, ...(opts.rules === undefined ? {} : { rules: opts.rules }) });
  // A decision whose inputs and plan both differ is one decision that does not reproduce.
  const diverged = new Set(r.divergences.filter((d) => !isVerdict(d.family)).map((d) => d.seq)).size;
  const verdictsDiverged = new Set(r.divergences.filter((d) => isVerdict(d.family)).map((d) => d.seq)).size;
  return { ...r, reproduced: r.checked - diverged, diverged, verdictsDiverged, upgraded: new Set(r.upgrades.map((u) => u.seq)).size };
}

/** Whether a family is a verdict's (signature, config, grant: docs/adr/0191) rather than a decision's. */
function isVerdict(family: Divergence["family"]): boolean {
  return family === "signature" || family === "config" || family === "grant";
}

/** What a divergence's or an upgrade effect's field names, in words. */
const PART: Readonly<Record<Divergence["field"], string>> = {
  inputs: "inputs", plan: "plan", rules: "rules", "egress.list": "allow-list answer", "egress.address": "dialed address",
  "egress.refusal": "address refusal", "egress.rules": "rules",
  "catalog.event": "catalog event", "catalog.publishers": "catalog publishers", "catalog.outcome": "outcome", "catalog.rules": "rules",
  "config.inputs": "image (not the plugin's then)", "config.verdict": "verdict", "config.rules": "rules",
  "grant.inputs": "grant (not the plugin's then)", "grant.verdict": "verdict", "grant.rules": "rules",
};

/** What a verdict family's rules decide, in words. */
const VERDICT_WORDS: Readonly<Record<"signature" | "config" | "grant", string>> = {
  signature: "signature verdicts (their catalog part, from the catalog each cites)",
  config: "config verdicts",
  grant: "grant verdicts",
};

/** The rules of each family and the decisions checked under each version, in a line. */
function rulesLine(r: DecisionsCheck): string {
  const parts: string[] = [];
  for (const family of ["rollout", "egress"] as const) {
    const f = r.rules[family];
    const seen = Object.entries(f.decisions).map(([v, n], i) => `${n}${i === 0 ? " decisions made" : ""} under rules ${v}`);
    parts.push(`${family}: rules ${f.today} today${seen.length === 0 ? ", no decision" : `, ${seen.join(", ")}`}`);
  }
  const g = r.notRedecided.gateway;
  const recorded = Object.values(g.decisions).reduce((a, b) => a + b, 0);
  // The gateway's decisions name their rules but are not re-decided: the user's access review is not in the log.
  if (recorded > 0) parts.push(`gateway: rules ${g.today} today, ${Object.entries(g.decisions).map(([v, n]) => `${n} under rules ${v}`).join(", ")}, not re-decided`);
  return parts.join("; ");
}

/** The verdicts re-decided, per family, with their rules, in a line (null when there is none). */
function verdictRulesLine(r: DecisionsCheck): string | null {
  const parts: string[] = [];
  for (const family of ["signature", "config", "grant"] as const) {
    const f = r.verdictRules[family];
    const seen = Object.entries(f.decisions).map(([v, n]) => `${n} under rules ${v}`);
    if (seen.length > 0) parts.push(`${family}: rules ${f.today} today, ${seen.join(", ")}`);
  }
  return parts.length === 0 ? null : parts.join("; ");
}

/** `check-decisions` as lines of text: what reproduces, what diverges, and an upgrade's effects apart. */
export function decisionsCheckLines(r: DecisionsCheck): string[] {
  const out: string[] = [];
  const decisions = r.divergences.filter((d) => !isVerdict(d.family));
  const verdicts = r.divergences.filter((d) => isVerdict(d.family));
  if (decisions.length === 0) out.push(`${r.checked} decisions re-checked: every one reproduces`);
  else {
    out.push(`${r.diverged} of ${r.checked} decisions do not reproduce under the rules they name (a bug or tampering):`);
    for (const d of decisions) {
      out.push(d.field === "rules" || d.field === "egress.rules"
        ? `  event ${d.seq} (${d.name}): names ${d.family} rules ${d.rules}, which this release does not know (it has ${String(d.expected)})`
        : `  event ${d.seq} (${d.name}): the recorded ${PART[d.field]} differ from what ${d.family} rules ${d.rules} decide`);
    }
  }
  out.push(`  ${rulesLine(r)}`);
  // The verdicts, each under the rules it names (docs/adr/0191); a signature verdict's catalog part
  // from the catalog it cites (docs/adr/0158).
  const line = verdictRulesLine(r);
  if (verdicts.length > 0) {
    out.push(`${r.verdictsDiverged} of ${r.verdicts} verdicts do not reproduce under the rules they name (a bug or tampering):`);
    for (const d of verdicts) {
      out.push(d.field.endsWith(".rules")
        ? `  event ${d.seq} (${d.name}): names ${d.family} rules ${d.rules}, which this release does not know (it has ${String(d.expected)})`
        : `  event ${d.seq} (${d.name}): the recorded ${PART[d.field]} of a ${d.family} verdict differs from what ${d.family} rules ${d.rules} give: ${JSON.stringify(d.expected)}`);
    }
    if (line !== null) out.push(`  ${line}`);
  } else if (line !== null) {
    const words = (["signature", "config", "grant"] as const).filter((f) => Object.keys(r.verdictRules[f].decisions).length > 0).map((f) => VERDICT_WORDS[f]);
    out.push(`${r.verdicts} verdicts re-checked (${words.join(", ")}): every one reproduces`);
    out.push(`  ${line}`);
  }
  if (r.upgrades.length > 0) {
    out.push(`${r.upgraded} decisions made under older rules would be decided differently under today's (an upgrade's effect, not a fault):`);
    for (const u of r.upgrades) out.push(`  event ${u.seq} (${u.name}): its ${PART[u.field]} under ${u.family} rules ${u.rules}, another under today's ${u.today}`);
  }
  return out;
}

/** The chain's last event: its seq, its hash and when it was appended (null times for an empty log). */
export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
  readonly time: string | null;
}

/**
 * The integrity page's facts, each checked as far as it was not already: the chain walked from the
 * last verified point to the head, the guards, every decision recorded since the decision check's
 * checkpoint re-decided (ADR 0102). `verify-log` and `check-decisions` go over the whole log.
 */
export interface IntegrityReport {
  /** The chain: where this walk started (the last verified point; 0 when none) and what it found. */
  readonly chain: { readonly verifiedBefore: number; readonly result: VerifyResult };
  readonly guards: GuardsResult;
  readonly ok: boolean;
  readonly decisions: DecisionCheckState;
  readonly head: ChainHead;
}

/** The chain head of the log now. */
export async function chainHead(store: EventLog): Promise<ChainHead> {
  const p = await store.headPoint();
  return { seq: p.seq, hash: p.hash, time: p.seq === 0 ? null : ((await store.get(p.seq))?.time ?? null) };
}

/** What the integrity page shows, checking only what was appended since it was last checked. */
export async function integrityReport(store: EventLog): Promise<IntegrityReport> {
  const head = await chainHead(store);
  const verifiedBefore = (await store.verifiedPoint())?.seq ?? 0;
  const result = await store.verifySinceCheckpoint();
  const guards = await store.checkGuards();
  const decisions = await decisionCheck(store, ADDRESS_RULES).catchUp();
  return { chain: { verifiedBefore, result }, guards, ok: result.ok && guards.ok, decisions, head };
}
