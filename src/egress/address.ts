/**
 * Which addresses the egress proxy may dial (seed 004, "Checking addresses"). A name is only as
 * safe as every address behind it, so this module answers for one address at a time and the
 * proxy refuses a whole name when any of its addresses fails.
 */
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

/** One forbidden range, as written in the seed. */
export interface ForbiddenPrefix {
  readonly cidr: string;
  readonly why: string;
}

/** The seed's `egress.ForbiddenPrefixes`, IPv4 part. */
export const FORBIDDEN_IPV4: readonly ForbiddenPrefix[] = [
  { cidr: "0.0.0.0/8", why: "this network" },
  { cidr: "10.0.0.0/8", why: "private" },
  { cidr: "172.16.0.0/12", why: "private" },
  { cidr: "192.168.0.0/16", why: "private" },
  { cidr: "100.64.0.0/10", why: "carrier-grade NAT" },
  { cidr: "127.0.0.0/8", why: "loopback" },
  { cidr: "169.254.0.0/16", why: "link-local (cloud metadata)" },
  { cidr: "192.0.0.0/24", why: "IETF protocol assignments" },
  { cidr: "192.0.2.0/24", why: "documentation" },
  { cidr: "198.51.100.0/24", why: "documentation" },
  { cidr: "203.0.113.0/24", why: "documentation" },
  { cidr: "192.88.99.0/24", why: "6to4 relay anycast" },
  { cidr: "198.18.0.0/15", why: "benchmarking" },
  { cidr: "224.0.0.0/4", why: "multicast" },
  { cidr: "240.0.0.0/4", why: "reserved" },
];

/**
 * The seed's IPv6 part, plus the IPv4-translated prefix `::ffff:0:0:0/96` (RFC 2765) that the
 * issue adds: nothing legitimate is reached through it, and ipaddr.js would not flag it.
 */
export const FORBIDDEN_IPV6: readonly ForbiddenPrefix[] = [
  { cidr: "::/96", why: "unspecified, loopback, IPv4-compatible" },
  { cidr: "::ffff:0:0:0/96", why: "IPv4-translated" },
  { cidr: "64:ff9b:1::/48", why: "local-use NAT64" },
  { cidr: "100::/64", why: "discard" },
  { cidr: "2001::/23", why: "IETF protocol assignments (incl. Teredo)" },
  { cidr: "2001:db8::/32", why: "documentation" },
  { cidr: "3fff::/20", why: "documentation" },
  { cidr: "fc00::/7", why: "unique-local" },
  { cidr: "fe80::/10", why: "link-local" },
  { cidr: "fec0::/10", why: "site-local" },
  { cidr: "ff00::/8", why: "multicast" },
];

/** Why an address was refused. Stable: these appear in logs and decision events. */
export type AddressRefusal =
  | "invalid_address"
  | "zoned_address"
  | "forbidden_range"
  | "not_global_unicast"
  | "denied_cidr"
  | "own_address";

/** The verdict on one address. `address` is the canonical form to dial when allowed. */
export type AddressVerdict =
  | { readonly ok: true; readonly address: string; readonly family: 4 | 6 }
  | { readonly ok: false; readonly code: AddressRefusal; readonly range?: string };

interface ParsedRange {
  readonly cidr: string;
  readonly net: [IPv4 | IPv6, number];
}

function parseRanges(list: readonly { cidr: string }[]): ParsedRange[] {
  return list.map((p) => ({ cidr: p.cidr, net: ipaddr.parseCIDR(p.cidr) }));
}

const V4_RANGES = parseRanges(FORBIDDEN_IPV4);
const V6_RANGES = parseRanges(FORBIDDEN_IPV6);
const MAPPED = ipaddr.parseCIDR("::ffff:0:0/96");
const TRANSLATED = ipaddr.parseCIDR("::ffff:0:0:0/96");
const NAT64 = ipaddr.parseCIDR("64:ff9b::/96");
const SIX_TO_FOUR = ipaddr.parseCIDR("2002::/16");
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

function inRange(addr: IPv4 | IPv6, range: [IPv4 | IPv6, number]): boolean {
  return addr.kind() === range[0].kind() && addr.match(range);
}

