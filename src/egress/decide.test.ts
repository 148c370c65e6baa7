import { describe, expect, it } from "vitest";
import { decodeAllowLists, type AllowLists } from "../plugins/index.js";
import { AddressPolicy } from "./address.js";
import { decideAddresses, decideDestination, decideListed, type DestinationDecision } from "./decide.js";
import type { ResolveOutcome } from "./resolver.js";

function lists(data: Record<string, string>): AllowLists {
  const d = decodeAllowLists(data);
  if (!d.ok) throw new Error("test lists do not decode");
  return d.value;
}

const LISTS = lists({ alpha: "api.example.com:443\n", beta: "" });
const policy = new AddressPolicy({ extraDenyCidrs: ["8.8.8.0/24"], ownAddresses: ["203.0.114.9"] });
const resolved = (...addresses: string[]): ResolveOutcome => ({ ok: true, addresses });

describe("decideDestination", () => {
  it.each<[string, AllowLists | null, string, string, number, ResolveOutcome, DestinationDecision]>([
    ["allows a listed host and dials its first address", LISTS, "alpha", "api.example.com", 443, resolved("8.8.4.4", "1.1.1.1"),
      { allowed: true, reason: "listed", dial: { address: "8.8.4.4", family: 4, port: 443 }, addresses: ["8.8.4.4", "1.1.1.1"] }],
    ["dials an IPv6 address in its canonical form", LISTS, "alpha", "api.example.com", 443, resolved("2001:4860:4860:0:0:0:0:8844"),
      { allowed: true, reason: "listed", dial: { address: "2001:4860:4860::8844", family: 6, port: 443 }, addresses: ["2001:4860:4860:0:0:0:0:8844"] }],
    ["refuses a host not on the list, whatever DNS says", LISTS, "alpha", "other.example.com", 443, resolved("8.8.4.4"), { allowed: false, reason: "not_listed" }],
    ["refuses a listed host on another port", LISTS, "alpha", "api.example.com", 444, resolved("8.8.4.4"), { allowed: false, reason: "not_listed" }],
    ["refuses a plugin with an empty list", LISTS, "beta", "api.example.com", 443, resolved("8.8.4.4"), { allowed: false, reason: "not_listed" }],
    ["refuses a plugin with no list", LISTS, "gamma", "api.example.com", 443, resolved("8.8.4.4"), { allowed: false, reason: "no_allow_list" }],
    ["refuses everything when there are no lists at all", null, "alpha", "api.example.com", 443, resolved("8.8.4.4"), { allowed: false, reason: "no_allow_list" }],
    ["refuses a whole name when any address is private", LISTS, "alpha", "api.example.com", 443, resolved("8.8.4.4", "10.0.0.7"),
      { allowed: false, reason: "forbidden_address", addresses: ["8.8.4.4", "10.0.0.7"], refusedAddress: "10.0.0.7", addressRefusal: "forbidden_range" }],
    ["names the first refused address", LISTS, "alpha", "api.example.com", 443, resolved("169.254.169.254", "10.0.0.7"),
      { allowed: false, reason: "forbidden_address", addresses: ["169.254.169.254", "10.0.0.7"], refusedAddress: "169.254.169.254", addressRefusal: "forbidden_range" }],
    ["refuses a configured deny range", LISTS, "alpha", "api.example.com", 443, resolved("8.8.8.8"),
      { allowed: false, reason: "forbidden_address", addresses: ["8.8.8.8"], refusedAddress: "8.8.8.8", addressRefusal: "denied_cidr" }],
    ["refuses the proxy's own address", LISTS, "alpha", "api.example.com", 443, resolved("203.0.114.9"),
      { allowed: false, reason: "forbidden_address", addresses: ["203.0.114.9"], refusedAddress: "203.0.114.9", addressRefusal: "own_address" }],
    ["refuses a private address hidden in IPv6", LISTS, "alpha", "api.example.com", 443, resolved("::ffff:10.0.0.1"),
      { allowed: false, reason: "forbidden_address", addresses: ["::ffff:10.0.0.1"], refusedAddress: "::ffff:10.0.0.1", addressRefusal: "forbidden_range" }],
    ["refuses a name with no addresses", LISTS, "alpha", "api.example.com", 443, resolved(), { allowed: false, reason: "dns_no_addresses", addresses: [] }],
    ["passes a DNS failure on", LISTS, "alpha", "api.example.com", 443, { ok: false, code: "dns_timeout" }, { allowed: false, reason: "dns_timeout", addresses: [] }],
  ])("%s", (...[, l, plugin, host, port, resolution, expected]) => {
    expect(decideDestination({ lists: l, plugin, host, port, resolution, checker: policy })).toEqual(expected);
  });
});

describe("the steps", () => {
  it("decides the list before any address, so an unlisted host needs no resolution", () => {
    expect(decideListed(LISTS, "alpha", "x.api.example.com", 443)).toEqual({ listed: false, code: "not_listed" });
    expect(decideListed(LISTS, "alpha", "API.example.com.", 443)).toEqual({ listed: true });
  });

  it("never calls the checker for a failed resolution", () => {
    let calls = 0;
    const d = decideAddresses({ check: (a) => { calls++; return policy.check(a); } }, { ok: false, code: "dns_nxdomain" });
    expect(d).toEqual({ ok: false, code: "dns_nxdomain", addresses: [] });
    expect(calls).toBe(0);
  });
});
