import { describe, expect, it } from "vitest";
import { handshakeOf, identify } from "./handshake.js";
import { basicProxyAuthorization } from "./proxy-auth.js";
import { readHead } from "./request-head.js";
import type { TokenReviewer } from "./reviewer.js";

const auth = [`Proxy-Authorization: ${basicProxyAuthorization("plugin", "tok")}`];

/** The handshake of a head as the proxy reads it: the head reader, then `handshakeOf`. */
function handshakeOfHead(target: string, fields: readonly string[]): ReturnType<typeof handshakeOf> {
  const step = readHead(Buffer.from(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${fields.map((f) => `${f}\r\n`).join("")}\r\n`));
  if (step.state !== "done") throw new Error(`the head did not read: ${JSON.stringify(step)}`);
  return handshakeOf(step.head);
}

describe("handshakeOf", () => {
  it.each([
    ["a target without a port", "api.example.com", auth, { ok: false, code: "malformed_target" }],
    ["a chaining header", "api.example.com:443", [...auth, "X-Upstream-HTTPS-Proxy: http://10.0.0.1:3128"], { ok: false, code: "upstream_proxy_refused", target: { host: "api.example.com", port: 443 } }],
    ["no token", "api.example.com:443", [], { ok: false, code: "no_token", target: { host: "api.example.com", port: 443 } }],
    ["two tokens", "api.example.com:443", [...auth, ...auth], { ok: false, code: "bad_proxy_auth_duplicate", target: { host: "api.example.com", port: 443 } }],
    ["a good head", "api.example.com:443", auth, { ok: true, value: { host: "api.example.com", port: 443, token: "tok" } }],
  ])("reads %s", (_what, target, fields, expected) => {
    expect(handshakeOfHead(target, fields)).toEqual(expected);
  });
});

describe("identify", () => {
  const reviewer = (username: string): TokenReviewer => ({ review: () => ({ ok: true, username }) });
  it.each([
    ["a plugin's service account", "system:serviceaccount:openfief:plugin-alpha", { ok: true, plugin: "alpha" }],
    ["another service account", "system:serviceaccount:kube-system:default", { ok: false, code: "not_a_plugin" }],
  ])("answers a synchronous review of %s synchronously", (_what, username, expected) => {
    expect(identify(reviewer(username), "tok", 1000)).toEqual(expected);
  });

  it("refuses when the review throws", async () => {
    const r: TokenReviewer = { review: () => Promise.reject(new Error("down")) };
    expect(await identify(r, "tok", 1000)).toEqual({ ok: false, code: "review_failed" });
  });
});
