/**
 * The core API for plugins (docs/adr/0196, 0197) over a real SQLite log, a real data folder's
 * embedded key and deliveries, and real HTTP on 127.0.0.1, called with the SDK's core client:
 * every refusal, table-driven, answered with its status and stable code and recorded as an event
 * that never holds the token; a flood of one refusal costs a few events and one summary; the caps
 * (query, body, method, target, deadline) answer before any token is looked at; and, for a cluster,
 * the same API with TokenReview through the real Kubernetes client against a fake API server.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importJWK, SignJWT, type JWK } from "jose";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createCoreClient } from "../../sdk/src/index.js";
import { bearer, checkDelivery, CoreApi, dataDirDeliveries, pluginTimeline, tokenShapeProblem, jwksPluginVerifier, reviewerPluginVerifier } from "../../src/app/index.js";
import type { CoreApiLimits, DeliveryStore, PluginTokenVerifier } from "../../src/app/index.js";
import { coreCallCounter, embeddedPluginVerifier, startClusterCoreApi } from "../../src/compose/core-api.js";
import { EMBEDDED_ISSUER, ensureEmbeddedKey, KubeTokenReviewer, mintEgressToken } from "../../src/egress/index.js";
import { openStore, pluginStream } from "../../src/events/index.js";
import type { EventLog, KnownEvent } from "../../src/events/index.js";
import { CORE_AUDIENCE } from "../../src/plugins/index.js";
import { serveCoreApi } from "../../src/server/index.js";
import type { CoreListener } from "../../src/server/index.js";
import { FakeApiServer } from "../kube/fake-apiserver.js";
import { makeKey, mint } from "../sdk/support/keys.js";

const silent = pino({ level: "silent" });
let dir: string;
let store: EventLog;
let deliveries: DeliveryStore;
let privateJwk: JWK;

const PENDING_NONE = { capabilities: [], egress: [], secrets: [], dataTiers: [] };
const image = (name: string): string => `registry.example/${name}@sha256:${"a".repeat(64)}`;

/** A Plugin applied and decided: running with `capabilities`, or (null) running nothing. */
async function install(name: string, capabilities: string[] | null): Promise<void> {
  const stream = pluginStream(name);
  await store.append([{ stream, type: "plugin.observed", actor: "owner:cli", data: { name, spec: { image: image(name) } } }]);
  const run = capabilities === null ? null : { image: image(name), manifest: {}, permissions: { capabilities, egress: [], secrets: [], dataTiers: [] } };
  await store.append([{
    stream, type: "rollout.decided", actor: "reconciler",
    data: { name, rules: 1, inputs: { current: null, currentDeployable: true, previous: null, grant: {} }, plan: { outcome: run === null ? "none" : "current", run, pending: PENDING_NONE, reasons: [] } },
  }]);
}

/** Signs a token with the data folder's own key, with the claims given (the embedded issuer's unless told). */
async function signed(claims: { sub: string; aud: string; iss?: string; exp?: number }): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", ...(privateJwk.kid === undefined ? {} : { kid: privateJwk.kid }) })
    .setSubject(claims.sub).setAudience(claims.aud).setIssuer(claims.iss ?? EMBEDDED_ISSUER).setIssuedAt(now).setExpirationTime(claims.exp ?? now + 600)
    .sign(await importJWK(privateJwk, "ES256"));
}

const coreToken = async (plugin: string): Promise<string> => (await mintEgressToken(dir, plugin, { audience: CORE_AUDIENCE })).token;

