/**
 * The egress proxy end to end: a real proxy on 127.0.0.1, a real DNS server, real TLS servers and
 * real clients. "Public" answers are mapped to local listeners by the injected connect function,
 * which records every address the proxy dialed.
 */
import { connect as tlsConnect } from "node:tls";
import { connect as netConnect, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { ProxyAgent, fetch as undiciFetch } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { decodeAllowLists } from "../../src/plugins/allowlist.js";
import { createEgressProxy, EgressConfigError } from "../../src/egress/proxy.js";
import { MemoryAllowListSource } from "../../src/egress/allowlist-source.js";
import { BatchingDecisionRecorder } from "../../src/egress/recorder.js";
import type { EgressDecisionRecord } from "../../src/egress/decision.js";
import { DnsResolver } from "../../src/egress/resolver.js";
import { pino } from "pino";
import { startDnsServer, type TestDnsServer } from "./support/dns-server.js";
import { connectHead, rawRequest, startHarness, TOKENS, type Harness } from "./support/harness.js";
import { makeCert, startTlsServer } from "./support/tls.js";

const HOSTS = [
  "api.example.com", "private.example.com", "mixed.example.com", "rebind.example.com", "nx.example.com",
  "servfail.example.com", "silent.example.com", "mapped.example.com", "nat64.example.com", "meta.example.com",
  "v6.example.com", "closed.example.com", "self.example.com", "cached.example.com", "cached-private.example.com",
];
const ALPHA_LIST = [...HOSTS.map((h) => `${h}:443`), "api.example.com:8443"].sort().map((l) => `${l}\n`).join("");

let dns: TestDnsServer;
let tls: Awaited<ReturnType<typeof startTlsServer>>;
const cert = makeCert(["api.example.com", "rebind.example.com", "v6.example.com"]);

beforeAll(async () => {
  dns = await startDnsServer({
    "api.example.com": { kind: "answer", addresses: ["8.8.4.4"] },
    "unlisted.example.com": { kind: "answer", addresses: ["8.8.4.4"] },
    "private.example.com": { kind: "answer", addresses: ["10.0.0.7"] },
    "mixed.example.com": { kind: "answer", addresses: ["8.8.4.4", "10.0.0.7"] },
    // TTL 0, as a rebinding name answers: never cached, so the second answer is seen.
    "rebind.example.com": { kind: "sequence", answers: [["8.8.8.8"], ["127.0.0.1"]], ttl: 0 },
    "cached.example.com": { kind: "answer", addresses: ["8.8.4.4"], ttl: 30 },
    "cached-private.example.com": { kind: "answer", addresses: ["8.8.4.4", "10.0.0.7"], ttl: 30 },
    "nx.example.com": { kind: "nxdomain" },
    "servfail.example.com": { kind: "servfail" },
    "silent.example.com": { kind: "silent" },
    "mapped.example.com": { kind: "answer", addresses: ["::ffff:10.0.0.1"] },
    "nat64.example.com": { kind: "answer", addresses: ["64:ff9b::a00:1"] },
    "meta.example.com": { kind: "answer", addresses: ["169.254.169.254"] },
    "v6.example.com": { kind: "answer", addresses: ["2001:4860:4860::8844"] },
    "closed.example.com": { kind: "answer", addresses: ["9.9.9.9"] },
    "self.example.com": { kind: "answer", addresses: ["127.0.0.1"] },
  });
  tls = await startTlsServer(cert, "public");
});

afterAll(async () => {
  await tls.close();
  await dns.close();
});

let h: Harness;
async function harness(opts: Partial<Parameters<typeof startHarness>[0]> = {}): Promise<Harness> {
  h = await startHarness({ dnsServer: dns.server, allowLists: { alpha: ALPHA_LIST, beta: "" }, ...opts });
  h.routes.set("8.8.4.4", tls.port);
  h.routes.set("8.8.8.8", tls.port);
  h.routes.set("2001:4860:4860::8844", tls.port);
  return h;
}
afterEach(async () => {
  await h?.close();
});

/** GET https://host/ through the proxy with node:https and a CONNECT made by hand. */
async function httpsThrough(port: number, host: string, token: string): Promise<string> {
  const answer = await rawRequest(port, connectHead(`${host}:443`, token));
  if (answer.status !== 200) throw new Error(`status ${answer.status}`);
  // node:tls over the tunnel, certificate checked for the hostname: TLS runs end to end.
  const secure = tlsConnect({ socket: answer.socket, servername: host, ca: cert.cert });
  return new Promise((resolve, reject) => {
    let text = "";
    secure.on("secureConnect", () => secure.write(`GET /x HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
    secure.on("data", (d: Buffer) => (text += d.toString()));
    secure.on("end", () => resolve(text.slice(text.indexOf("\r\n\r\n") + 4)));
    secure.on("error", reject);
  });
}

describe("a CONNECT to an allowed host", () => {
  it("tunnels TLS end to end and dials only the checked address", async () => {
    await harness();
    expect(await httpsThrough(h.port, "api.example.com", TOKENS.alpha)).toBe("hello from public /x");
    expect(h.dials).toEqual([{ address: "8.8.4.4", family: 4, port: 443 }]);
    expect(h.records).toEqual([{ plugin: "alpha", host: "api.example.com", port: 443, allowed: true, reason: "listed", rules: 1, address: "8.8.4.4", addresses: ["8.8.4.4"] }]);
  });

  it("works with undici's ProxyAgent and the token in the proxy URL", async () => {
    await harness();
    const agent = new ProxyAgent({ uri: `http://plugin:${TOKENS.alpha}@127.0.0.1:${h.port}`, requestTls: { ca: cert.cert } });
    try {
      const res = await undiciFetch("https://api.example.com/undici", { dispatcher: agent });
      expect(await res.text()).toBe("hello from public /undici");
    } finally {
      await agent.close();
    }
    expect(h.dials.map((d) => d.address)).toEqual(["8.8.4.4"]);
  });

  it("reaches a public IPv6 address", async () => {
    await harness();
    expect(await httpsThrough(h.port, "v6.example.com", TOKENS.alpha)).toBe("hello from public /x");
    expect(h.dials).toEqual([{ address: "2001:4860:4860::8844", family: 6, port: 443 }]);
  });

  it("delivers bytes sent right after the CONNECT head to the upstream", async () => {
    await harness();
    const got: Buffer[] = [];
    const echo: Server = createServer((s: Socket) => s.on("data", (d: Buffer) => got.push(d)));
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
    h.routes.set("8.8.4.4", (echo.address() as AddressInfo).port);
    const answer = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha), Buffer.from("EARLY-BYTES"));
    expect(answer.status).toBe(200);
    answer.socket.write("LATER");
    await new Promise((r) => setTimeout(r, 100));
    answer.socket.destroy();
    echo.close();
    expect(Buffer.concat(got).toString()).toBe("EARLY-BYTESLATER");
  });

  it("takes the destination from the request-target, never from Host", async () => {
    await harness();
    const answer = await rawRequest(h.port, `CONNECT private.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\nProxy-Authorization: Basic ${Buffer.from(`plugin:${TOKENS.alpha}`).toString("base64")}\r\n\r\n`);
    expect(answer.status).toBe(502);
    expect(h.dials).toEqual([]);
  });
});

