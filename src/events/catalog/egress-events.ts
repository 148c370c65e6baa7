/** The egress proxy's decisions. Streams `egress/<plugin>`, and `egress/-` before identity. */
import type { EventRegistry } from "../registry.js";
import { EGRESS_ANONYMOUS_STREAM } from "../streams.js";
import { boolean, definer, inNamedStream, inStream, isoTime, name, nonEmpty, opt, port, req, rulesVersion, shape, str, withFirstRules } from "./schema.js";

/**
 * `egress.decision`: one allow or deny of the egress proxy for an identified plugin, with what
 * the decision used (version 2, issue 11): every address DNS gave for a listed host (`addresses`,
 * empty when it gave none), and for a forbidden address which one was refused (`refusedAddress`)
 * and why (`addressRefusal`, an address-check code). A version-1 row has none of them.
 */
export interface EgressDecision {
  plugin: string;
  host: string;
  port: number;
  allowed: boolean;
  reason: string;
  /**
   * The version of the egress rules that made the decision (version 3; a decision recorded before
   * reads as made by the first released rules, 1). Re-decided under these rules.
   */
  rules: number;
  /** The checked address dialed (allowed decisions). */
  address?: string;
  addresses?: string[];
  refusedAddress?: string;
  addressRefusal?: string;
}

/**
 * The egress proxy's refusal codes that are failures (the destination, DNS or the token reviewer
 * could not be reached; the proxy could not act) rather than refusals by policy. The proxy's own
 * refusal table says the same of every code (a test there holds them together); the faces and the
 * projections tell the outcomes apart by this list without loading the proxy. A code not in it
 * (an older or hand-written event) reads as refused: never call a mere failure what may have
 * been a refusal.
 */
export const EGRESS_FAILURE_CODES: ReadonlySet<string> = new Set([
  "draining", "too_many_tunnels", "review_failed", "review_timeout",
  "dns_nxdomain", "dns_servfail", "dns_refused", "dns_no_addresses", "dns_timeout", "dns_failed",
  "record_failed", "commit_timeout", "dial_failed", "connect_timeout", "client_gone", "internal_error",
]);

/** What came of an attempt to go out: allowed, refused by policy, or failed to reach. */
export type EgressOutcome = "allowed" | "refused" | "failed";

/** A refusal code's outcome (see {@link EGRESS_FAILURE_CODES}). */
export function egressCodeOutcome(code: string): Exclude<EgressOutcome, "allowed"> {
  return EGRESS_FAILURE_CODES.has(code) ? "failed" : "refused";
}

/** A recorded egress decision's outcome, from its `allowed` and `reason`. */
export function egressDecisionOutcome(d: { readonly allowed: boolean; readonly reason: string }): EgressOutcome {
  return d.allowed ? "allowed" : egressCodeOutcome(d.reason);
}

/** `egress.decision` as version 1 stored it. */
interface EgressDecisionV1 { plugin: string; host: string; port: number; allowed: boolean; reason: string; address?: string }

/**
 * `egress.refused`: a refusal before the plugin was identified (no token, a bad token, a failed
 * review, a malformed target), in `egress/-`, within a budget per code and source address past
 * which an `egress.refusals` summary counts them (docs/adr/0091). `dropped` is what the rate
 * limit before that budget left unrecorded; rows written since are 0 (nothing is left out).
 */
export interface EgressRefused {
  code: string;
  /** The client's address (a pod's IP), never a token. */
  source: string;
  host?: string;
  port?: number;
  dropped: number;
}

/**
 * `egress.refusals`: refusals before identity of one code from one source that went past the
 * budget in one window (docs/adr/0091), counted instead of recorded one by one, in `egress/-`.
 */
export interface EgressRefusals {
  code: string;
  /** The client's address. */
  source: string;
  /** How many refusals this summary stands for (at least one). */
  count: number;
  /** When the first and the last of them came (ISO 8601). */
  first: string;
  last: string;
}

/** Data type of each egress event type. */
export interface EgressEventData {
  "egress.decision": EgressDecision;
  "egress.refused": EgressRefused;
  "egress.refusals": EgressRefusals;
}

/** At most this many addresses per decision (a DNS answer over UDP holds far fewer). */
const MAX_ADDRESSES = 512;
const addressList = { type: "array", items: { type: "string", minLength: 1, maxLength: 64 }, maxItems: MAX_ADDRESSES } as const;
const count = { type: "integer", minimum: 0 } as const;

export function defineEgressEvents(r: EventRegistry): void {
  const define = definer<EgressEventData>(r);
  const v1 = shape<EgressDecisionV1>({ plugin: req(name), host: req(nonEmpty), port: req(port), allowed: req(boolean), reason: req(str), address: opt(str) });
  const v2 = shape<Omit<EgressDecision, "rules">>({
    plugin: req(name), host: req(nonEmpty), port: req(port), allowed: req(boolean), reason: req(str), address: opt(str),
    addresses: opt(addressList), refusedAddress: opt(str), addressRefusal: opt(str),
  });
  define({
    type: "egress.decision", version: 3, stream: inNamedStream("egress", "plugin"),
    fields: {
      plugin: req(name), host: req(nonEmpty), port: req(port), allowed: req(boolean), reason: req(str), rules: req(rulesVersion), address: opt(str),
      addresses: opt(addressList), refusedAddress: opt(str), addressRefusal: opt(str),
    },
    history: [
      // A v1 row is a v2 row that recorded no inputs: nothing to lift, nothing invented.
      { version: 1, schema: v1, upcast: (data) => data },
      // Version 3 names the rules: a decision recorded before was made by the first released ones.
      { version: 2, schema: v2, upcast: withFirstRules },
    ],
  });
  define({
    type: "egress.refused", version: 1, stream: inStream(EGRESS_ANONYMOUS_STREAM),
    fields: { code: req(nonEmpty), source: req(str), host: opt(nonEmpty), port: opt(port), dropped: req(count) },
  });
  define({
    type: "egress.refusals", version: 1, stream: inStream(EGRESS_ANONYMOUS_STREAM),
    fields: { code: req(nonEmpty), source: req({ type: "string", maxLength: 64 }), count: req({ type: "integer", minimum: 1 }), first: req(isoTime), last: req(isoTime) },
  });
}
