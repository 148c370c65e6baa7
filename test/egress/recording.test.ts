/**
 * What the proxy records and counts (issue 11, "Egress recording"): the inputs of every decision,
 * refusals before identity in `egress/-` within a rate limit, requests Node's HTTP parser rejects,
 * and the proxy's counters.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect, createServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CachingTokenReviewer } from "../../src/egress/caching-reviewer.js";
import { EgressMetrics } from "../../src/egress/metrics.js";
import { StoreDecisionRecorder } from "../../src/egress/recorder.js";
import type { Resolver } from "../../src/egress/resolver.js";
import { openStore, type EventLog } from "../../src/events/index.js";
import { connectHead, FakeReviewer, rawRequest, startHarness, TOKENS, type Harness } from "./support/harness.js";

const ANSWERS: Record<string, string[]> = { "api.example.com": ["8.8.4.4"], "mixed.example.com": ["8.8.4.4", "10.0.0.7"] };
const resolver: Resolver = { resolve: (host) => (ANSWERS[host] !== undefined ? { ok: true, addresses: ANSWERS[host] } : { ok: false, code: "dns_nxdomain" }) };
const LISTS = { alpha: "api.example.com:443\nmixed.example.com:443\n" };

let dir: string;
let store: EventLog;
let echo: Server;
let h: Harness | undefined;
let registry: Registry;
let metrics: EgressMetrics;

beforeAll(async () => {
  echo = createServer((s) => s.on("data", (d: Buffer) => s.write(d)).on("error", () => s.destroy()));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
});
afterAll(() => echo.close());
afterEach(async () => {
  await h?.close();
  h = undefined;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function harness(extra: Parameters<typeof startHarness>[0]["ports"] = {}): Promise<Harness> {
  dir = mkdtempSync(join(tmpdir(), "egress-recording-"));
  store = await openStore({ file: join(dir, "events.db") });
  registry = new Registry();
  metrics = new EgressMetrics(registry);
  h = await startHarness({ dnsServer: "127.0.0.1:1", allowLists: LISTS, resolver, recorder: new StoreDecisionRecorder(store), ports: { metrics, ...extra } });
  h.routes.set("8.8.4.4", (echo.address() as AddressInfo).port);
  return h;
}

async function value(counter: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> }, labels: Record<string, string> = {}): Promise<number> {
  const found = (await counter.get()).values.find((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  return found?.value ?? 0;
}

/** Waits, bounded, until `cond` holds. */
async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 300 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 10));
}

/** Sends raw bytes and collects the answer until the proxy closes. */
function rawBytes(port: number, bytes: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = netConnect({ host: "127.0.0.1", port }, () => s.write(bytes));
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("error", () => s.destroy());
    s.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
  });
}

describe("a decision event", () => {
  it("records the addresses a forbidden-address refusal used, which one was refused and why", async () => {
    const p = await harness();
    const a = await rawRequest(p.port, connectHead("mixed.example.com:443", TOKENS.alpha));
    expect(a.status).toBe(502);
    expect((await store.read({ stream: "egress/alpha" })).map((e) => e.data)).toEqual([
      { plugin: "alpha", host: "mixed.example.com", port: 443, allowed: false, reason: "forbidden_address", rules: 1, addresses: ["8.8.4.4", "10.0.0.7"], refusedAddress: "10.0.0.7", addressRefusal: "forbidden_range" },
    ]);
    expect(p.dials).toEqual([]);
  });

  it("is stored as version 3 and reads a version-1 row as it was, made by the first rules", async () => {
    const p = await harness();
    (await rawRequest(p.port, connectHead("api.example.com:443", TOKENS.alpha))).socket.destroy();
    expect((await store.read({ stream: "egress/alpha" })).map((e) => e.schemaVersion)).toEqual([3]);
    const v1 = { plugin: "alpha", host: "api.example.com", port: 443, allowed: true, reason: "listed", address: "8.8.4.4" };
    const def = store.registry.get("egress.decision");
    expect(def?.upcast(1, v1)).toEqual({ ...v1, rules: 1 });
    expect(def?.validate(def.upcast(1, v1))).toBeNull();
  });
});

