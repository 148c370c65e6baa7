import { describe, expect, it } from "vitest";
import { refusalBytes } from "./answer.js";
import { PROXY_AUTH_MESSAGES, type ProxyAuthError } from "./proxy-auth.js";
import { REFUSALS, type RefusalCode } from "./refusals.js";

const codes = Object.keys(REFUSALS) as RefusalCode[];

describe("the refusal table", () => {
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

  it.each(codes.filter((c) => REFUSALS[c].status !== 499))("writes %s as a complete answer whose length matches its body", (code) => {
    const bytes = refusalBytes(code);
    const [head, body] = bytes.split("\r\n\r\n") as [string, string];
    expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${REFUSALS[code].status} `));
    expect(Number(/Content-Length: (\d+)/.exec(head)?.[1])).toBe(Buffer.byteLength(body));
    expect(body.startsWith(`${code}: `)).toBe(true);
    expect(head.includes("Proxy-Authenticate")).toBe(REFUSALS[code].status === 407);
  });
});