describe("allow-list matching", () => {
  it.each(["API.Example.COM:443", "api.example.com.:443", "Api.Example.Com.:443"])("ignores ASCII case and one trailing dot: %s", async (target) => {
    await harness();
    const a = await rawRequest(h.port, connectHead(target, TOKENS.alpha));
    expect(a.status).toBe(200);
    a.socket.destroy();
    expect(h.dials.map((d) => d.address)).toEqual(["8.8.4.4"]);
  });

  it.each(["api.example.com..:443", "api.exa\u212Aample.com:443", "xn--api.example.com:443"])("never matches %s", async (target) => {
    await harness();
    const a = await rawRequest(h.port, connectHead(JSON.parse(`"${target}"`) as string, TOKENS.alpha)).catch(() => ({ status: 0, body: "", headers: {}, socket: undefined }));
    expect([0, 400, 407]).toContain(a.status);
    expect(h.dials).toEqual([]);
  });
});

describe("TestProxyDialsOnlyCheckedAddresses", () => {
  it("sends private, mixed, unlisted and allowed CONNECTs and dials exactly one address, the public one", async () => {
    await harness();
    const statuses: number[] = [];
    for (const host of ["private.example.com", "mixed.example.com", "unlisted.example.com", "api.example.com"]) {
      const a = await rawRequest(h.port, connectHead(`${host}:443`, TOKENS.alpha));
      statuses.push(a.status);
      a.socket.destroy();
    }
    expect(statuses).toEqual([502, 502, 407, 200]);
    expect(h.dials).toEqual([{ address: "8.8.4.4", family: 4, port: 443 }]);
    expect(dns.queries.get("unlisted.example.com") ?? 0).toBe(0);
  });
});