async function refusals(): Promise<KnownEvent[]> {
  return store.read({ type: ["core.refused", "core.refusals"] });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "core-api-"));
  store = await openStore({ file: join(dir, "log.db") });
  deliveries = dataDirDeliveries(dir);
  ({ privateJwk } = await ensureEmbeddedKey(dir));
  await install("ecb-fx", ["connector"]);
  await install("ledger-view", ["view"]);
  await install("waiting", null);
  await install("gone", ["connector"]);
  await store.append([{ stream: pluginStream("gone"), type: "plugin.deleted", actor: "owner:cli", data: { name: "gone" } }]);
  // One delivery of ecb-fx, kept and recorded as the scheduler does.
  const checked = checkDelivery("ecb-fx", "batch-1", { batchId: "batch-1", watermark: "2026-12-01", fxRates: [{ date: "2026-12-01", baseCurrency: "EUR", quoteCurrency: "USD", rate: "1.0512", source: "ecb" }] });
  if (!checked.ok) throw new Error(checked.problem.message);
  const { record } = await deliveries.record({ batchId: "batch-1", plugin: "ecb-fx", kind: "sync" }, checked.value, new Date());
  await store.append([{ stream: pluginStream("ecb-fx"), type: "sync.delivered", actor: "scheduler", data: { name: "ecb-fx", batchId: "batch-1", attempt: 1, digest: record.digest, counts: record.counts, fresh: true } }]);
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A core API on its own listener, closed after each test. */
let open: { api: CoreApi; listener: CoreListener }[] = [];
async function serve(o: { verifier?: PluginTokenVerifier; limits?: Partial<CoreApiLimits>; deadlineMs?: number; registry?: Registry } = {}): Promise<{ api: CoreApi; url: string }> {
  const api = new CoreApi({
    store, verifier: o.verifier ?? embeddedPluginVerifier(dir), deliveries, logger: silent, ...(o.limits === undefined ? {} : { limits: o.limits }),
    ...(o.registry === undefined ? {} : { onAnswer: coreCallCounter(o.registry) }),
  });
  const listener = await serveCoreApi(api, { host: "127.0.0.1", port: 0, ...(o.deadlineMs === undefined ? {} : { deadlineMs: o.deadlineMs }) });
  open.push({ api, listener });
  return { api, url: listener.url };
}

afterEach(async () => {
  for (const { api, listener } of open) {
    await listener.close();
    await api.close();
  }
  open = [];
});

describe("a running instance calls the core with its openfief-core token (the SDK's core client)", () => {
  it("whoami names the instance and its effective permissions; a connector reads its sync state and latest delivery", async () => {
    const { url } = await serve();
    const client = createCoreClient({ baseUrl: url, token: () => coreToken("ecb-fx") });
    try {
      const who = await client.fetch("/core/v1/whoami");
      expect(who.status).toBe(200);
      expect(await who.json()).toEqual({
        instance: "ecb-fx", serviceAccount: "system:serviceaccount:openfief:plugin-ecb-fx", image: image("ecb-fx"),
        permissions: { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [] },
      });
      const state = await client.fetch("/core/v1/connector/state");
      expect(state.status).toBe(200);
      expect(await state.json()).toMatchObject({
        instance: "ecb-fx", watermark: "2026-12-01",
        lastSync: { batchId: "batch-1", digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), counts: expect.objectContaining({ fxRates: 1 }) },
        lastFailure: null,
        latestDelivery: { batchId: "batch-1", kind: "sync", counts: expect.objectContaining({ fxRates: 1 }) },
      });
      // The SDK's typed calls: the same answers, and a refusal as an SdkError with the core's code.
      expect((await client.whoAmI()).permissions.capabilities).toEqual(["connector"]);
      expect((await client.connectorState()).watermark).toBe("2026-12-01");
      // A view may ask who it is (any running instance may), but not for a connector's state.
      const view = createCoreClient({ baseUrl: url, token: () => coreToken("ledger-view") });
      expect((await view.whoAmI()).instance).toBe("ledger-view");
      await expect(view.connectorState()).rejects.toMatchObject({ name: "SdkError", code: "core_refused", status: 403, refusal: "capability_not_held" });
      await view.close();
    } finally {
      await client.close();
    }
    expect((await refusals()).map((e) => (e.data as { code: string }).code)).toEqual(["capability_not_held"]);
  });
});

