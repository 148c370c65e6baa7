import { domainToASCII } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "./errors.js";
import {
  compareEgressHosts,
  DEFAULT_EGRESS_PORT,
  egressKey,
  formatHostPort,
  hostnameProblem,
  isCanonicalHostname,
  parseEgressHost,
} from "./egress-host.js";
import { punycodeEncode } from "./punycode.js";

describe("canonical hostnames", () => {
  it.each([
    ["a two-label name", "example.com"],
    ["a deep name", "gdcdyn.interactivebrokers.com"],
    ["digits and hyphens inside labels", "api-2.x1.example.com"],
    ["an xn-- label for münchen", "xn--mnchen-3ya.de"],
    ["an xn-- label for a Japanese name", `${domainToASCII("例え.jp")}`],
    ["a label of 63 characters", `${"a".repeat(63)}.com`],
    ["a name of 253 characters", `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`],
    ["a numeric first label", "1.example.com"],
    ["a hex-looking inner label", "0x7f.example.com"],
  ])("accepts %s", (_what, host) => {
    expect(hostnameProblem(host)).toBeUndefined();
    expect(isCanonicalHostname(host)).toBe(true);
  });

  it.each([
    ["an empty host", ""],
    ["a trailing dot", "a.b."],
    ["upper case, which is refused rather than folded", "Api.example.com"],
    ["a non-ASCII name", "münchen.de"],
    ["a wildcard", "*.x.com"],
    ["a bracketed IPv6 literal", "[::1]"],
    ["a bare IPv6 literal", "::1"],
    ["a dotted IPv4 literal", "1.2.3.4"],
    ["a short hex IPv4 form", "0x7f.1"],
    ["a decimal IPv4 form", "2130706433"],
    ["a hex last label", "a.0x7f"],
    ["a bare 0x last label", "a.0x"],
    ["a number-only last label", "example.123"],
    ["a single-label name", "core"],
    ["an empty label", "a..b"],
    ["a leading dot", ".example.com"],
    ["a label starting with a hyphen", "-a.example.com"],
    ["a label ending with a hyphen", "a-.example.com"],
    ["a label of 64 characters", `${"a".repeat(64)}.com`],
    ["a name of 254 characters", `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(62)}`],
    ["an underscore", "a_b.example.com"],
    ["a host with a port", "example.com:443"],
    ["whitespace", "example.com "],
    ["a reserved '--' label that is not xn--", "ab--cd.example.com"],
    ["an xn-- label that is not Punycode", "xn--a.de"],
    ["an xn-- label encoding only ASCII", "xn--abc-.de"],
    ["an empty xn-- label", "xn--.de"],
    ["an xn-- label with upper case in its decoded name", `${punycodeEncodeLabel("Ämter")}.de`],
    ["an xn-- label whose decoded name is not NFC", `${punycodeEncodeLabel("a\u0308b")}.de`],
    ["an xn-- label decoding to a space", `${punycodeEncodeLabel("a\u00a0b")}.de`],
    ["an xn-- label decoding to an ideographic full stop", `${punycodeEncodeLabel("a\u3002b")}.de`],
    ["an xn-- label starting with a combining mark", `${punycodeEncodeLabel("\u0301ab")}.de`],
  ])("refuses %s", (_what, host) => {
    expect(hostnameProblem(host)).toBeDefined();
    expect(isCanonicalHostname(host)).toBe(false);
  });

  it("refuses a host that is not a string", () => {
    expect(isCanonicalHostname(42)).toBe(false);
  });
});

function punycodeEncodeLabel(u: string): string {
  const encoded = punycodeEncode([...u].map((c) => c.codePointAt(0) ?? 0));
  if (encoded === undefined) throw new Error("test label does not encode");
  return `xn--${encoded}`;
}

describe("parseEgressHost", () => {
  it.each([
    ["a host without a port gets 443", { host: "api.example.com" }, { host: "api.example.com", port: 443 }],
    ["an explicit port is kept", { host: "api.example.com", port: 8443 }, { host: "api.example.com", port: 8443 }],
    ["port 1 is the lowest", { host: "a.io", port: 1 }, { host: "a.io", port: 1 }],
    ["port 65535 is the highest", { host: "a.io", port: 65535 }, { host: "a.io", port: 65535 }],
  ])("accepts %s", (_what, value, expected) => {
    expect(parseEgressHost(value, "egress[0]")).toEqual({ ok: true, value: expected });
  });

  it("uses 443 as the default port", () => {
    expect(DEFAULT_EGRESS_PORT).toBe(443);
  });

  it.each([
    ["port 0", { host: "a.io", port: 0 }, ErrorCode.InvalidPort, "egress[0].port"],
    ["port 65536", { host: "a.io", port: 65536 }, ErrorCode.InvalidPort, "egress[0].port"],
    ["port 1.5", { host: "a.io", port: 1.5 }, ErrorCode.InvalidPort, "egress[0].port"],
    ["port written as a string", { host: "a.io", port: "443" }, ErrorCode.InvalidPort, "egress[0].port"],
    ["port null", { host: "a.io", port: null }, ErrorCode.InvalidPort, "egress[0].port"],
    ["a negative port", { host: "a.io", port: -443 }, ErrorCode.InvalidPort, "egress[0].port"],
    ["an unknown field", { host: "a.io", scheme: "https" }, ErrorCode.UnknownField, "egress[0].scheme"],
    ["a missing host", { port: 443 }, ErrorCode.Required, "egress[0].host"],
    ["a host that is not a string", { host: 1 }, ErrorCode.InvalidType, "egress[0].host"],
    ["an IP literal host", { host: "1.2.3.4" }, ErrorCode.InvalidEgressHost, "egress[0].host"],
    ["an upper-case host", { host: "Api.example.com" }, ErrorCode.InvalidEgressHost, "egress[0].host"],
    ["a string instead of an object", "a.io:443", ErrorCode.InvalidType, "egress[0]"],
    ["an array instead of an object", ["a.io"], ErrorCode.InvalidType, "egress[0]"],
  ])("refuses %s", (_what, value, code, path) => {
    const result = parseEgressHost(value, "egress[0]");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors).toContainEqual(expect.objectContaining({ code, path }));
  });

  it("reports the host and the port problems together", () => {
    const result = parseEgressHost({ host: "core", port: 0, x: 1 }, "e");
    expect(result.ok ? [] : result.errors.map((e) => e.code).sort()).toEqual(
      [ErrorCode.InvalidEgressHost, ErrorCode.InvalidPort, ErrorCode.UnknownField].sort(),
    );
  });

  it("never throws, whatever it is given", () => {
    fc.assert(
      fc.property(fc.anything(), (v) => {
        expect(typeof parseEgressHost(v, "e").ok).toBe("boolean");
      }),
      { numRuns: 200 },
    );
  });
});

describe("formatting and ordering", () => {
  it("formats host:port", () => {
    expect(formatHostPort({ host: "a.io", port: 443 })).toBe("a.io:443");
    expect(egressKey({ host: "a.io", port: 8443 })).toBe("a.io:8443");
  });

  it("sorts by host, then numerically by port", () => {
    const hosts = [
      { host: "b.io", port: 443 },
      { host: "a.io", port: 8443 },
      { host: "a.io", port: 80 },
    ];
    expect([...hosts].sort(compareEgressHosts)).toEqual([
      { host: "a.io", port: 80 },
      { host: "a.io", port: 8443 },
      { host: "b.io", port: 443 },
    ]);
  });
});