describe("refusals", () => {
  it.each([
    ["private address", "private.example.com:443", 502, "forbidden_address"],
    ["a name with any private address", "mixed.example.com:443", 502, "forbidden_address"],
    ["cloud metadata", "meta.example.com:443", 502, "forbidden_address"],
    ["IPv4-mapped private address", "mapped.example.com:443", 502, "forbidden_address"],
    ["NAT64 private address", "nat64.example.com:443", 502, "forbidden_address"],
    ["the proxy's own loopback", "self.example.com:443", 502, "forbidden_address"],
    ["NXDOMAIN", "nx.example.com:443", 502, "dns_nxdomain"],
    ["SERVFAIL", "servfail.example.com:443", 502, "dns_servfail"],
    ["an unlisted host", "unlisted.example.com:443", 407, "not_listed"],
    ["a listed host on another port", "api.example.com:444", 407, "not_listed"],
    ["a subdomain of a listed host", "x.api.example.com:443", 407, "not_listed"],
    ["a suffix trick", "api.example.com.evil.example.net:443", 407, "not_listed"],
    ["an IPv4 literal", "8.8.4.4:443", 407, "not_listed"],
    ["an IPv6 literal", "[2001:4860:4860::8844]:443", 407, "not_listed"],
  ])("refuses %s", async (_what, target, status, code) => {
    await harness();
    const a = await rawRequest(h.port, connectHead(target, TOKENS.alpha));
    expect(a.status).toBe(status);
    expect(a.body).toContain(code);
    if (status === 407) expect(a.headers["proxy-authenticate"]).toBe('Basic realm="openfief-egress"');
    expect(h.dials).toEqual([]);
    expect(h.records).toHaveLength(1);
    expect(h.records[0]?.allowed).toBe(false);
  });

  it("refuses a plugin with an empty list, and one with no list at all", async () => {
    await harness({ allowLists: { alpha: ALPHA_LIST } });
    h.reviewer.behaviour = "normal";
    const beta = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.beta));
    expect(beta.status).toBe(407);
    expect(beta.body).toContain("no_allow_list");
    h.allowLists.setData({ alpha: ALPHA_LIST, beta: "" });
    const empty = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.beta));
    expect(empty.status).toBe(407);
    expect(empty.body).toContain("not_listed");
    expect(h.dials).toEqual([]);
  });

  it("answers 504 when DNS does not answer in time", async () => {
    await harness({ options: { dnsTimeoutMs: 300 } });
    const a = await rawRequest(h.port, connectHead("silent.example.com:443", TOKENS.alpha));
    expect(a.status).toBe(504);
    expect(h.dials).toEqual([]);
  });

  it("answers 502 when the dial fails and 504 when it does not complete in time", async () => {
    await harness({ options: { connectTimeoutMs: 200 } });
    const failed = await rawRequest(h.port, connectHead("closed.example.com:443", TOKENS.alpha));
    expect(failed.status).toBe(502);
    h.routes.delete("8.8.4.4");
    await h.close();
    const { Socket: NetSocket } = await import("node:net");
    h = await startHarness({ dnsServer: dns.server, allowLists: { alpha: ALPHA_LIST }, options: { connectTimeoutMs: 200 }, connect: () => new NetSocket() });
    const slow = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(slow.status).toBe(504);
  });

  it("refuses DNS rebinding: a name that turns private on the next query", async () => {
    await harness();
    dns.set("rebind.example.com", { kind: "sequence", answers: [["8.8.8.8"], ["127.0.0.1"]], ttl: 0 });
    expect(await httpsThrough(h.port, "rebind.example.com", TOKENS.alpha)).toBe("hello from public /x");
    const second = await rawRequest(h.port, connectHead("rebind.example.com:443", TOKENS.alpha));
    expect(second.status).toBe(502);
    expect(h.dials.map((d) => d.address)).toEqual(["8.8.8.8"]);
  });
});