describe("every refusal is answered with a stable code and recorded, never with the token", () => {
  const other = makeKey("ES256", "not-published");
  const now = Math.floor(Date.now() / 1000);
  const cases: [string, string, () => Promise<string | undefined>, number, string, { plugin?: string; capability?: string }][] = [
    ["no token at all", "/core/v1/whoami", () => Promise.resolve(undefined), 401, "missing_token", {}],
    ["a token that is no JWT", "/core/v1/whoami", () => Promise.resolve("Bearer not-a-jwt"), 401, "malformed_token", {}],
    ["another scheme", "/core/v1/whoami", () => Promise.resolve("Basic cGx1Z2luOng="), 401, "malformed_token", {}],
    ["the instance's egress token (another audience)", "/core/v1/whoami", async () => `Bearer ${(await mintEgressToken(dir, "ecb-fx")).token}`, 401, "wrong_audience", {}],
    ["an expired core token", "/core/v1/whoami", async () => `Bearer ${(await mintEgressToken(dir, "ecb-fx", { audience: CORE_AUDIENCE, now: Date.now() - 7_200_000 })).token}`, 401, "token_expired", {}],
    ["another issuer", "/core/v1/whoami", async () => `Bearer ${await signed({ sub: "system:serviceaccount:openfief:plugin-ecb-fx", aud: CORE_AUDIENCE, iss: "https://elsewhere.example" })}`, 401, "wrong_issuer", {}],
    ["a key that is not published", "/core/v1/whoami", async () => `Bearer ${await mint(await other, { sub: "system:serviceaccount:openfief:plugin-ecb-fx", aud: CORE_AUDIENCE, iss: EMBEDDED_ISSUER, exp: now + 600 })}`, 401, "token_refused", {}],
    ["a subject that is not a plugin's", "/core/v1/whoami", async () => `Bearer ${await signed({ sub: "system:serviceaccount:openfief:openfief-core", aud: CORE_AUDIENCE })}`, 401, "not_a_plugin", {}],
    ["an instance the log never heard of", "/core/v1/whoami", async () => `Bearer ${await signed({ sub: "system:serviceaccount:openfief:plugin-ghost", aud: CORE_AUDIENCE })}`, 403, "unknown_instance", { plugin: "ghost" }],
    ["a removed instance", "/core/v1/whoami", async () => `Bearer ${await signed({ sub: "system:serviceaccount:openfief:plugin-gone", aud: CORE_AUDIENCE })}`, 403, "removed_instance", { plugin: "gone" }],
    ["an instance that runs nothing", "/core/v1/whoami", async () => `Bearer ${await coreToken("waiting")}`, 403, "not_running", { plugin: "waiting" }],
    ["a view asking for a connector's state", "/core/v1/connector/state", async () => `Bearer ${await coreToken("ledger-view")}`, 403, "capability_not_held", { plugin: "ledger-view", capability: "connector" }],
  ];

  it.each(cases)("%s", async (...c) => {
    const [, path, header, status, code, about] = c;
    const { url } = await serve();
    const before = await store.head();
    const authorization = await header();
    const r = await fetch(`${url}${path}`, { headers: authorization === undefined ? {} : { authorization } });
    expect(r.status).toBe(status);
    const body = (await r.json()) as { code: string; message: string };
    expect(body.code).toBe(code);
    if (status === 401) expect(r.headers.get("www-authenticate")).toBe('Bearer realm="openfief-core"');
    const recorded = (await refusals()).filter((e) => e.seq > before);
    expect(recorded).toHaveLength(1);
    const e = recorded[0];
    expect(e?.type).toBe("core.refused");
    expect(e?.stream).toBe(about.plugin === undefined ? "core/-" : `core/${about.plugin}`);
    expect(e?.actor).toBe("core");
    expect(e?.data).toEqual({ code, call: path.endsWith("whoami") ? "whoami" : "connector.state", source: "127.0.0.1", ...about });
    // Neither the answer nor the event holds the token, or any part of it.
    const token = authorization?.replace(/^\S+ /, "") ?? "";
    for (const part of token.split(".").filter((p) => p.length > 8)) {
      expect(JSON.stringify(body)).not.toContain(part);
      expect(JSON.stringify(e)).not.toContain(part);
    }
  });
});

