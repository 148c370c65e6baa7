import { describe, expect, it } from "vitest";
import { refusalBytes } from "./answer.js";
import { PROXY_AUTH_MESSAGES, type ProxyAuthError } from "./proxy-auth.js";
import { EGRESS_FAILURE_CODES } from "../events/index.js";
import { decisionOutcome, REFUSALS, refusalOutcome, type RefusalCode } from "./refusals.js";

const codes = Object.keys(REFUSALS) as RefusalCode[];

describe("the refusal table", () => {
  it.each(Object.keys(REFUSALS) as RefusalCode[])("agrees with the log's list of failures on %s", (code) => {
    expect(EGRESS_FAILURE_CODES.has(code)).toBe(REFUSALS[code].outcome === "failed");
  });

  it("lists no failure the table does not know", () => {
    expect([...EGRESS_FAILURE_CODES].filter((c) => !Object.hasOwn(REFUSALS, c))).toEqual([]);
  });

  it.each(Object.keys(PROXY_AUTH_MESSAGES) as ProxyAuthError[])("answers %s with 407, recorded without identity", (code) => {
    expect(REFUSALS[code]).toMatchObject({ status: 407, recorded: "anonymous", text: PROXY_AUTH_MESSAGES[code] });
  });

  it.each([
    ["not_listed", 407, "decision"], ["no_allow_list", 407, "decision"], ["forbidden_address", 502, "decision"], ["dns_timeout", 504, "decision"],
    ["dns_nxdomain", 502, "decision"], ["token_refused", 407, "anonymous"], ["not_a_plugin", 407, "anonymous"], ["malformed_target", 400, "anonymous"],
    ["draining", 503, "none"], ["too_many_tunnels", 429, "none"], ["record_failed", 503, "none"], ["commit_timeout", 503, "none"],
    ["dial_failed", 502, "none"], ["connect_timeout", 504, "none"],
  ] as const)("answers %s with %i, recorded as %s", (code, status, recorded) => {
    expect(REFUSALS[code].status).toBe(status);
    expect(REFUSALS[code].recorded).toBe(recorded);
  });

  it("gives every code a distinct counter label", () => {
    expect(new Set(codes.map((c) => REFUSALS[c].label)).size).toBe(codes.length);
  });

  // Every code of the table, with what it is and the Proxy-Status its answer carries (RFC 9209).
  const EVERY: Record<RefusalCode, readonly ["refused" | "failed", string]> = {
    draining: ["failed", "error=proxy_internal_response"],
    too_many_tunnels: ["failed", "error=connection_limit_reached"],
    malformed_target: ["refused", "error=http_request_error"],
    upstream_proxy_refused: ["refused", "error=http_request_denied"],
    no_token: ["refused", "error=http_request_denied"],
    bad_proxy_auth_duplicate: ["refused", "error=http_request_error"],
    bad_proxy_auth_scheme: ["refused", "error=http_request_error"],
    bad_proxy_auth_no_credentials: ["refused", "error=http_request_error"],
    bad_proxy_auth_base64: ["refused", "error=http_request_error"],
    bad_proxy_auth_encoding: ["refused", "error=http_request_error"],
    bad_proxy_auth_no_colon: ["refused", "error=http_request_error"],
    bad_proxy_auth_empty_token: ["refused", "error=http_request_error"],
    bad_proxy_auth_token_in_user: ["refused", "error=http_request_error"],
    bad_proxy_auth_whitespace: ["refused", "error=http_request_error"],
    token_refused: ["refused", "error=http_request_denied"],
    wrong_audience: ["refused", "error=http_request_denied"],
    no_username: ["refused", "error=http_request_denied"],
    review_failed: ["failed", "error=proxy_internal_error"],
    review_timeout: ["failed", "error=proxy_internal_error"],
    not_a_plugin: ["refused", "error=http_request_denied"],
    not_listed: ["refused", "error=http_request_denied"],
    no_allow_list: ["refused", "error=http_request_denied"],
    dns_nxdomain: ["failed", 'error=dns_error; rcode="NXDOMAIN"'],
    dns_servfail: ["failed", 'error=dns_error; rcode="SERVFAIL"'],
    dns_refused: ["failed", 'error=dns_error; rcode="REFUSED"'],
    dns_no_addresses: ["failed", 'error=dns_error; rcode="NODATA"'],
    dns_timeout: ["failed", "error=dns_timeout"],
    dns_failed: ["failed", "error=dns_error"],
    forbidden_address: ["refused", "error=destination_ip_prohibited"],
    record_failed: ["failed", "error=proxy_internal_error"],
    commit_timeout: ["failed", "error=proxy_internal_error"],
    dial_failed: ["failed", "error=destination_unavailable"],
    connect_timeout: ["failed", "error=connection_timeout"],
    client_gone: ["failed", "error=proxy_internal_response"],
    internal_error: ["failed", "error=proxy_internal_error"],
  };

  it("has a row for exactly the codes of the expected table", () => {
    expect(codes.sort()).toEqual(Object.keys(EVERY).sort());
  });

  it.each(codes)("says whether %s was refused by policy or failed, and names it in Proxy-Status", (code) => {
    const [outcome, error] = EVERY[code];
    expect(REFUSALS[code].outcome).toBe(outcome);
    expect(refusalOutcome(code)).toBe(outcome);
    const head = refusalBytes(code).split("\r\n\r\n")[0] ?? "";
    const status = head.split("\r\n").filter((l) => l.startsWith("Proxy-Status: "));
    expect(status).toEqual([`Proxy-Status: openfief-egress; ${error}; details="${code}: ${REFUSALS[code].text.replace(/"/g, '\\"')}"`]);
  });

  it("puts the detail and a more precise error into Proxy-Status", () => {
    const bytes = refusalBytes("dial_failed", { proxyError: { error: "connection_refused" } });
    expect(bytes).toContain('\r\nProxy-Status: openfief-egress; error=connection_refused; details="dial_failed: the destination could not be reached"\r\n');
    const forbidden = refusalBytes("forbidden_address", { detail: "forbidden_range" });
    expect(forbidden).toContain('; details="forbidden_address: the name resolves to an address the proxy never dials (forbidden_range)"\r\n');
    expect(forbidden.endsWith("\r\n\r\nforbidden_address: the name resolves to an address the proxy never dials (forbidden_range)\n")).toBe(true);
  });

  it.each([
    [{ allowed: true, reason: "listed" }, "allowed"],
    [{ allowed: false, reason: "not_listed" }, "refused"],
    [{ allowed: false, reason: "no_allow_list" }, "refused"],
    [{ allowed: false, reason: "forbidden_address" }, "refused"],
    [{ allowed: false, reason: "dns_nxdomain" }, "failed"],
    [{ allowed: false, reason: "dns_timeout" }, "failed"],
    [{ allowed: false, reason: "a reason no table knows" }, "refused"],
    [{ allowed: false, reason: "constructor" }, "refused"],
  ] as const)("reads the recorded decision %o as %s", (d, outcome) => {
    expect(decisionOutcome(d)).toBe(outcome);
  });

  it.each(codes.filter((c) => REFUSALS[c].status !== 499))("writes %s as a complete answer whose length matches its body", (code) => {
    const bytes = refusalBytes(code);
    const [head, body] = bytes.split("\r\n\r\n") as [string, string];
    expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${REFUSALS[code].status} `));
    expect(Number(/Content-Length: (\d+)/.exec(head)?.[1])).toBe(Buffer.byteLength(body));
    expect(body.startsWith(`${code}: `)).toBe(true);
    expect(head.includes("Proxy-Authenticate")).toBe(REFUSALS[code].status === 407);
  });
});