describe("the Proxy-Status of an answer (RFC 9209)", () => {
  it.each([
    ["a host not granted, whose 407 is not about the token", "unlisted.example.com:443", TOKENS.alpha, 407, 'openfief-egress; error=http_request_denied; details="not_listed: host:port is not on the plugin\'s allow-list"'],
    ["a token the reviewer refuses", "api.example.com:443", "not-a-known-token", 407, 'openfief-egress; error=http_request_denied; details="token_refused: the token was refused"'],
    ["no token at all", "api.example.com:443", null, 407, 'openfief-egress; error=http_request_denied; details="no_token: no Proxy-Authorization header"'],
    ["a name that does not exist", "nx.example.com:443", TOKENS.alpha, 502, 'openfief-egress; error=dns_error; rcode="NXDOMAIN"; details="dns_nxdomain: the name does not exist"'],
    ["a name DNS fails to answer", "servfail.example.com:443", TOKENS.alpha, 502, 'openfief-egress; error=dns_error; rcode="SERVFAIL"; details="dns_servfail: DNS failed to answer (SERVFAIL)"'],
    ["a forbidden address", "private.example.com:443", TOKENS.alpha, 502, 'openfief-egress; error=destination_ip_prohibited; details="forbidden_address: the name resolves to an address the proxy never dials (forbidden_range)"'],
  ])("names why for %s", async (_what, target, token, status, value) => {
    await harness();
    const a = await rawRequest(h.port, connectHead(target, token));
    expect(a.status).toBe(status);
    expect(a.headers["proxy-status"]).toBe(value);
    if (status === 407) expect(a.headers["proxy-authenticate"]).toBe('Basic realm="openfief-egress"');
  });

  it("says the connection was refused when the destination refuses it, and timed out when it never answers", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", () => r()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await harness({ options: { connectTimeoutMs: 200 } });
    h.routes.set("9.9.9.9", port);
    const refused = await rawRequest(h.port, connectHead("closed.example.com:443", TOKENS.alpha));
    expect(refused.status).toBe(502);
    expect(refused.headers["proxy-status"]).toBe('openfief-egress; error=connection_refused; details="dial_failed: the destination could not be reached"');
    await h.close();
    const { Socket: NetSocket } = await import("node:net");
    h = await startHarness({ dnsServer: dns.server, allowLists: { alpha: ALPHA_LIST }, options: { connectTimeoutMs: 200 }, connect: () => new NetSocket() });
    const slow = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(slow.status).toBe(504);
    expect(slow.headers["proxy-status"]).toBe('openfief-egress; error=connection_timeout; details="connect_timeout: the destination did not accept the connection in time"');
  });

  it("says DNS timed out when it did", async () => {
    await harness({ options: { dnsTimeoutMs: 300 } });
    const a = await rawRequest(h.port, connectHead("silent.example.com:443", TOKENS.alpha));
    expect(a.headers["proxy-status"]).toBe('openfief-egress; error=dns_timeout; details="dns_timeout: DNS did not answer in time"');
  });

  it("is not on a tunnel's 200", async () => {
    await harness();
    const a = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(a.status).toBe(200);
    expect(a.headers["proxy-status"]).toBeUndefined();
    a.socket.destroy();
  });
});