describe("the owner sees an instance's refused calls in its timeline", () => {
  it("the plugin's page lists the core's refusals of its calls, worded", async () => {
    const { url } = await serve();
    const r = await fetch(`${url}/core/v1/connector/state`, { headers: { authorization: `Bearer ${await coreToken("ledger-view")}` } });
    expect(r.status).toBe(403);
    await r.arrayBuffer();
    const { entries } = await pluginTimeline(store, "ledger-view");
    expect(entries.filter((e) => e.event.type === "core.refused").at(-1)?.text)
      .toBe("the core refused ledger-view's call connector.state from 127.0.0.1 (capability_not_held: it does not hold connector)");
  });
});

describe("a flood of bad calls cannot flood the log", () => {
  it("records a few refusals of one code a window, then one summary with the count", async () => {
    const { api, url } = await serve();
    const before = await store.head();
    const egress = (await mintEgressToken(dir, "ecb-fx")).token;
    for (let i = 0; i < 40; i++) {
      const r = await fetch(`${url}/core/v1/whoami`, { headers: { authorization: `Bearer ${egress}` } });
      expect(r.status).toBe(401);
      await r.arrayBuffer();
    }
    await api.close();
    const recorded = (await refusals()).filter((e) => e.seq > before);
    expect(recorded.map((e) => e.type)).toEqual(["core.refused", "core.refused", "core.refused", "core.refusals"]);
    expect(recorded[3]?.data).toMatchObject({ code: "wrong_audience", call: "whoami", source: "127.0.0.1", count: 37 });
  });

  it("answers 429 past an address's rate, and records that within the same budget", async () => {
    const { url } = await serve({ limits: { perSource: { perSecond: 0.001, burst: 2 } } });
    const token = await coreToken("ecb-fx");
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await fetch(`${url}/core/v1/whoami`, { headers: { authorization: `Bearer ${token}` } });
      statuses.push(r.status);
      if (r.status === 429) expect(r.headers.get("retry-after")).toMatch(/^\d+$/);
      await r.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 429, 429]);
  });
});

describe("metrics", () => {
  it("counts the answers by call and code, never by instance or address", async () => {
    const registry = new Registry();
    const { url } = await serve({ registry });
    const ok = await fetch(`${url}/core/v1/whoami`, { headers: { authorization: `Bearer ${await coreToken("ecb-fx")}` } });
    await ok.arrayBuffer();
    const no = await fetch(`${url}/core/v1/connector/state`);
    await no.arrayBuffer();
    const text = await registry.metrics();
    expect(text).toContain('openfief_core_calls_total{call="whoami",code="ok"} 1');
    expect(text).toContain('openfief_core_calls_total{call="connector.state",code="missing_token"} 1');
    expect(text).not.toMatch(/ecb-fx|127\.0\.0\.1/);
  });
});

