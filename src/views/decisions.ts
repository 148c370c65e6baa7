/**
 * Gateway decisions in the log: the recorder the gateway appends with, and the shape a decision is
 * recorded in — every field a caller controls (the path, the attributes read from it, the
 * selectors) cut to a cap with the digest of its whole (docs/adr/0091). Each installation's
 * decisions are one stream, so the newest are an indexed read whatever the log's size.
 */
import { capField, GATEWAY_RULES_VERSION, gatewayStream } from "../events/index.js";
import type { EventLog, GatewayAttributes, GatewayCappedField, GatewayDecision, GatewayRefusals, GatewayServed } from "../events/index.js";
import type { RequestAttributes } from "./request-info.js";
import type { Selection } from "./served.js";

/** Appends decisions and summaries durably; throws when it cannot (the gateway then refuses to forward). */
export interface DecisionRecorder {
  record(decision: GatewayDecision): Promise<void>;
  /** Appends a summary of refusals that went past their budget. */
  recordRefusals(summary: GatewayRefusals): Promise<void>;
}

/** Records into an event store, actor `gateway`. */
export class StoreDecisionRecorder implements DecisionRecorder {
  constructor(
    readonly store: EventLog,
    readonly actor = "gateway",
  ) {}

  async record(decision: GatewayDecision): Promise<void> {
    await this.store.append([{ stream: gatewayStream(decision.installationName), type: "gateway.decision", data: decision, actor: this.actor }]);
  }

  async recordRefusals(summary: GatewayRefusals): Promise<void> {
    await this.store.append([{ stream: gatewayStream(summary.installationName), type: "gateway.refusals", data: summary, actor: this.actor }]);
  }
}

/** A decision before its caller-controlled fields are capped (the rules it names are added then). */
export type DecisionInput = Omit<GatewayDecision, "attributes" | "served" | "digests" | "rules"> & {
  readonly attributes: RequestAttributes | null;
  readonly served: Selection | null;
};

/** The decision as it is recorded: caller-controlled fields capped, with the digests of those cut. */
export function recordedDecision(input: DecisionInput): GatewayDecision {
  const digests: Partial<Record<GatewayCappedField, string>> = {};
  const cap = (field: GatewayCappedField, value: string): string => {
    const c = capField(value);
    if (c.digest !== null) digests[field] = c.digest;
    return c.value;
  };
  const a = input.attributes;
  let attributes: GatewayAttributes | null = null;
  if (a?.kind === "nonResource") attributes = { kind: "nonResource", verb: a.verb, path: cap("attributes.path", a.path) };
  else if (a?.kind === "resource") {
    attributes = {
      kind: "resource", verb: a.verb, apiGroup: cap("attributes.apiGroup", a.apiGroup), apiVersion: cap("attributes.apiVersion", a.apiVersion),
      namespace: cap("attributes.namespace", a.namespace), resource: cap("attributes.resource", a.resource), subresource: cap("attributes.subresource", a.subresource),
      name: cap("attributes.name", a.name), fieldSelector: cap("attributes.fieldSelector", a.fieldSelector), labelSelector: cap("attributes.labelSelector", a.labelSelector),
    };
  }
  const { attributes: _a, served: s, ...rest } = input;
  const d: GatewayDecision = { ...rest, method: rest.method.slice(0, 32), path: cap("path", input.path), attributes, rules: GATEWAY_RULES_VERSION };
  if (s !== null) {
    const served: GatewayServed = { fieldSelector: cap("served.fieldSelector", s.fieldSelector), labelSelector: cap("served.labelSelector", s.labelSelector) };
    d.served = served;
  }
  if (Object.keys(digests).length > 0) d.digests = digests;
  return d;
}