describe("other uses of the proxy", () => {
  it.each([
    ["GET", "GET http://api.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n"],
    ["POST", "POST http://api.example.com/ HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 0\r\n\r\n"],
    ["origin-form GET", "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n"],
    ["DELETE", "DELETE /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n"],
  ])("answers 405 to %s", async (_m, head) => {
    await harness();
    const a = await rawRequest(h.port, head);
    expect(a.status).toBe(405);
    expect(h.dials).toEqual([]);
  });

  it("answers /healthcheck with 204", async () => {
    await harness();
    const a = await rawRequest(h.port, "GET /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(a.status).toBe(204);
  });

  it("refuses a request to chain through another proxy", async () => {
    await harness();
    const a = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha, ["X-Upstream-Https-Proxy: http://10.0.0.1:3128"]));
    expect(a.status).toBe(407);
    expect(h.dials).toEqual([]);
  });

  it.each([
    ["no port", "api.example.com"],
    ["empty port", "api.example.com:"],
    ["port 0", "api.example.com:0"],
    ["port too large", "api.example.com:65536"],
    ["leading zero port", "api.example.com:0443"],
    ["signed port", "api.example.com:+443"],
    ["userinfo", "user@api.example.com:443"],
    ["a path", "api.example.com:443/x"],
    ["absolute form", "http://api.example.com:443"],
    ["unbracketed IPv6", "::1:443"],
    ["percent-encoding", "api%2eexample.com:443"],
    ["empty host", ":443"],
  ])("answers 400 to a target with %s", async (_what, target) => {
    await harness();
    const a = await rawRequest(h.port, connectHead(target, TOKENS.alpha));
    expect(a.status).toBe(400);
    expect(h.dials).toEqual([]);
  });

  it("refuses to build with HTTPS_PROXY or https_proxy in its environment", () => {
    const base = { reviewer: { review: async () => ({ ok: false as const, code: "token_refused" as const }) }, allowLists: new MemoryAllowListSource(), resolver: new DnsResolver(), connect: () => { throw new Error("no"); }, recorder: new BatchingDecisionRecorder(() => undefined), logger: pino({ enabled: false }) };
    expect(() => createEgressProxy({ ...base, env: { HTTPS_PROXY: "http://x:1" } })).toThrow(EgressConfigError);
    expect(() => createEgressProxy({ ...base, env: { https_proxy: "http://x:1" } })).toThrow(/https_proxy/);
    expect(() => createEgressProxy({ ...base, env: {}, allowLists: undefined as never })).toThrow(/allow-list source/);
  });
});

describe("identity", () => {
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  it.each([
    ["no header", [], "no_token"],
    ["a Bearer header", [`Proxy-Authorization: Bearer ${TOKENS.alpha}`], "bad_proxy_auth_scheme"],
    ["Basic without credentials", ["Proxy-Authorization: Basic"], "bad_proxy_auth_no_credentials"],
    ["credentials that are not base64", ["Proxy-Authorization: Basic !!not-base64!!"], "bad_proxy_auth_base64"],
    ["base64 with a stray character", [`Proxy-Authorization: Basic ${b64(`plugin:${TOKENS.alpha}`).slice(0, 8)}*${b64(`plugin:${TOKENS.alpha}`).slice(8)}`], "bad_proxy_auth_base64"],
    ["base64 without padding", [`Proxy-Authorization: Basic ${b64("plugin:tok").replace(/=+$/, "")}`], "bad_proxy_auth_base64"],
    ["credentials without a colon", [`Proxy-Authorization: Basic ${b64(TOKENS.alpha)}`], "bad_proxy_auth_no_colon"],
    ["the token in the user name", [`Proxy-Authorization: Basic ${b64(`${TOKENS.alpha}:`)}`], "bad_proxy_auth_token_in_user"],
    ["an empty password", [`Proxy-Authorization: Basic ${b64("plugin:")}`], "bad_proxy_auth_empty_token"],
    ["whitespace in the token", [`Proxy-Authorization: Basic ${b64(`plugin:${TOKENS.alpha} x`)}`], "bad_proxy_auth_whitespace"],
    ["two headers", [`Proxy-Authorization: Basic ${b64(`plugin:${TOKENS.alpha}`)}`, `Proxy-Authorization: Basic ${b64(`plugin:${TOKENS.alpha}`)}`], "bad_proxy_auth_duplicate"],
    ["an unknown token", [`Proxy-Authorization: Basic ${b64("plugin:unknown-token")}`], "token_refused"],
    ["an identity that is not a plugin", [`Proxy-Authorization: Basic ${b64(`plugin:${TOKENS.notPlugin}`)}`], "not_a_plugin"],
  ])("answers 407 with Proxy-Authenticate to %s", async (_what, headers, code) => {
    await harness();
    const a = await rawRequest(h.port, connectHead("api.example.com:443", null, headers));
    expect(a.status).toBe(407);
    expect(a.headers["proxy-authenticate"]).toBe('Basic realm="openfief-egress"');
    expect(a.body.split(":")[0]?.trim()).toBe(code);
    expect(h.dials).toEqual([]);
    expect(h.records).toEqual([]);
  });

  it.each(["basic", "BASIC", "bAsIc"])("accepts the scheme written %s", async (scheme) => {
    await harness();
    const a = await rawRequest(h.port, connectHead("api.example.com:443", null, [`Proxy-Authorization: ${scheme} ${b64(`plugin:${TOKENS.alpha}`)}`]));
    expect(a.status).toBe(200);
    a.socket.destroy();
  });
});

