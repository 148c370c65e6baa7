/** Egress decisions in words: a refusal by policy never reads like a failure to reach, nor the other way round. */
import { describe, expect, it } from "vitest";
import type { KnownEvent } from "../events/index.js";
import { describeEvent, egressDecisionText } from "./wording.js";

const at = { seq: 9, time: "2026-12-01T00:00:00.000Z", actor: "egress", causedBy: null };
const decision = (data: Record<string, unknown>): KnownEvent => ({ ...at, stream: "egress/nbp-fx", type: "egress.decision", data: { plugin: "nbp-fx", host: "api.nbp.pl", port: 443, ...data } }) as unknown as KnownEvent;
const refusedEvent = (code: string): KnownEvent => ({ ...at, stream: "egress/-", type: "egress.refused", data: { code, source: "10.0.0.9", dropped: 0, host: "api.nbp.pl", port: 443 } }) as unknown as KnownEvent;

describe("an egress decision in words", () => {
  it.each([
    ["an allowed one", { allowed: true, reason: "listed", address: "8.8.4.4" }, "allowed api.nbp.pl:443 (listed) via 8.8.4.4"],
    ["a host not granted", { allowed: false, reason: "not_listed" }, "refused api.nbp.pl:443 by policy: not on its allow-list (not_listed)"],
    ["a plugin without a list", { allowed: false, reason: "no_allow_list" }, "refused api.nbp.pl:443 by policy: it has no allow-list (nothing of it runs) (no_allow_list)"],
    ["a forbidden address", { allowed: false, reason: "forbidden_address" }, "refused api.nbp.pl:443 by policy: the name resolves to a private or reserved address (forbidden_address)"],
    ["a granted host that does not exist", { allowed: false, reason: "dns_nxdomain" }, "failed to reach api.nbp.pl:443: no such host (dns_nxdomain)"],
    ["a granted host DNS did not answer for", { allowed: false, reason: "dns_timeout" }, "failed to reach api.nbp.pl:443: DNS did not answer in time (dns_timeout)"],
    ["a granted host DNS failed for", { allowed: false, reason: "dns_servfail" }, "failed to reach api.nbp.pl:443: DNS failed to answer (dns_servfail)"],
    ["a granted host without addresses", { allowed: false, reason: "dns_no_addresses" }, "failed to reach api.nbp.pl:443: the name has no addresses (dns_no_addresses)"],
    ["a reason no table knows, as a refusal", { allowed: false, reason: "forbidden address" }, "refused api.nbp.pl:443 by policy: forbidden address (forbidden address)"],
    ["an IPv6 destination in brackets", { allowed: false, reason: "not_listed", host: "::1" }, "refused [::1]:443 by policy: not on its allow-list (not_listed)"],
  ])("says %s", (_what, data, text) => {
    expect(describeEvent(decision(data))).toBe(text);
    expect(egressDecisionText({ host: "api.nbp.pl", port: 443, ...data })).toBe(text);
  });

  it.each([
    ["a token refused", "token_refused", "refused a CONNECT from 10.0.0.9 to api.nbp.pl:443 before identity (token_refused)"],
    ["a reviewer that did not answer", "review_timeout", "could not check the identity of a CONNECT from 10.0.0.9 to api.nbp.pl:443 before identity (review_timeout)"],
  ])("says of a CONNECT refused before identity: %s", (_what, code, text) => {
    expect(describeEvent(refusedEvent(code))).toBe(text);
  });
});
