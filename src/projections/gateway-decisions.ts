/**
 * A view's recent gateway decisions (FUN-17's audit line, replayable): the newest, and their counts
 * by gate. Refusals past their budget are `gateway.refusals` summaries (docs/adr/0091): the
 * records read both, and a summary counts as the refusals it stands for.
 */
import { gatewayStream } from "../events/index.js";
import type { EventOf, EventLog, GatewayGate } from "../events/index.js";

/** A view's gateway records: decisions, and summaries of refusals past their budget. */
export type GatewayRecord = EventOf<"gateway.decision" | "gateway.refusals">;

function newest<T extends "gateway.decision" | "gateway.refusals">(store: EventLog, installationName: string, limit: number, types: readonly T[]): Promise<EventOf<T>[]> {
  const n = Math.max(0, Math.min(1000, Math.floor(limit)));
  return store.lookups.newest(gatewayStream(installationName), types, n);
}

/** The newest `limit` decisions of a view, newest first. */
export function recentDecisions(store: EventLog, installationName: string, limit = 50): Promise<EventOf<"gateway.decision">[]> {
  return newest(store, installationName, limit, ["gateway.decision"]);
}

/** The newest `limit` decisions and refusal summaries of a view, newest first. */
export function recentGatewayRecords(store: EventLog, installationName: string, limit = 50): Promise<GatewayRecord[]> {
  return newest(store, installationName, limit, ["gateway.decision", "gateway.refusals"]);
}

/** Counts of a set of decisions: allowed, denied, and denials by gate. */
export interface DecisionSummary {
  /** Requests the records stand for (a summary stands for its count). */
  readonly total: number;
  readonly allowed: number;
  readonly denied: number;
  readonly deniedBy: Partial<Record<GatewayGate, number>>;
  /** Of the denied, how many were counted in summaries rather than recorded one by one. */
  readonly summarised: number;
}

/** Summarises decisions (and refusal summaries) for `why`. */
export function summarizeDecisions(events: readonly GatewayRecord[]): DecisionSummary {
  const deniedBy: Partial<Record<GatewayGate, number>> = {};
  let allowed = 0;
  let denied = 0;
  let summarised = 0;
  for (const e of events) {
    if (e.type === "gateway.refusals") {
      deniedBy[e.data.gate] = (deniedBy[e.data.gate] ?? 0) + e.data.count;
      denied += e.data.count;
      summarised += e.data.count;
    } else if (e.data.decision === "allow") allowed++;
    else {
      deniedBy[e.data.gate] = (deniedBy[e.data.gate] ?? 0) + 1;
      denied++;
    }
  }
  return { total: allowed + denied, allowed, denied, deniedBy, summarised };
}