describe("failing closed", () => {
  it("refuses when the reviewer throws", async () => {
    await harness();
    h.reviewer.behaviour = "throw";
    const a = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(a.status).toBe(407);
    expect(a.body).toContain("review_failed");
    expect(h.dials).toEqual([]);
  });

  it("refuses when the reviewer does not answer in time", async () => {
    await harness({ options: { reviewTimeoutMs: 200 } });
    h.reviewer.behaviour = "hang";
    const a = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(a.status).toBe(407);
    expect(a.body).toContain("review_timeout");
  });

  it("refuses everything while the source has no lists (unsynced, deleted or undecodable)", async () => {
    await harness({ allowLists: null });
    const a = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(a.status).toBe(407);
    expect(a.body).toContain("no_allow_list");
    h.allowLists.setData({ alpha: ALPHA_LIST });
    const ok = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(ok.status).toBe(200);
    ok.socket.destroy();
    expect(h.allowLists.setData({ alpha: "API.example.com:443\n" })).toBe(false);
    const after = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(after.status).toBe(407);
    expect(h.logs.some((l) => l.includes("egress allow-lists refused; denying all egress until fixed"))).toBe(true);
  });

  it("refuses with 503 when the decision cannot be recorded, and the dialed upstream sees zero bytes", async () => {
    const upstream = await countingUpstream("BANNER");
    await harness();
    h.routes.set("8.8.4.4", upstream.port);
    h.recorderFails.value = true;
    const client = rawClient(h.port, connectHead("api.example.com:443", TOKENS.alpha) + "EARLY-BYTES");
    // The dial ran alongside the failed commit; the proxy destroys it unused.
    await upstream.closed;
    await client.closed;
    upstream.close();
    expect(client.text()).toMatch(/^HTTP\/1\.1 503 /);
    expect(client.text()).not.toContain("BANNER");
    expect(upstream.connections).toBe(1);
    expect(upstream.received()).toBe("");
    expect(h.records).toEqual([]);
  });
});

/** A TCP server that counts connections and bytes, and optionally greets with a banner. */
async function countingUpstream(banner?: string): Promise<{ port: number; connections: number; received: () => string; connected: Promise<void>; closed: Promise<void>; close: () => void }> {
  const chunks: Buffer[] = [];
  let onConnected = (): void => undefined;
  let onClosed = (): void => undefined;
  const connected = new Promise<void>((r) => (onConnected = r));
  const closed = new Promise<void>((r) => (onClosed = r));
  const state = { connections: 0 };
  const server: Server = createServer((s: Socket) => {
    state.connections++;
    onConnected();
    if (banner !== undefined) s.write(banner);
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("error", () => s.destroy());
    s.on("close", () => onClosed());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return state.connections;
    },
    received: () => Buffer.concat(chunks).toString("latin1"),
    connected,
    closed,
    close: () => void server.close(),
  };
}

/** A raw client that sends `bytes` and keeps everything it receives. */
function rawClient(port: number, bytes: string): { socket: Socket; text: () => string; closed: Promise<void> } {
  const socket = netConnect({ host: "127.0.0.1", port });
  const chunks: Buffer[] = [];
  socket.on("connect", () => socket.write(bytes, "latin1"));
  socket.on("data", (d: Buffer) => chunks.push(d));
  socket.on("error", () => socket.destroy());
  const closed = new Promise<void>((r) => socket.on("close", () => r()));
  return { socket, text: () => Buffer.concat(chunks).toString("latin1"), closed };
}