describe("requests Node's HTTP parser rejects", () => {
  it.each([
    ["a non-ASCII target", Buffer.from("CONNECT ap\u00e9.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n", "utf8"), "invalid_target"],
    ["a lower-case connect", Buffer.from("connect api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n"), "invalid_method"],
    ["a header overflow", Buffer.from(`CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\nX-Pad: ${"a".repeat(20_000)}\r\n\r\n`), "header_overflow"],
    ["a GET without Host", Buffer.from("GET /healthcheck HTTP/1.1\r\n\r\n"), "missing_host"],
  ])("answers %s with 400, one log line and one count", async (_what, bytes, kind) => {
    const p = await harness();
    const answer = await rawBytes(p.port, bytes);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    await until(() => p.logs.some((l) => l.includes("rejected by the HTTP parser")));
    const lines = p.logs.filter((l) => l.includes("rejected by the HTTP parser")).map((l) => JSON.parse(l) as { kind: string });
    expect(lines.map((l) => l.kind)).toEqual([kind]);
    expect(await value(metrics.parserRejections, { kind })).toBe(1);
  });
});

describe("refusals before identity", () => {
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  it.each([
    ["no token", connectHead("api.example.com:443", null), "no_token"],
    ["a Bearer header", connectHead("api.example.com:443", null, [`Proxy-Authorization: Bearer ${TOKENS.alpha}`]), "bad_proxy_auth_scheme"],
    ["an unknown token", connectHead("api.example.com:443", null, [`Proxy-Authorization: Basic ${b64("plugin:unknown")}`]), "token_refused"],
    ["an identity that is not a plugin", connectHead("api.example.com:443", TOKENS.notPlugin), "not_a_plugin"],
    ["a malformed target", connectHead("api.example.com", TOKENS.alpha), "malformed_target"],
  ])("records %s in egress/- and counts it by reason", async (_what, head, code) => {
    const p = await harness();
    const a = await rawRequest(p.port, head);
    expect(a.body.startsWith(`${code}:`)).toBe(true);
    await until(async () => (await store.read({ stream: "egress/-" })).length > 0);
    const recorded = (await store.read({ type: "egress.refused" })).map((e) => e.data);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ code, source: "127.0.0.1", dropped: 0 });
    expect(JSON.stringify(recorded)).not.toContain(TOKENS.alpha);
    expect(await value(metrics.decisions, { outcome: "refused", reason: code })).toBe(1);
    expect(await store.read({ stream: "egress/alpha" })).toEqual([]);
  });

  it("records a budget per code and source one by one, then one summary with the count and the first and last time", async () => {
    let now = 1_000_000;
    const p = await harness({ anonymousLimits: { perSource: 3, total: 100, windowMs: 60_000 }, clock: { now: () => now } });
    for (let i = 0; i < 10; i++) {
      now += 1000;
      await rawRequest(p.port, connectHead("api.example.com:443", null));
    }
    await until(async () => (await store.read({ stream: "egress/-" })).length >= 3);
    await new Promise((r) => setTimeout(r, 50));
    expect(await store.read({ stream: "egress/-" })).toHaveLength(3);
    expect(await value(metrics.anonymousDropped)).toBe(7);
    expect(await value(metrics.decisions, { outcome: "refused", reason: "no_token" })).toBe(10);
    now += 60_000;
    await rawRequest(p.port, connectHead("api.example.com:443", null));
    await until(async () => (await store.read({ stream: "egress/-" })).length >= 5);
    expect((await store.read({ type: "egress.refused" })).map((e) => e.data.dropped)).toEqual([0, 0, 0, 0]);
    expect((await store.read({ type: "egress.refusals" })).map((e) => e.data)).toEqual([
      { code: "no_token", source: "127.0.0.1", count: 7, first: new Date(1_004_000).toISOString(), last: new Date(1_010_000).toISOString() },
    ]);
  });

  it("records at close what the budget still counts", async () => {
    const p = await harness({ anonymousLimits: { perSource: 1, total: 100, windowMs: 3_600_000 } });
    for (let i = 0; i < 4; i++) await rawRequest(p.port, connectHead("api.example.com:443", null));
    await p.close();
    h = undefined;
    await until(async () => (await store.read({ type: "egress.refusals" })).length > 0);
    expect(await store.read({ type: "egress.refused" })).toHaveLength(1);
    expect((await store.read({ type: "egress.refusals" })).map((e) => e.data.count)).toEqual([3]);
  });
});

