/**
 * The shape of one recorded egress decision: the `egress.decision` event's data, and the fields
 * of the pino decision line. Never holds the token.
 */
import { EGRESS_ANONYMOUS_STREAM, capField, egressStream, type EgressDecision, type EgressRefusals, type EgressRefused } from "../events/index.js";
import { EGRESS_RULES } from "../plugins/index.js";
import type { DestinationDecision } from "./decide.js";

/** The event type of a decision. */
export const EGRESS_DECISION_TYPE = "egress.decision";
/** The event type of a refusal before identity. */
export const EGRESS_REFUSED_TYPE = "egress.refused";
/** The event type of a summary of refusals before identity past their budget. */
export const EGRESS_REFUSALS_TYPE = "egress.refusals";

/**
 * One decision of an identified plugin: the catalog's `egress.decision` data. `reason` is the
 * allow-list's reason (`listed`, `not_listed`, `no_allow_list`) or, when a listed host is refused
 * later, why (`forbidden_address`, `dns_nxdomain`, `dns_timeout`, …). `address` is the checked
 * address the proxy dials; `addresses` every address DNS gave for a listed host.
 */
export type EgressDecisionRecord = Readonly<EgressDecision>;

/** One refusal before identity: the catalog's `egress.refused` data. */
export type AnonymousRefusalRecord = Readonly<EgressRefused>;

/** A summary of refusals before identity past their budget: the catalog's `egress.refusals` data. */
export type AnonymousSummaryRecord = Readonly<EgressRefusals>;

/** What is recorded in `egress/-`: a refusal, or a summary of refusals. */
export type AnonymousRecord = AnonymousRefusalRecord | AnonymousSummaryRecord;

/** Whether a record of `egress/-` is a summary. */
export function isSummary(r: AnonymousRecord): r is AnonymousSummaryRecord {
  return "count" in r;
}

/** The record of a destination decision: what the decision used, field by field. */
export function decisionRecord(plugin: string, host: string, port: number, d: DestinationDecision): EgressDecisionRecord {
  // Made by today's egress rules, which the decision names (ADR 0150).
  const rules = EGRESS_RULES.today.version;
  if (d.allowed) return { plugin, host, port, allowed: true, reason: d.reason, rules, address: d.dial.address, addresses: [...d.addresses] };
  if (!("addresses" in d)) return { plugin, host, port, allowed: false, reason: d.reason, rules };
  if (d.reason === "forbidden_address") {
    return { plugin, host, port, allowed: false, reason: d.reason, rules, addresses: [...d.addresses], refusedAddress: d.refusedAddress, addressRefusal: d.addressRefusal };
  }
  return { plugin, host, port, allowed: false, reason: d.reason, rules, addresses: [...d.addresses] };
}

/** The event to append for a decision, in the plugin's `egress/<plugin>` stream. */
export function egressDecisionEvent(d: EgressDecisionRecord, actor: string): { stream: string; type: string; data: EgressDecisionRecord; actor: string } {
  // Copied field by field: a caller's extra members never reach the log.
  const data: EgressDecision = { plugin: d.plugin, host: d.host, port: d.port, allowed: d.allowed, reason: d.reason, rules: d.rules };
  if (d.address !== undefined) data.address = d.address;
  if (d.addresses !== undefined) data.addresses = [...d.addresses];
  if (d.refusedAddress !== undefined) data.refusedAddress = d.refusedAddress;
  if (d.addressRefusal !== undefined) data.addressRefusal = d.addressRefusal;
  return { stream: egressStream(d.plugin), type: EGRESS_DECISION_TYPE, data, actor };
}

/** The event to append for a refusal before identity, in `egress/-` (the host a caller sent is capped). */
export function egressRefusedEvent(r: AnonymousRefusalRecord, actor: string): { stream: string; type: string; data: AnonymousRefusalRecord; actor: string } {
  const data: EgressRefused = { code: r.code, source: r.source.slice(0, 64), dropped: r.dropped };
  if (r.host !== undefined) data.host = capField(r.host).value;
  if (r.port !== undefined) data.port = r.port;
  return { stream: EGRESS_ANONYMOUS_STREAM, type: EGRESS_REFUSED_TYPE, data, actor };
}

/** The event to append for a summary of refusals before identity, in `egress/-`. */
export function egressRefusalsEvent(r: AnonymousSummaryRecord, actor: string): { stream: string; type: string; data: AnonymousSummaryRecord; actor: string } {
  const data: EgressRefusals = { code: r.code, source: r.source.slice(0, 64), count: r.count, first: r.first, last: r.last };
  return { stream: EGRESS_ANONYMOUS_STREAM, type: EGRESS_REFUSALS_TYPE, data, actor };
}

/** The event to append for anything recorded in `egress/-`. */
export function anonymousEvent(r: AnonymousRecord, actor: string): { stream: string; type: string; data: AnonymousRecord; actor: string } {
  return isSummary(r) ? egressRefusalsEvent(r, actor) : egressRefusedEvent(r, actor);
}
