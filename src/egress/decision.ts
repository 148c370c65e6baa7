/**
 * The shape of one recorded egress decision: the `egress.decision` event's data, and the fields
 * of the pino decision line. Never holds the token.
 */
import type { EgressDecision } from "../events/index.js";
import { egressStream } from "../events/index.js";

/** The event type of a decision. */
export const EGRESS_DECISION_TYPE = "egress.decision";

/**
 * One decision of an identified plugin: the catalog's `egress.decision` data. `reason` is the
 * allow-list's reason (`listed`, `not_listed`, `no_allow_list`) or, when a listed host is refused
 * later, why (`forbidden_address`, `dns_nxdomain`, `dns_timeout`, …). `address` is the checked
 * address the proxy dials.
 */
export type EgressDecisionRecord = Readonly<EgressDecision>;

/** The event to append for a decision, in the plugin's `egress/<plugin>` stream. */
export function egressDecisionEvent(d: EgressDecisionRecord, actor: string): { stream: string; type: string; data: EgressDecisionRecord; actor: string } {
  const data: EgressDecisionRecord = d.address === undefined
    ? { plugin: d.plugin, host: d.host, port: d.port, allowed: d.allowed, reason: d.reason }
    : { plugin: d.plugin, host: d.host, port: d.port, allowed: d.allowed, reason: d.reason, address: d.address };
  return { stream: egressStream(d.plugin), type: EGRESS_DECISION_TYPE, data, actor };
}
