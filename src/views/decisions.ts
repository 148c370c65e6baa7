/**
 * Gateway decisions in the log: the recorder the gateway appends with, and the query `why` and the
 * console use to show a view's recent decisions. Each installation's decisions are one stream, so
 * the newest are an indexed read whatever the log's size.
 */
import { EVENT_COLUMNS, gatewayStream, isEventOf, toStoredEvent } from "../events/index.js";
import type { EventOf, EventRow, EventStore, GatewayDecision, GatewayGate } from "../events/index.js";

/** Appends one decision durably; throws when it cannot (the gateway then refuses to forward). */
export interface DecisionRecorder {
  record(decision: GatewayDecision): void;
}

/** Records into an event store, actor `gateway`. */
export class StoreDecisionRecorder implements DecisionRecorder {
  constructor(
    readonly store: EventStore,
    readonly actor = "gateway",
  ) {}

  record(decision: GatewayDecision): void {
    this.store.append([{ stream: gatewayStream(decision.installationName), type: "gateway.decision", data: decision, actor: this.actor }]);
  }
}

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

/** One line about a decision, for `why`. */
export function describeDecision(e: EventOf<"gateway.decision">): string {
  const d = e.data;
  const a = d.attributes;
  const what = a === null ? `${d.method} ${d.route}${d.path === "" ? "" : ` ${d.path}`}` : a.kind === "resource"
    ? `${a.verb} ${a.resource}${a.subresource === "" ? "" : `/${a.subresource}`}${a.apiGroup === "" ? "" : `.${a.apiGroup}`}${a.name === "" ? "" : ` ${a.name}`}${a.namespace === "" ? "" : ` in ${a.namespace}`}`
    : `${a.verb} ${a.path}`;
  const outcome = d.decision === "allow" ? "allowed" : `denied at ${d.gate} (${d.status ?? "?"}${d.reason === undefined ? "" : `, ${d.reason}`})`;
  return `event ${e.seq} (${e.time}): ${d.user} via ${d.installationName}: ${what}: ${outcome}`;
}
