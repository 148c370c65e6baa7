/** A view's recent gateway decisions (FUN-17's audit line, replayable): the newest, and their counts by gate. */
import { EVENT_COLUMNS, gatewayStream, isEventOf, toStoredEvent } from "../events/index.js";
import type { EventOf, EventRow, EventStore, GatewayGate } from "../events/index.js";

/** The newest `limit` decisions of a view, newest first. */
export function recentDecisions(store: EventStore, installationName: string, limit = 50): EventOf<"gateway.decision">[] {
  const n = Math.max(0, Math.min(1000, Math.floor(limit)));
  const rows = store.database
    .prepare<[string, number], EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND type = 'gateway.decision' ORDER BY version DESC LIMIT ?`)
    .all(gatewayStream(installationName), n);
  return rows.map((r) => toStoredEvent(store.registry, r)).filter((e): e is EventOf<"gateway.decision"> => isEventOf(e, ["gateway.decision"]));
}

/** Counts of a set of decisions: allowed, denied, and denials by gate. */
export interface DecisionSummary {
  readonly total: number;
  readonly allowed: number;
  readonly denied: number;
  readonly deniedBy: Partial<Record<GatewayGate, number>>;
}

/** Summarises decisions for `why`. */
export function summarizeDecisions(events: readonly EventOf<"gateway.decision">[]): DecisionSummary {
  const deniedBy: Partial<Record<GatewayGate, number>> = {};
  let allowed = 0;
  for (const e of events) {
    if (e.data.decision === "allow") allowed++;
    else deniedBy[e.data.gate] = (deniedBy[e.data.gate] ?? 0) + 1;
  }
  return { total: events.length, allowed, denied: events.length - allowed, deniedBy };
}
