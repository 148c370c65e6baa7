/**
 * The proxy's decision as a value (issue 12), pure: given who is asking, the allow-lists in force
 * and what DNS answered, which address is dialed or which refusal applies. The proxy runs the
 * steps with its I/O in between (an unlisted host is never resolved); `check-egress` runs them
 * again over what a decision event recorded.
 */
import { EGRESS_RULES, rulesRegistry, type AllowLists, type RulesRegistry } from "../plugins/index.js";
import { checkAddress, type AddressRefusal, type AddressVerdict } from "./address.js";
import type { ListRefusal } from "./refusals.js";
import type { ResolveError, ResolveOutcome } from "./resolver.js";

/** The address the proxy dials: always one it checked. */
export interface DialAddress {
  readonly address: string;
  readonly family: 4 | 6;
  readonly port: number;
}

/** What checks one address (an `AddressPolicy`, or the seed's fixed ranges alone). */
export interface AddressChecker {
  check(address: string): AddressVerdict;
}

/** The allow-list's answer: listed, or the refusal. */
export type ListVerdict = { readonly listed: true } | { readonly listed: false; readonly code: ListRefusal };

/** Step 1: the allow-list. Never throws; a missing set of lists refuses everything. */
export function decideListed(lists: AllowLists | null, plugin: string, host: string, port: number): ListVerdict {
  // Today's egress rules (ADR 0150): the version every decision records.
  const v = EGRESS_RULES.today.decide(lists, plugin, host, port);
  return v.allowed ? { listed: true } : { listed: false, code: v.reason === "no_allow_list" ? "no_allow_list" : "not_listed" };
}

/** The answer on a resolved name: the address to dial, or why none. */
export type AddressDecision =
  | { readonly ok: true; readonly dial: Omit<DialAddress, "port">; readonly addresses: readonly string[] }
  | { readonly ok: false; readonly code: ResolveError; readonly addresses: readonly string[] }
  | {
      readonly ok: false;
      readonly code: "forbidden_address";
      readonly addresses: readonly string[];
      readonly refusedAddress: string;
      readonly addressRefusal: AddressRefusal;
    };

/**
 * Step 2: every address of the answer. One forbidden address refuses the whole name (rather than
 * dialing it at a public one); otherwise the first address, in its canonical form, is dialed.
 */
export function decideAddresses(checker: AddressChecker, resolution: ResolveOutcome): AddressDecision {
  if (!resolution.ok) return { ok: false, code: resolution.code, addresses: [] };
  const addresses = resolution.addresses;
  let chosen: Omit<DialAddress, "port"> | undefined;
  for (const a of addresses) {
    const v = checker.check(a);
    if (!v.ok) return { ok: false, code: "forbidden_address", addresses, refusedAddress: a, addressRefusal: v.code };
    chosen ??= { address: v.address, family: v.family };
  }
  if (chosen === undefined) return { ok: false, code: "dns_no_addresses", addresses };
  return { ok: true, dial: chosen, addresses };
}

/** The whole decision on a destination of an identified plugin: what the proxy records. */
export type DestinationDecision =
  | { readonly allowed: true; readonly reason: "listed"; readonly dial: DialAddress; readonly addresses: readonly string[] }
  | { readonly allowed: false; readonly reason: ListRefusal }
  | { readonly allowed: false; readonly reason: ResolveError; readonly addresses: readonly string[] }
  | {
      readonly allowed: false;
      readonly reason: "forbidden_address";
      readonly addresses: readonly string[];
      readonly refusedAddress: string;
      readonly addressRefusal: AddressRefusal;
    };

/** What a destination decision is made from. */
export interface DestinationInputs {
  readonly lists: AllowLists | null;
  readonly plugin: string;
  readonly host: string;
  readonly port: number;
  /** DNS's answer; asked only when the host is listed (so unused for a list refusal). */
  readonly resolution: ResolveOutcome;
  readonly checker: AddressChecker;
}

/** Both steps at once, for tables and for the re-decider. */
export function decideDestination(i: DestinationInputs): DestinationDecision {
  const listed = decideListed(i.lists, i.plugin, i.host, i.port);
  if (!listed.listed) return { allowed: false, reason: listed.code };
  return afterResolution(decideAddresses(i.checker, i.resolution), i.port);
}

/** Turns step 2's answer into the destination decision of a listed host. */
export function afterResolution(d: AddressDecision, port: number): DestinationDecision {
  if (d.ok) return { allowed: true, reason: "listed", dial: { address: d.dial.address, family: d.dial.family, port }, addresses: d.addresses };
  if (d.code === "forbidden_address") return { allowed: false, reason: d.code, addresses: d.addresses, refusedAddress: d.refusedAddress, addressRefusal: d.addressRefusal };
  return { allowed: false, reason: d.code, addresses: d.addresses };
}

/** The seed's fixed ranges alone: what every proxy refuses, whatever its deployment adds. */
const FIXED_RANGES: AddressChecker = { check: (a) => checkAddress(a) };

/**
 * Step 2 again over recorded addresses, with the fixed ranges only (the deployment's deny CIDRs
 * and own addresses are not in the log): the re-decider's address step (`check-decisions`,
 * ADR 0032). The first address to dial, or the first refused one and why.
 */
export function recheckAddresses(addresses: readonly string[]):
  | { readonly ok: true; readonly address: string }
  | { readonly ok: false; readonly code: "forbidden_address"; readonly refusedAddress: string; readonly addressRefusal: AddressRefusal }
  | { readonly ok: false; readonly code: "dns_no_addresses" } {
  const d = decideAddresses(FIXED_RANGES, { ok: true, addresses });
  if (d.ok) return { ok: true, address: d.dial.address };
  if (d.code === "forbidden_address") return { ok: false, code: d.code, refusedAddress: d.refusedAddress, addressRefusal: d.addressRefusal };
  return { ok: false, code: "dns_no_addresses" };
}

/** The address step over recorded addresses: what {@link recheckAddresses} is, version by version. */
export type AddressRecheckStep = typeof recheckAddresses;

/**
 * The address step of each released version of the egress rules (ADR 0150), numbered as the
 * pure model's `EGRESS_RULES` (a version changes either step; each registry then gains it).
 */
export const ADDRESS_RULES: RulesRegistry<AddressRecheckStep> = rulesRegistry<AddressRecheckStep>("egress", [
  { version: 1, change: "the first released rules: every address DNS gave is checked against the fixed ranges, the first is dialed", decide: recheckAddresses },
]);
