/**
 * Gateway decisions in the log: the recorder the gateway appends with, and the query `why` and the
 * console use to show a view's recent decisions. Each installation's decisions are one stream, so
 * the newest are an indexed read whatever the log's size.
 */
import { gatewayStream } from "../events/index.js";
import type { EventStore, GatewayDecision } from "../events/index.js";

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