describe("the counters", () => {
  it("count outcomes, open tunnels, CONNECT latency and token-review cache hits", async () => {
    const fake = new FakeReviewer();
    const p = await harness({ reviewer: new CachingTokenReviewer(fake, { onLookup: (hit) => metrics.tokenLookup(hit) }) });
    const first = await rawRequest(p.port, connectHead("api.example.com:443", TOKENS.alpha));
    const second = await rawRequest(p.port, connectHead("api.example.com:443", TOKENS.alpha));
    expect([first.status, second.status]).toEqual([200, 200]);
    await rawRequest(p.port, connectHead("unknown.example.com:443", TOKENS.alpha));
    expect(await value(metrics.openTunnels)).toBe(2);
    expect(await value(metrics.decisions, { outcome: "allowed", reason: "listed" })).toBe(2);
    expect(await value(metrics.decisions, { outcome: "refused", reason: "not_listed" })).toBe(1);
    expect(await value(metrics.tokenCache, { result: "miss" })).toBe(1);
    expect(await value(metrics.tokenCache, { result: "hit" })).toBe(2);
    expect(fake.calls).toBe(1);
    const latency = (await metrics.connectSeconds.get()).values.filter((v) => v.metricName?.endsWith("_count"));
    expect(latency.reduce((n, v) => n + v.value, 0)).toBe(3);
    first.socket.destroy();
    second.socket.destroy();
    await until(async () => (await value(metrics.openTunnels)) === 0);
    expect(await value(metrics.openTunnels)).toBe(0);
    expect(await registry.metrics()).toContain("openfief_egress_decisions_total");
  });

  it("counts a name that does not resolve as failed, and a host not granted as refused, each with its reason", async () => {
    const p = await harness();
    const forbidden = await rawRequest(p.port, connectHead("mixed.example.com:443", TOKENS.alpha));
    h?.allowLists.setData({ alpha: `${LISTS.alpha}nowhere.example.com:443\n` });
    const missing = await rawRequest(p.port, connectHead("nowhere.example.com:443", TOKENS.alpha));
    const unlisted = await rawRequest(p.port, connectHead("unlisted.example.com:443", TOKENS.alpha));
    expect([forbidden.status, missing.status, unlisted.status]).toEqual([502, 502, 407]);
    expect(await value(metrics.decisions, { outcome: "refused", reason: "forbidden_address" })).toBe(1);
    expect(await value(metrics.decisions, { outcome: "failed", reason: "dns_nxdomain" })).toBe(1);
    expect(await value(metrics.decisions, { outcome: "refused", reason: "not_listed" })).toBe(1);
    // One series per reason, under its one outcome: a reason never moves between outcomes.
    const text = await registry.metrics();
    expect(text).toMatch(/openfief_egress_decisions_total\{outcome="failed",reason="dns_nxdomain"\} 1/);
    expect(text).not.toMatch(/outcome="refused",reason="dns_nxdomain"/);
    expect(text).toMatch(/openfief_egress_decisions_total\{outcome="failed",reason="connect_timeout"\} 0/);
    const latency = (await metrics.connectSeconds.get()).values.filter((v) => v.metricName?.endsWith("_count"));
    expect(latency.filter((v) => v.labels.outcome === "failed").reduce((n, v) => n + v.value, 0)).toBe(1);
    expect(latency.filter((v) => v.labels.outcome === "refused").reduce((n, v) => n + v.value, 0)).toBe(2);
  });

  it("serves the registry at /metrics on the proxy's own port when asked to", async () => {
    const p = await harness();
    await h?.close();
    h = await startHarness({ dnsServer: "127.0.0.1:1", allowLists: LISTS, resolver, recorder: new StoreDecisionRecorder(store), ports: { metrics, metricsRegistry: registry } });
    const a = await rawBytes(h.port, Buffer.from("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    expect(a).toMatch(/^HTTP\/1\.1 200 /);
    expect(a).toContain("openfief_egress_open_tunnels");
    expect(p.port).not.toBe(h.port);
  });
});
