/**
 * The log's integrity: the hash chain and the schema's guards. `verify-log` walks the whole chain
 * and checks the guards; `up` and `reconcile` walk what was appended since the last verified point
 * and check the guards before every pass, and refuse to act on a log that does not hold.
 */
import { recheckAddresses } from "../egress/index.js";
import type { EventStore, GuardsResult, VerifyResult } from "../events/index.js";
import { checkDecisions } from "../projections/index.js";
import type { CheckResult } from "../projections/index.js";
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
export function verifyLog(store: EventStore, opts: { restoreGuards?: boolean } = {}): LogIntegrity {
  const chain = store.verify();
  let guards = store.checkGuards();
  let restored: string[] = [];
  if (opts.restoreGuards === true && chain.ok && !guards.ok) {
    restored = store.restoreGuards();
    guards = store.checkGuards();
  }
  return { chain, guards, restored, ok: chain.ok && guards.ok };
}

/**
 * Refuses (`log_broken`) unless the guards are in place and the chain holds — since the last
 * verified point (the point's own row hashed again), or from the first event with `full`.
 */
export function assertLogHolds(store: EventStore, opts: { full?: boolean } = {}): void {
  const guards = store.checkGuards();
  if (!guards.ok) {
    throw new AppError("log_broken", `the log's guards are missing (${guards.missing.join(", ")}): someone changed the database by hand; run \`openfief verify-log --restore-guards\` after checking it`);
  }
  const chain = opts.full === true ? store.verify() : store.verifySinceCheckpoint();
  if (!chain.ok) throw new AppError("log_broken", `the log does not hold at event ${chain.seq}: ${chain.reason}; nothing acts on it (run \`openfief verify-log\`)`);
}

/** Re-runs the deciders over the log and compares with every recorded decision. */
export function checkLogDecisions(store: EventStore): CheckResult & { readonly diverged: number } {
  // Egress decisions are re-decided too; their address step is the proxy's own (ADR 0032).
  const r = checkDecisions(store, { egressAddresses: recheckAddresses });
  // A decision whose inputs and plan both differ is one decision that does not reproduce.
  return { ...r, diverged: new Set(r.divergences.map((d) => d.seq)).size };
}

/** The chain's last event: its seq, its hash and when it was appended (null times for an empty log). */
export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
  readonly time: string | null;
}

/** The integrity page's facts: the chain and guards, the re-checked decisions, the chain head. */
export interface IntegrityReport {
  readonly log: LogIntegrity;
  readonly decisions: CheckResult & { readonly diverged: number };
  readonly head: ChainHead;
}

/** The chain head of the log now. */
export function chainHead(store: EventStore): ChainHead {
  const p = store.headPoint();
  return { seq: p.seq, hash: p.hash, time: p.seq === 0 ? null : (store.get(p.seq)?.time ?? null) };
}

/** `verify-log` and `check-decisions` at once, with the chain head they ran against. */
export function integrityReport(store: EventStore): IntegrityReport {
  const head = chainHead(store);
  return { log: verifyLog(store), decisions: checkLogDecisions(store), head };
}
