import { describe, expect, it } from "vitest";
import { dialErrorType, isToken, PROXY_ERROR_TYPES, PROXY_NAME, proxyStatusValue, sfString } from "./proxy-status.js";

describe("the Proxy-Status header", () => {
  it("names the proxy with a valid structured-field token", () => {
    expect(isToken(PROXY_NAME)).toBe(true);
  });

  it("holds every error type of the registry, each a valid token, once", () => {
    expect(PROXY_ERROR_TYPES).toHaveLength(32);
    expect(new Set(PROXY_ERROR_TYPES).size).toBe(PROXY_ERROR_TYPES.length);
    for (const t of PROXY_ERROR_TYPES) expect(isToken(t)).toBe(true);
  });

  it.each<[string, Parameters<typeof proxyStatusValue>, string]>([
    ["an error alone", [{ error: "connection_timeout" }], "openfief-egress; error=connection_timeout"],
    ["a DNS error with its rcode as a string", [{ error: "dns_error", rcode: "NXDOMAIN" }], 'openfief-egress; error=dns_error; rcode="NXDOMAIN"'],
    ["a DNS error without an rcode", [{ error: "dns_error" }], "openfief-egress; error=dns_error"],
    ["details after the error", [{ error: "http_request_denied" }, "not_listed: host:port is not on the plugin's allow-list"], "openfief-egress; error=http_request_denied; details=\"not_listed: host:port is not on the plugin's allow-list\""],
    ["no details when they are empty", [{ error: "proxy_internal_error" }, ""], "openfief-egress; error=proxy_internal_error"],
  ])("writes %s", (_what, args, value) => {
    expect(proxyStatusValue(...args)).toBe(value);
  });

  it.each([
    ["plain text", "no such host", '"no such host"'],
    ["a quote and a backslash, escaped", 'a "b" \\c', '"a \\"b\\" \\\\c"'],
    ["a control character, replaced", "a\r\nb", '"a??b"'],
    ["a character beyond ASCII, replaced", "k\u212Aé😀", '"k???"'],
  ])("writes %s as an sf-string", (_what, text, out) => {
    expect(sfString(text)).toBe(out);
  });

  it.each([
    ["ECONNREFUSED", "connection_refused"],
    ["EHOSTUNREACH", "destination_ip_unroutable"],
    ["ENETUNREACH", "destination_ip_unroutable"],
    ["ECONNRESET", "connection_terminated"],
    ["ETIMEDOUT", "connection_timeout"],
    [undefined, "destination_unavailable"],
    ["EWHATEVER", "destination_unavailable"],
  ])("names a dial failing with %s %s", (errno, type) => {
    expect(dialErrorType(errno)).toBe(type);
  });
});