/** Waits, bounded, until `cond` holds. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
}

describe("the commit and the dial overlap", () => {
  it("dials while the decision commits, but sends the 200 and lets bytes through only once it is committed", async () => {
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const committed: EgressDecisionRecord[] = [];
    const recorder = new BatchingDecisionRecorder(async (batch) => {
      await gate;
      committed.push(...batch);
    });
    const upstream = await countingUpstream("BANNER");
    await harness({ recorder });
    h.routes.set("8.8.4.4", upstream.port);
    const client = rawClient(h.port, connectHead("api.example.com:443", TOKENS.alpha) + "EARLY-BYTES");
    await upstream.connected;
    // Dialed, not committed: nothing has crossed in either direction.
    await new Promise((r) => setTimeout(r, 100));
    expect(committed).toEqual([]);
    expect(client.text()).toBe("");
    expect(upstream.received()).toBe("");
    release();
    await until(() => client.text().includes("BANNER") && upstream.received() === "EARLY-BYTES");
    expect(client.text()).toBe("HTTP/1.1 200 Connection Established\r\n\r\nBANNER");
    expect(upstream.received()).toBe("EARLY-BYTES");
    expect(committed).toEqual([{ plugin: "alpha", host: "api.example.com", port: 443, allowed: true, reason: "listed", rules: 1, address: "8.8.4.4", addresses: ["8.8.4.4"] }]);
    client.socket.destroy();
    upstream.close();
  });

  it("destroys the upstream and answers 502 when the dial connected but the upstream failed before the commit", async () => {
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const recorder = new BatchingDecisionRecorder(async () => {
      await gate;
    });
    const server: Server = createServer((s: Socket) => s.destroy());
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    await harness({ recorder });
    h.routes.set("8.8.4.4", (server.address() as AddressInfo).port);
    const answer = rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    await new Promise((r) => setTimeout(r, 100));
    release();
    const a = await answer;
    server.close();
    expect(a.status).toBe(502);
  });
});

describe("the DNS answer cache", () => {
  it("reuses an answer within its TTL and dials the checked address", async () => {
    await harness();
    const before = dns.queries.get("cached.example.com") ?? 0;
    for (let i = 0; i < 3; i++) {
      const a = await rawRequest(h.port, connectHead("cached.example.com:443", TOKENS.alpha));
      expect(a.status).toBe(200);
      a.socket.destroy();
    }
    expect((dns.queries.get("cached.example.com") ?? 0) - before).toBe(2); // one A and one AAAA
    expect(h.dials.map((d) => d.address)).toEqual(["8.8.4.4", "8.8.4.4", "8.8.4.4"]);
  });

  it("checks every cached address each time it is used: a cached private address is refused every time", async () => {
    await harness();
    const before = dns.queries.get("cached-private.example.com") ?? 0;
    for (let i = 0; i < 2; i++) {
      const a = await rawRequest(h.port, connectHead("cached-private.example.com:443", TOKENS.alpha));
      expect(a.status).toBe(502);
      expect(a.body).toContain("forbidden_address");
    }
    expect((dns.queries.get("cached-private.example.com") ?? 0) - before).toBe(2);
    expect(h.dials).toEqual([]);
  });

  it("never resolves an unlisted host", async () => {
    await harness();
    const before = dns.queries.get("unlisted.example.com") ?? 0;
    const a = await rawRequest(h.port, connectHead("unlisted.example.com:443", TOKENS.alpha));
    expect(a.status).toBe(407);
    expect(dns.queries.get("unlisted.example.com") ?? 0).toBe(before);
  });
});

describe("limits and lifecycle", () => {
  it("answers 429 with Retry-After past the tunnel limit", async () => {
    await harness({ options: { maxTunnels: 2 } });
    const t1 = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    const t2 = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    const t3 = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect([t1.status, t2.status, t3.status]).toEqual([200, 200, 429]);
    expect(t3.headers["retry-after"]).toBe("1");
    t1.socket.destroy();
    await new Promise((r) => setTimeout(r, 50));
    const t4 = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(t4.status).toBe(200);
    t2.socket.destroy();
    t4.socket.destroy();
  });

  it("closes a tunnel idle in both directions", async () => {
    await harness({ options: { idleMs: 200 } });
    const a = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(a.status).toBe(200);
    await new Promise<void>((resolve) => a.socket.on("close", () => resolve()));
    expect(a.socket.destroyed).toBe(true);
  });

  it("cuts off a client that never sends its CONNECT head", async () => {
    await harness({ options: { headTimeoutMs: 200 } });
    const { connect } = await import("node:net");
    const s = connect({ host: "127.0.0.1", port: h.port });
    await new Promise<void>((resolve) => s.on("close", () => resolve()));
    expect(s.destroyed).toBe(true);
  });

  it("drains on close: not ready, new CONNECTs refused, open tunnels closed after the drain time", async () => {
    await harness({ options: { drainMs: 300 } });
    const open = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(open.status).toBe(200);
    expect(h.proxy.ready).toBe(true);
    const closing = h.proxy.close();
    expect(h.proxy.ready).toBe(false);
    const health = await rawRequest(h.port, "GET /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(health.status).toBe(503);
    const late = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect(late.status).toBe(503);
    expect(open.socket.destroyed).toBe(false);
    await closing;
    await expect(rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha))).rejects.toThrow();
    expect(open.socket.destroyed || (await new Promise<boolean>((r) => open.socket.on("close", () => r(true))))).toBe(true);
  });
});

describe("the allow-list swap", () => {
  it("decides every concurrent CONNECT against one complete set, and the next one after a swap sees the new set", async () => {
    await harness({ allowLists: { alpha: "api.example.com:443\n", beta: "" } });
    const setA = decodeAllowLists({ alpha: "api.example.com:443\n", beta: "" });
    const setB = decodeAllowLists({ alpha: "", beta: "api.example.com:443\n" });
    if (!setA.ok || !setB.ok) throw new Error("lists");
    const results: Promise<number>[] = [];
    for (let i = 0; i < 40; i++) {
      if (i % 10 === 5) h.allowLists.set(i % 20 === 5 ? setB.value : setA.value);
      results.push(rawRequest(h.port, connectHead("api.example.com:443", i % 2 === 0 ? TOKENS.alpha : TOKENS.beta)).then((a) => {
        a.socket.destroy();
        return a.status;
      }));
    }
    const statuses = await Promise.all(results);
    expect(statuses.every((s) => s === 200 || s === 407)).toBe(true);
    // Every recorded decision is one a complete set gives: exactly one of the two plugins is listed.
    for (const r of h.records) expect(r.reason === "listed" ? r.allowed : !r.allowed).toBe(true);
    h.allowLists.set(setB.value);
    const beta = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.beta));
    const alpha = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect([beta.status, alpha.status]).toEqual([200, 407]);
    beta.socket.destroy();
  });
});

describe("the token", () => {
  it("appears in no answer, log line or recorded decision", async () => {
    await harness();
    const answers: string[] = [];
    for (const target of ["api.example.com:443", "unlisted.example.com:443", "private.example.com:443", "nx.example.com:443", "bad target"]) {
      const a = await rawRequest(h.port, connectHead(target, TOKENS.alpha)).catch(() => undefined);
      if (a !== undefined) {
        answers.push(JSON.stringify(a.headers), a.body);
        a.socket.destroy();
      }
    }
    h.reviewer.behaviour = "throw";
    const refused = await rawRequest(h.port, connectHead("api.example.com:443", TOKENS.alpha));
    answers.push(JSON.stringify(refused.headers), refused.body);
    const everything = [...answers, ...h.logs, JSON.stringify(h.records)].join("\n");
    expect(h.logs.filter((l) => l.includes('"egress decision"')).length).toBeGreaterThanOrEqual(5);
    expect(everything).not.toContain(TOKENS.alpha);
    expect(everything).not.toContain(Buffer.from(`plugin:${TOKENS.alpha}`).toString("base64"));
  });

  it("writes one decision line per CONNECT", async () => {
    await harness();
    for (const target of ["api.example.com:443", "unlisted.example.com:443"]) (await rawRequest(h.port, connectHead(target, TOKENS.alpha))).socket.destroy();
    const lines = h.logs.map((l) => JSON.parse(l) as { msg: string; decision?: { host?: string; allowed: boolean } }).filter((l) => l.msg === "egress decision");
    expect(lines.map((l) => [l.decision?.host, l.decision?.allowed])).toEqual([["api.example.com", true], ["unlisted.example.com", false]]);
  });
});