describe("caps before parsing, a deadline per call", () => {
  it.each<[string, string, RequestInit, number]>([
    ["a query", "/core/v1/whoami?x=1", {}, 400],
    ["a path the API does not have", "/core/v1/secrets", {}, 404],
    ["a write", "/core/v1/whoami", { method: "POST" }, 405],
    ["an overlong target", `/core/v1/${"a".repeat(2000)}`, {}, 414],
  ])("%s is refused before the token is looked at, and not recorded", async (_what, path, init, status) => {
    let asked = 0;
    const { url } = await serve({ verifier: { verify: () => { asked++; return Promise.resolve({ ok: false, code: "token_refused" }); } } });
    const before = await store.head();
    const r = await fetch(`${url}${path}`, { ...init, headers: { authorization: "Bearer a.b.c", ...(init.headers as Record<string, string> | undefined) } });
    expect(r.status).toBe(status);
    await r.arrayBuffer();
    expect(asked).toBe(0);
    expect((await refusals()).filter((e) => e.seq > before)).toEqual([]);
  });

  it("a body is refused by its headers, before a byte of it or the token is read", async () => {
    let asked = 0;
    const { url } = await serve({ verifier: { verify: () => { asked++; return Promise.resolve({ ok: false, code: "token_refused" }); } } });
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${url}/core/v1/whoami`, { method: "GET", headers: { authorization: "Bearer a.b.c", "content-type": "text/plain", "content-length": "5" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end("hello");
    });
    expect(status).toBe(413);
    expect(asked).toBe(0);
  });

  it("an oversized token is refused unread", async () => {
    let asked = 0;
    const { url } = await serve({ verifier: { verify: () => { asked++; return Promise.resolve({ ok: false, code: "token_refused" }); } } });
    const r = await fetch(`${url}/core/v1/whoami`, { headers: { authorization: `Bearer ${"a".repeat(5000)}.${"b".repeat(5000)}.c` } });
    expect(r.status).toBe(401);
    expect(((await r.json()) as { code: string }).code).toBe("malformed_token");
    expect(asked).toBe(0);
  });

  it("a verifier that never answers is cut at the deadline (503)", async () => {
    const { url } = await serve({ verifier: { verify: () => new Promise(() => undefined) }, deadlineMs: 200 });
    const started = Date.now();
    const r = await fetch(`${url}/core/v1/whoami`, { headers: { authorization: "Bearer a.b.c" } });
    expect(r.status).toBe(503);
    expect(r.headers.get("retry-after")).toBe("1");
    await r.arrayBuffer();
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe("reading the header", () => {
  it.each<[string | undefined, string | undefined, string | null]>([
    [undefined, undefined, "missing_token"],
    ["", undefined, "missing_token"],
    ["Bearer a.b.c", "a.b.c", null],
    ["bearer   a.b.c  ", "a.b.c", null],
    ["Bearer a.b.", "a.b.", null],
    ["Bearer a.b", "a.b", "malformed_token"],
    ["Bearer a.b.c.d", "a.b.c.d", "malformed_token"],
    ["Bearer a.b+.c", "a.b+.c", "malformed_token"],
    ["Bearer a.b.c extra", "\u0000", "malformed_token"],
    ["Basic dXNlcjpwYXNz", "\u0000", "malformed_token"],
    ["Bearer", "\u0000", "malformed_token"],
  ])("%j", (header, token, problem) => {
    expect(bearer(header)).toBe(token);
    expect(tokenShapeProblem(bearer(header))).toBe(problem);
  });
});

describe("the verifier adapters", () => {
  it("the JWKS adapter checks one audience: openfief-core", async () => {
    const key = await makeKey("ES256", "k1");
    const v = jwksPluginVerifier({ jwks: () => ({ keys: [key.publicJwk] }), issuer: "iss" });
    const sub = "system:serviceaccount:openfief:plugin-ecb-fx";
    expect(await v.verify(await mint(key, { iss: "iss", sub, aud: CORE_AUDIENCE }))).toEqual({ ok: true, username: sub });
    expect(await v.verify(await mint(key, { iss: "iss", sub, aud: [CORE_AUDIENCE, "openfief-egress"] }))).toEqual({ ok: true, username: sub });
    expect(await v.verify(await mint(key, { iss: "iss", sub, aud: "openfief-egress" }))).toEqual({ ok: false, code: "wrong_audience" });
    expect(await v.verify(await mint(key, { iss: "iss", sub, aud: CORE_AUDIENCE, exp: undefined }))).toEqual({ ok: false, code: "token_refused" });
    const broken = jwksPluginVerifier({ jwks: () => { throw new Error("unreadable"); }, issuer: "iss" });
    expect(await broken.verify(await mint(key, { iss: "iss", sub, aud: CORE_AUDIENCE }))).toEqual({ ok: false, code: "review_failed" });
  });

  it("the data folder's key set is read again once `openfief token` makes a key", async () => {
    const fresh = mkdtempSync(join(tmpdir(), "core-api-nokey-"));
    try {
      const v = embeddedPluginVerifier(fresh);
      // No key yet: nothing can pass.
      expect(await v.verify("a.b.c")).toEqual({ ok: false, code: "malformed_token" });
      const { token } = await mintEgressToken(fresh, "ecb-fx", { audience: CORE_AUDIENCE });
      expect(await v.verify(token)).toEqual({ ok: true, username: "system:serviceaccount:openfief:plugin-ecb-fx" });
      expect(readFileSync(join(fresh, "jwks.json"), "utf8")).not.toContain('"d"');
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it.each<[string, Record<string, unknown> | "throw" | "hang", string]>([
    ["authenticated for openfief-core", { authenticated: true, audiences: [CORE_AUDIENCE], user: { username: "system:serviceaccount:openfief:plugin-ecb-fx" } }, "ok"],
    ["not authenticated", { authenticated: false, error: "token expired" }, "token_refused"],
    ["authenticated for another audience", { authenticated: true, audiences: ["openfief-egress"], user: { username: "system:serviceaccount:openfief:plugin-ecb-fx" } }, "wrong_audience"],
    ["authenticated with no username", { authenticated: true, audiences: [CORE_AUDIENCE], user: {} }, "token_refused"],
    ["the API failing", "throw", "review_failed"],
    ["the API not answering", "hang", "review_timeout"],
  ])("the TokenReview adapter: %s", async (_what, status, code) => {
    const asked: string[][] = [];
    const api = {
      createTokenReview: (p: { body: { spec: { audiences: string[] } } }) => {
        asked.push(p.body.spec.audiences);
        if (status === "throw") return Promise.reject(new Error("boom"));
        if (status === "hang") return new Promise<never>(() => undefined);
        return Promise.resolve({ status });
      },
    };
    const v = reviewerPluginVerifier(new KubeTokenReviewer(api, CORE_AUDIENCE), 100);
    const r = await v.verify("a.b.c");
    expect(r.ok ? "ok" : r.code).toBe(code);
    expect(asked).toEqual([[CORE_AUDIENCE]]);
  });
});

describe("in a cluster: TokenReview through the Kubernetes client, the API on its own listener", () => {
  let fake: FakeApiServer;
  beforeAll(async () => {
    fake = await FakeApiServer.start();
    fake.tokenReviewer = (token, audiences) => {
      if (token === "aaaa.core-of-ecb-fx.bbbb" && audiences.includes(CORE_AUDIENCE)) return { authenticated: true, audiences: [CORE_AUDIENCE], user: { username: "system:serviceaccount:openfief:plugin-ecb-fx" } };
      if (token === "aaaa.core-of-ledger-view.bbbb" && audiences.includes(CORE_AUDIENCE)) return { authenticated: true, audiences: [CORE_AUDIENCE], user: { username: "system:serviceaccount:openfief:plugin-ledger-view" } };
      return { authenticated: false, error: "invalid bearer token" };
    };
  });
  afterAll(async () => {
    await fake.close();
  });

  it("answers the instance's calls and refuses what it may not", async () => {
    const core = await startClusterCoreApi({ kc: fake.kubeConfig(), store, deliveries, logger: silent, host: "127.0.0.1", port: 0 });
    try {
      const ecb = createCoreClient({ baseUrl: core.url, token: () => Promise.resolve("aaaa.core-of-ecb-fx.bbbb") });
      expect(((await (await ecb.fetch("/core/v1/connector/state")).json()) as { watermark: string }).watermark).toBe("2026-12-01");
      await ecb.close();
      const before = await store.head();
      const view = await fetch(`${core.url}/core/v1/connector/state`, { headers: { authorization: "Bearer aaaa.core-of-ledger-view.bbbb" } });
      expect(view.status).toBe(403);
      const forged = await fetch(`${core.url}/core/v1/whoami`, { headers: { authorization: "Bearer aaaa.forged.bbbb" } });
      expect(forged.status).toBe(401);
      expect((await refusals()).filter((e) => e.seq > before).map((e) => [e.stream, (e.data as { code: string }).code])).toEqual([
        ["core/ledger-view", "capability_not_held"], ["core/-", "token_refused"],
      ]);
      // Each review asked for openfief-core alone.
      const reviews = fake.requests.filter((r) => r.path.endsWith("/tokenreviews"));
      expect(reviews.length).toBeGreaterThan(0);
    } finally {
      await core.close();
    }
  });
});