function v4From(parts: readonly number[], at: number): IPv4 {
  const hi = parts[at] ?? 0;
  const lo = parts[at + 1] ?? 0;
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

/**
 * The IPv4 addresses hidden inside an IPv6 one: mapped (`::ffff:a.b.c.d`), translated
 * (`::ffff:0:a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) and 6to4 (`2002:AABB:CCDD::`).
 */
export function embeddedIPv4(addr: IPv6): IPv4 | undefined {
  if (inRange(addr, MAPPED) || inRange(addr, TRANSLATED) || inRange(addr, NAT64)) return v4From(addr.parts, 6);
  if (inRange(addr, SIX_TO_FOUR)) return v4From(addr.parts, 1);
  return undefined;
}

/** Extra refusals beyond the seed's list: deny CIDRs (pod, Service, node) and the proxy's own addresses. */
export interface AddressPolicyOptions {
  readonly extraDenyCidrs?: readonly string[];
  /** Addresses the proxy itself answers on; refused on every port. */
  readonly ownAddresses?: readonly string[];
}

/**
 * The address check with its configuration applied. Built once per proxy; `check` is pure.
 * Construction throws on an unparsable deny CIDR, so a typo never silently allows a range.
 */
export class AddressPolicy {
  readonly #deny: ParsedRange[];
  readonly #own: Set<string>;

  constructor(options: AddressPolicyOptions = {}) {
    this.#deny = (options.extraDenyCidrs ?? []).map((cidr) => {
      if (!ipaddr.isValidCIDR(cidr)) throw new Error(`invalid deny CIDR ${JSON.stringify(cidr)}`);
      return { cidr, net: ipaddr.parseCIDR(cidr) };
    });
    this.#own = new Set();
    for (const a of options.ownAddresses ?? []) {
      const plain = a.split("%")[0] ?? a;
      const fam = isIP(plain);
      if (fam === 0) continue;
      this.#own.add(canonical(ipaddr.parse(fam === 6 ? dottedTailToHex(plain) : plain)));
    }
  }

  /** Checks one address as resolved from DNS (or as given); see seed 004, CheckAddress. */
  check(address: string): AddressVerdict {
    return checkAddress(address, this.#deny, this.#own);
  }
}

function canonical(addr: IPv4 | IPv6): string {
  if (addr.kind() === "ipv6") {
    const v6 = addr as IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
    return v6.toRFC5952String();
  }
  return addr.toString();
}

function checkV4(v4: IPv4, deny: readonly ParsedRange[]): AddressVerdict | undefined {
  for (const r of V4_RANGES) if (inRange(v4, r.net)) return { ok: false, code: "forbidden_range", range: r.cidr };
  for (const r of deny) if (inRange(v4, r.net)) return { ok: false, code: "denied_cidr", range: r.cidr };
  // 255.255.255.255 and every other special-purpose address is inside 240/4 or listed above;
  // what remains is global unicast.
  return undefined;
}

/**
 * Rewrites a dotted IPv4 tail (`::127.0.0.1`) as two hex groups (`::7f00:1`): ipaddr.js parses
 * every dotted tail as IPv4-mapped, which would turn `::127.0.0.1` into `::ffff:127.0.0.1`.
 */
function dottedTailToHex(address: string): string {
  const colon = address.lastIndexOf(":");
  const tail = address.slice(colon + 1);
  if (!tail.includes(".")) return address;
  const o = tail.split(".").map(Number);
  const hex = (a: number, b: number): string => ((a << 8) | b).toString(16);
  return `${address.slice(0, colon + 1)}${hex(o[0] ?? 0, o[1] ?? 0)}:${hex(o[2] ?? 0, o[3] ?? 0)}`;
}

/** Checks one address with explicit extra ranges; most callers use {@link AddressPolicy}. */
export function checkAddress(
  address: string,
  deny: readonly ParsedRange[] = [],
  own: ReadonlySet<string> = new Set(),
): AddressVerdict {
  if (address.includes("%")) return { ok: false, code: "zoned_address" };
  // net.isIP is strict (no octal, no bare integers), unlike ipaddr.parse.
  const family = isIP(address);
  if (family === 0) return { ok: false, code: "invalid_address" };
  const parsed = ipaddr.parse(family === 6 ? dottedTailToHex(address) : address);
  if (parsed.kind() === "ipv4") {
    const v4 = parsed as IPv4;
    const refused = checkV4(v4, deny);
    if (refused !== undefined) return refused;
    if (own.has(canonical(v4))) return { ok: false, code: "own_address" };
    return { ok: true, address: v4.toString(), family: 4 };
  }
  const v6 = parsed as IPv6;
  if (v6.zoneId !== undefined) return { ok: false, code: "zoned_address" };
  const inner = embeddedIPv4(v6);
  if (inner !== undefined) {
    const refused = checkV4(inner, deny);
    if (refused !== undefined) return refused;
  }
  for (const r of V6_RANGES) if (inRange(v6, r.net)) return { ok: false, code: "forbidden_range", range: r.cidr };
  for (const r of deny) if (inRange(v6, r.net)) return { ok: false, code: "denied_cidr", range: r.cidr };
  // Stricter than Go's IsGlobalUnicast: an IPv6 address must be inside 2000::/3, so mapped and
  // NAT64 forms of even a public IPv4 address are refused rather than dialed through a translator.
  if (!inRange(v6, GLOBAL_UNICAST_V6)) return { ok: false, code: "not_global_unicast" };
  if (own.has(canonical(v6)) || (inner !== undefined && own.has(canonical(inner)))) {
    return { ok: false, code: "own_address" };
  }
  return { ok: true, address: v6.toRFC5952String(), family: 6 };
}
