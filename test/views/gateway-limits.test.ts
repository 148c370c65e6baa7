/**
 * No signed-in caller can flood or exhaust the gateway (through real HTTP on 127.0.0.1, embedded
 * mode): a rate per user and per installation (429 with `Retry-After`, counted); refusals recorded
 * one by one up to a budget, then one summary with the count and the first and last time, caller
 * fields capped with a digest of the whole, allowed decisions never summarised; caps on open
 * watches (429, counted, a gauge); and a watch that ends when its token expires.
 */
import { afterEach, beforeAll, afterAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { gatewayStream, textDigest } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import { describeEvent, explain } from "../../src/app/index.js";
import { checkDecisions } from "../../src/projections/index.js";
import { EmbeddedUpstream, LogInstallations, StoreDecisionRecorder, ViewMetrics, createGateway, rbacViewAccess, signPluginToken } from "../../src/views/index.js";
import type { Gateway, GatewayLimitsInput, PluginTokenClaims } from "../../src/views/index.js";
import { PLUGIN, PLUGIN_PROXY, ROLES, call, capturedLogger, installView, serve, stream, tempStore, tokens } from "./support.js";
import { withFile } from "../support/sqlite-file.js";

let store: EventLog;
let cleanup: () => Promise<void>;
let t: Awaited<ReturnType<typeof tokens>>;
let claims: PluginTokenClaims;
let open: Array<{ gateway: Gateway; close: () => Promise<void> }> = [];

beforeAll(async () => {
  ({ store, cleanup } = await tempStore());
  t = await tokens();
  await installView(store);
  const inst = await new LogInstallations(store).byName(PLUGIN);
  if (inst === null) throw new Error("no installation");
  claims = { sub: "alice", installation_id: inst.id, cluster_id: "embedded", plugin_name: inst.pluginName, plugin_version: inst.pluginVersion, definition_hash: inst.definitionHash, installation_name: PLUGIN };
});

afterEach(async () => {
  for (const g of open) await g.close();
  open = [];
});

afterAll(async () => {
  await cleanup();
});

/** A gateway with these limits, its counters and its log lines. */
async function gateway(limits: GatewayLimitsInput = {}) {
  const registry = new Registry();
  const log = capturedLogger();
  const g = createGateway({
    clusterId: "embedded", tokens: t.plugins, installations: new LogInstallations(store), access: rbacViewAccess(ROLES), upstream: new EmbeddedUpstream(store, ROLES),
    recorder: new StoreDecisionRecorder(store), pluginProxyOrigin: PLUGIN_PROXY, metrics: new ViewMetrics(registry), logger: log.logger, limits,
  });
  const s = await serve(() => {}, (server) => g.attach(server));
  open.push({ gateway: g, close: s.close });
  return { url: s.url, g, registry, log };
}

const auth = async (over: Partial<PluginTokenClaims> = {}, ttl?: number): Promise<Record<string, string>> => ({ authorization: `Bearer ${(await signPluginToken(t.signer, { ...claims, ...over }, ttl)).token}` });
const PLUGINS = "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins";
const EVENTS = "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/events";
const FAST = { rate: { perUser: { perSecond: 100_000, burst: 100_000 }, perInstallation: { perSecond: 100_000, burst: 100_000 } } };

/** What the log gained since `seq`: rows by type, and the bytes of their data. */
function growth(seq: number): { rows: Record<string, number>; bytes: number } {
  const r = withFile(store.location, (db) => db.prepare<[number], { type: string; n: number; bytes: number }>("SELECT type, count(*) AS n, sum(length(data)) AS bytes FROM events WHERE seq > ? GROUP BY type").all(seq));
  return { rows: Object.fromEntries(r.map((x) => [x.type, x.n])), bytes: r.reduce((s, x) => s + x.bytes, 0) };
}

async function metric(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = (m?.values ?? []).find((x) => Object.entries(labels).every(([k, want]) => x.labels[k] === want));
  return Number(v?.value ?? 0);
}

describe("the rate per user and per installation", () => {
  it("answers 429 with Retry-After past a user's burst, counts it, and records it at the rate gate", async () => {
    const { url, registry } = await gateway({ rate: { perUser: { perSecond: 1, burst: 3 } } });
    const h = await auth();
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 5; i++) {
      last = await call(url, "GET", `${PLUGINS}/${PLUGIN}`, h);
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(Number(last?.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(last?.json()).toMatchObject({ kind: "Status", code: 429, reason: "TooManyRequests" });
    expect(await metric(registry, "openfief_gateway_rate_limited_total", { scope: "user" })).toBe(2);
    const d = (await store.read({ stream: gatewayStream(PLUGIN), type: "gateway.decision" })).map((e) => e.data).find((x) => x.requestId === last?.headers["audit-id"]);
    expect(d).toMatchObject({ decision: "deny", gate: "rate", status: 429, reason: "rate_limited_user" });
  });

  it("limits an installation across its users", async () => {
    const { url, registry } = await gateway({ rate: { perInstallation: { perSecond: 1, burst: 2 } } });
    const statuses = [];
    for (const sub of ["alice", "alice", "carol-less"]) statuses.push((await call(url, "GET", `${PLUGINS}/${PLUGIN}`, await auth({ sub }))).status);
    expect(statuses[2]).toBe(429);
    expect(await metric(registry, "openfief_gateway_rate_limited_total", { scope: "installation" })).toBe(1);
  });
});

describe("the refusal budget", () => {
  it("records 2,000 refusals with long paths as a budget of capped events and one summary, without losing the count", async () => {
    const { url, g, registry, log } = await gateway({ ...FAST, refusals: { perSource: 10, total: 200, windowMs: 3_600_000 } });
    const h = await auth();
    const before = await store.head();
    const long = `${EVENTS}/${"x".repeat(3500)}`;
    const ids: string[] = [];
    for (let i = 0; i < 2000; i++) ids.push(String((await call(url, "GET", `${long}${i}`, h)).headers["audit-id"]));
    await g.close();
    const grown = growth(before);
    expect(grown.rows).toEqual({ "gateway.decision": 10, "gateway.refusals": 1 });
    // Today's main wrote 2,000 events of ~9 KB each for this (18 MB); the budget keeps it to a few KB.
    expect(grown.bytes).toBeLessThan(20_000);
    const decisions = (await store.read({ stream: gatewayStream(PLUGIN), afterSeq: before, type: "gateway.decision" })).map((e) => e.data);
    expect(decisions[0]?.path.length).toBe(256);
    expect(decisions[0]?.digests?.path).toBe(textDigest(`/apis/openfief.io/v1alpha1/namespaces/openfief/events/${"x".repeat(3500)}0`));
    expect(decisions[0]?.digests?.["attributes.name"]).toMatch(/^sha256:/);
    const [summary] = await store.read({ stream: gatewayStream(PLUGIN), afterSeq: before, type: "gateway.refusals" });
    expect(summary?.data).toMatchObject({ user: "alice", installationName: PLUGIN, route: "kube", gate: "plugin", status: 403, reason: "no_rule", count: 1990, firstRequestId: ids[10], lastRequestId: ids[1999] });
    expect(Date.parse(summary?.data.first ?? "") <= Date.parse(summary?.data.last ?? "")).toBe(true);
    expect(await metric(registry, "openfief_gateway_refusals_summarised_total")).toBe(1990);
    // Every request still has its access line, tied to its decision or its summary by its id.
    const lines = log.lines().filter((l) => l["msg"] === "gateway: request");
    expect(lines).toHaveLength(2000);
    expect(lines.filter((l) => l["summarised"] === true)).toHaveLength(1990);
    expect(lines[0]?.["requestId"]).toBe(decisions[0]?.requestId);
  });

  it("records the summary when the window ends, without waiting for a further refusal", async () => {
    const { url, g } = await gateway({ ...FAST, refusals: { perSource: 1, windowMs: 1000 } });
    const h = await auth();
    const before = await store.head();
    for (let i = 0; i < 4; i++) await call(url, "GET", EVENTS, h);
    for (let i = 0; i < 100 && growth(before).rows["gateway.refusals"] === undefined; i++) await new Promise((r) => setTimeout(r, 100));
    expect(growth(before).rows).toEqual({ "gateway.decision": 1, "gateway.refusals": 1 });
    expect((await store.last(gatewayStream(PLUGIN), "gateway.refusals"))?.data.count).toBe(3);
    await g.close();
  });

  it("never summarises an allowed request", async () => {
    const { url, g } = await gateway({ ...FAST, refusals: { perSource: 1, total: 1 } });
    const h = await auth();
    const before = await store.head();
    for (let i = 0; i < 50; i++) expect((await call(url, "GET", `${PLUGINS}/${PLUGIN}`, h)).status).toBe(200);
    await g.close();
    expect(growth(before).rows).toEqual({ "gateway.decision": 50 });
  });

  it("reads in words in why and in the log", async () => {
    const { url, g } = await gateway({ ...FAST, refusals: { perSource: 1, windowMs: 3_600_000 } });
    const h = await auth();
    for (let i = 0; i < 3; i++) await call(url, "GET", EVENTS, h);
    await g.close();
    const summary = await store.last(gatewayStream(PLUGIN), "gateway.refusals");
    if (summary === null) throw new Error("no summary");
    // Two refusals in the same millisecond read "at" that instant rather than "between" two.
    const when = summary.data.first === summary.data.last ? "at \\S+" : "between .+ and .+";
    expect(describeEvent(summary)).toMatch(new RegExp(`^the gateway refused 2 more requests of alice's through ledger-view at plugin \\(403, no_rule\\) ${when}, counted rather than recorded one by one$`));
    const why = await explain(store, PLUGIN);
    expect(why.sentences.join("\n")).toContain("counted in summaries rather than one by one");
    expect(why.sentences.join("\n")).toMatch(/2 more requests denied at plugin \(403, no_rule\)/);
    expect(why.gateway?.summary.denied).toBeGreaterThanOrEqual(3);
    // Summaries are records, not decisions to re-decide: check-decisions reads past them (this
    // store's hand-made rollout decisions are all it reports on).
    const checked = await checkDecisions(store);
    expect(checked.divergences.every((d) => d.field === "inputs" || d.field === "plan")).toBe(true);
    expect(checked.divergences.some((d) => d.seq === summary.seq)).toBe(false);
  });
});

describe("open watches", () => {
  it("are capped per user, refused 429 past the cap, counted, shown in a gauge, and freed when a watch ends", async () => {
    const { url, registry, g } = await gateway({ ...FAST, watches: { perUser: 2 } });
    const h = await auth();
    const a = stream(url, `${PLUGINS}?watch=1`, h);
    const b = stream(url, `${PLUGINS}?watch=1`, h);
    expect([await a.status, await b.status]).toEqual([200, 200]);
    expect(g.openWatches).toBe(2);
    expect(await metric(registry, "openfief_gateway_open_watches", { kind: "watch" })).toBe(2);
    const third = await call(url, "GET", `${PLUGINS}?watch=1`, h);
    expect(third.status).toBe(429);
    expect(third.headers["retry-after"]).toBe("5");
    expect(await metric(registry, "openfief_gateway_watches_refused_total", { scope: "user" })).toBe(1);
    a.close();
    for (let i = 0; i < 100 && g.openWatches > 1; i++) await new Promise((r) => setTimeout(r, 20));
    expect(g.openWatches).toBe(1);
    const fourth = stream(url, `${PLUGINS}?watch=1`, h);
    expect(await fourth.status).toBe(200);
    b.close();
    fourth.close();
  });

  it("are capped in all, below any one user's cap", async () => {
    const { url, registry } = await gateway({ ...FAST, watches: { total: 1 } });
    const a = stream(url, `${PLUGINS}?watch=1`, await auth());
    expect(await a.status).toBe(200);
    expect((await call(url, "GET", `${PLUGINS}?watch=1`, await auth())).status).toBe(429);
    expect(await metric(registry, "openfief_gateway_watches_refused_total", { scope: "total" })).toBe(1);
    a.close();
  });

  it("end when their token expires, freeing their slot", async () => {
    const { url, registry, g } = await gateway(FAST);
    // Asked for an hour; the answer ends (and `call` returns) when the two-second token expires.
    const w = await call(url, "GET", `${PLUGINS}?watch=1&timeoutSeconds=3600`, await auth({}, 2));
    expect(w.status).toBe(200);
    expect(w.body).toContain('"type":"ADDED"');
    expect(await metric(registry, "openfief_gateway_watches_ended_total", { why: "token_expired" })).toBe(1);
    for (let i = 0; i < 100 && g.openWatches > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(g.openWatches).toBe(0);
  });
});
