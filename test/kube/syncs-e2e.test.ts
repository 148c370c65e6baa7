/**
 * The core's syncs in a cluster, end to end on 127.0.0.1 (docs/adr/0198, 0199): two real operator
 * replicas (`runOperator`, the real client-node) against the fake API server, on one real
 * PostgreSQL log; the real cluster plugin host runs the signed demo's WebAssembly `ecb-fx`, whose
 * HTTP goes through a real egress proxy to a local stand-in of the ECB; the demo's container
 * connector `nbp-fx` is served by the SDK's own server with the SDK's verifier. The fake API
 * server signs TokenRequest tokens with a key published as the cluster's JWKS, as a cluster does.
 *
 * The leader calls both connectors with a token of the core's ServiceAccount for exactly the
 * instance; each delivery is kept beside the log; a batch the first leader left retrying is
 * finished by its successor under the same ID, and delivered once; tokens of another audience or
 * another subject are refused before any plugin code runs.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT } from "jose";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { logDeliveries } from "../../src/app/index.js";
import { clusterReconcilerFactoryWith, startClusterPluginHost, type ClusterPluginHost } from "../../src/compose/index.js";
import { openPostgresLog, type EventLog, type EventOf } from "../../src/events/index.js";
import { proxyHttp } from "../../src/host/index.js";
import { runOperator } from "../../src/kube/operator.js";
import { NAMESPACE } from "../../src/plugins/index.js";
import { JwksVerifier, serveConnector, type ConnectorServer } from "../../sdk/src/index.js";
import { startDnsServer, type TestDnsServer } from "../egress/support/dns-server.js";
import { startHarness, type Harness } from "../egress/support/harness.js";
import { makeCert } from "../egress/support/tls.js";
import { startLogDatabases, type LogDatabases } from "../events/postgres-support.js";
import { CORE_SUBJECT, ISSUER, jwksDir, makeKey, type TestKey } from "../sdk/support/keys.js";
import { spawnOpenfief } from "../e2e/support.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, operatorOptions, putTrustedSigners, setOperatorEnv, until } from "./operator-fixture.js";

const NS = NAMESPACE;
const DAILY_PATH = "/stats/eurofxref/eurofxref-daily.xml";
const TOKEN_A = "replica-a-token";
const TOKEN_B = "replica-b-token";
type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

let dbs: LogDatabases;
let url: string;
let log: EventLog;
let server: FakeApiServer;
let dns: TestDnsServer;
let origin: Server;
let ecbUp = false;
let proxy: Harness;
let key: TestKey;
let keysDir: string;
let dir: string;
let host: ClusterPluginHost;
let nbp: ConnectorServer;
const nbpCalls: { batchId: string; watermark: string }[] = [];
let restoreEnv: () => void = () => undefined;
let failure: unknown;
const replicas = new Map<string, { controller: AbortController; done: Promise<void> }>();

function startReplica(identity: string, token: string): void {
  const controller = new AbortController();
  const factory = clusterReconcilerFactoryWith({
    // The plugins' Services, as the cluster's DNS would route them: the plugin host, or nbp-fx's own pod.
    connectorUrl: (name) => `http://127.0.0.1:${name === "nbp-fx" ? nbp.port : host.port}`,
    backoff: { baseMs: 200, capMs: 800, maxAttempts: 50 },
    recheckMs: 300,
  });
  const done = runOperator({ ...operatorOptions(server, identity, token, join(dir, identity), controller.signal), leaseDurationSeconds: 2, renewDeadlineSeconds: 1.5 }, factory).catch((err: unknown) => {
    failure = err;
  });
  replicas.set(identity, { controller, done });
}

const wait = (what: string, predicate: () => boolean | Promise<boolean>): Promise<void> => until(what, predicate, () => failure);
const syncs = async (name: string): Promise<EventOf<"sync.started" | "sync.delivered" | "sync.failed">[]> =>
  (await log.read({ stream: `plugin/${name}`, type: ["sync.started", "sync.delivered", "sync.failed"] })) as EventOf<"sync.started" | "sync.delivered" | "sync.failed">[];
const coreTokenRequests = (client?: string) => server.requests.filter((r) => r.method === "POST" && r.path === `/api/v1/namespaces/${NS}/serviceaccounts/openfief-core/token` && (client === undefined || r.client === client));
const lease = (): string | undefined => (server.get("coordination.k8s.io/v1", "Lease", NS, "openfief-operator")?.["spec"] as { holderIdentity?: string } | undefined)?.holderIdentity;

beforeAll(async () => {
  dbs = await startLogDatabases();
  url = await dbs.fresh();
  log = await openPostgresLog({ url, migrate: false });
  dir = await mkdtemp(join(tmpdir(), "openfief-syncs-e2e-"));
  key = await makeKey("ES256", "cluster-key");
  keysDir = await jwksDir([key]);

  server = await FakeApiServer.start();
  // Tokens as the cluster signs them: its issuer, the ServiceAccount as subject, the audiences asked for.
  server.tokenSigner = ({ subject, audiences, expiresAt }) => new SignJWT({ aud: [...audiences] })
    .setProtectedHeader({ alg: key.alg, kid: key.kid }).setIssuer(ISSUER).setSubject(subject)
    .setIssuedAt().setExpirationTime(Math.floor(expiresAt / 1000)).sign(key.privateKey);
  server.put({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "openfief-core", namespace: NS } });
  await putTrustedSigners(server);

  // The ECB's stand-in, answering 503 until the test lets it up.
  const daily = await readFile(join(EXAMPLES, "../plugins/ecb-fx/fixtures/eurofxref-daily.xml"), "utf8");
  dns = await startDnsServer({ "www.ecb.europa.eu": { kind: "answer", addresses: ["8.8.4.4"], ttl: 30 } });
  const cert = makeCert(["www.ecb.europa.eu"]);
  origin = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    if (!ecbUp) return void res.writeHead(503).end();
    if (req.url === DAILY_PATH) return void res.writeHead(200, { "content-type": "application/xml" }).end(daily);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => origin.listen(0, "127.0.0.1", () => r()));
  proxy = await startHarness({
    dnsServer: dns.server,
    allowLists: { "ecb-fx": "www.ecb.europa.eu:443\n" },
    ports: {
      reviewer: {
        review: (token: string) => {
          const who = server.issuedTokens.get(token);
          return who === undefined ? { ok: false, code: "token_refused" } : { ok: true, username: who.user };
        },
      },
    },
  });
  proxy.routes.set("8.8.4.4", (origin.address() as AddressInfo).port);

  // The plugin host, on the same log, as the postgres overlay runs it.
  host = await startClusterPluginHost({
    kc: server.kubeConfig("plugin-host-token"),
    dataDir: join(dir, "host"),
    store: { kind: "postgres", url, shown: "postgres://test" },
    listen: { host: "127.0.0.1", port: 0 },
    health: { host: "127.0.0.1", port: 0 },
    egressProxy: `http://127.0.0.1:${proxy.port}`,
    jwksDir: keysDir,
    coreSubject: CORE_SUBJECT,
    logger: pino({ level: "silent" }),
    ociLayouts: [join(EXAMPLES, "oci")],
    restartDelayMs: 50,
    http: proxyHttp({ proxyUrl: `http://127.0.0.1:${proxy.port}`, ca: cert.cert }),
  });

  // nbp-fx, a container connector: the SDK's server and verifier, as its pod runs them.
  nbp = await serveConnector({
    sync(request) {
      nbpCalls.push({ batchId: request.batchId, watermark: request.watermark });
      return Promise.resolve({
        institution: { id: "nbp", name: "Narodowy Bank Polski" }, watermark: "2026-12-01",
        fxRates: [{ date: "2026-12-01", baseCurrency: "PLN", quoteCurrency: "EUR", rate: "0.2351", source: "nbp-table-a" }],
      });
    },
  }, { port: 0, host: "127.0.0.1", verifier: new JwksVerifier({ jwksDir: keysDir, instance: "nbp-fx", coreSubject: CORE_SUBJECT }) });

  restoreEnv = setOperatorEnv();
  process.env["OPENFIEF_STORE"] = url;
  startReplica("replica-a", TOKEN_A);
  await wait("replica-a leads", () => lease() === "replica-a");
  startReplica("replica-b", TOKEN_B);
  for (const file of ["plugins/ecb-fx.yaml", "plugins/ecb-fx-grant.yaml", "plugins/nbp-fx.yaml", "plugins/nbp-fx-grant.yaml"]) {
    server.put(parseYaml(await readFile(join(EXAMPLES, file), "utf8")) as Obj);
  }
}, 120_000);

afterAll(async () => {
  for (const r of replicas.values()) r.controller.abort();
  await Promise.allSettled([...replicas.values()].map((r) => r.done));
  delete process.env["OPENFIEF_STORE"];
  restoreEnv();
  await host?.close();
  await nbp?.close();
  await proxy?.close();
  await new Promise<void>((r) => (origin === undefined ? r() : origin.close(() => r())));
  await dns?.close();
  await server?.close();
  await log?.close();
  await dbs?.stop();
  for (const d of [dir, keysDir]) if (d !== undefined) await rm(d, { recursive: true, force: true });
}, 60_000);

describe("the operator's leader plays the core for connectors", () => {
  let batch = "";

  it("calls the WebAssembly connector through the plugin host; a failed batch is recorded for a retry", { timeout: 30_000 }, async () => {
    // Until the plugin host has followed the ConfigMap the call finds no plugin there (retried too).
    const failedWith = async (code: string) => (await syncs("ecb-fx")).find((e) => e.type === "sync.failed" && e.data.code === code) as EventOf<"sync.failed"> | undefined;
    await wait("ecb-fx's sync failed while the ECB is down", async () => (await failedWith("http_failed")) !== undefined);
    const failed = await failedWith("http_failed");
    expect(failed?.data).toMatchObject({ name: "ecb-fx", status: "unavailable", retryAt: expect.any(String) });
    batch = failed?.data.batchId ?? "";
    // Every attempt so far was of that one batch.
    expect(new Set((await syncs("ecb-fx")).map((e) => e.data.batchId))).toEqual(new Set([batch]));
  });

  it("asks a TokenRequest of the core's ServiceAccount whose one audience names the instance", () => {
    const bodies = coreTokenRequests(TOKEN_A).map((r) => (r.body as { spec?: unknown }).spec);
    expect(bodies).toContainEqual({ audiences: ["openfief-plugin:ecb-fx"], expirationSeconds: 600 });
    expect(coreTokenRequests(TOKEN_B)).toEqual([]);
  });

  it("calls the container connector over Connect, the SDK's verifier accepting the token, and keeps its delivery beside the log", { timeout: 30_000 }, async () => {
    await wait("nbp-fx delivered", async () => (await syncs("nbp-fx")).some((e) => e.type === "sync.delivered"));
    const delivered = (await syncs("nbp-fx")).find((e) => e.type === "sync.delivered") as EventOf<"sync.delivered">;
    expect(nbpCalls).toEqual([{ batchId: delivered.data.batchId, watermark: "" }]);
    expect(coreTokenRequests(TOKEN_A).map((r) => (r.body as { spec?: unknown }).spec)).toContainEqual({ audiences: ["openfief-plugin:nbp-fx"], expirationSeconds: 600 });
    const kept = await logDeliveries(log).get(delivered.data.batchId);
    expect(kept).toMatchObject({ plugin: "nbp-fx", kind: "sync", digest: delivered.data.digest, watermark: "2026-12-01", counts: { fxRates: 1 } });
  });

  it("hands a batch left retrying to the standby when the leader goes: the same batch ID, delivered once", { timeout: 45_000 }, async () => {
    const a = replicas.get("replica-a");
    a?.controller.abort();
    await a?.done;
    await wait("replica-b leads", () => lease() === "replica-b");
    ecbUp = true;
    await wait("ecb-fx delivered", async () => (await syncs("ecb-fx")).some((e) => e.type === "sync.delivered"));
    const events = await syncs("ecb-fx");
    expect(new Set(events.map((e) => e.data.batchId))).toEqual(new Set([batch]));
    const delivered = events.filter((e) => e.type === "sync.delivered") as EventOf<"sync.delivered">[];
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.data).toMatchObject({ batchId: batch, fresh: true });
    expect(delivered[0]?.data.attempt).toBeGreaterThan(1);
    // The successor asked for its own tokens.
    expect(coreTokenRequests(TOKEN_B).length).toBeGreaterThan(0);
    // Its schedule says a day: looking again (every 300 ms) calls nothing more.
    const calls = events.filter((e) => e.type === "sync.started").length;
    const nbpBefore = nbpCalls.length;
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await syncs("ecb-fx")).filter((e) => e.type === "sync.started")).toHaveLength(calls);
    expect(nbpCalls).toHaveLength(nbpBefore);
  });

  it("keeps the ECB's rates beside the log, every transaction's source and the digest as recorded", async () => {
    const kept = await logDeliveries(log).get(batch);
    const delivered = (await syncs("ecb-fx")).find((e) => e.type === "sync.delivered") as EventOf<"sync.delivered">;
    expect(kept?.digest).toBe(delivered.data.digest);
    expect(kept?.counts.fxRates).toBeGreaterThan(0);
    expect((await logDeliveries(log).list("ecb-fx")).map((r) => r.batchId)).toEqual([batch]);
  });

  it("lists the cluster's deliveries with the CLI from the compiled bundle (--store postgres://), and prints one as JSON", { timeout: 240_000 }, async () => {
    const listed = await spawnOpenfief(["deliveries", "--store", url, "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    const body = JSON.parse(listed.stdout) as { deliveries: { batchId: string; plugin: string; kind: string }[]; connectors: { name: string; nextAt: string | null; retrying: boolean }[] };
    expect(body.deliveries.map((d) => [d.plugin, d.kind]).sort()).toEqual([["ecb-fx", "sync"], ["nbp-fx", "sync"]]);
    expect(body.connectors.map((c) => [c.name, c.retrying])).toEqual([["ecb-fx", false], ["nbp-fx", false]]);
    const table = await spawnOpenfief(["deliveries", "ecb-fx", "--store", url]);
    expect(table.stdout).toMatch(new RegExp(`^${batch}\\s+ecb-fx\\s+sync\\s+\\S+\\s+\\d+ FX rates\\s+sha256:`, "m"));
    expect(table.stdout).toMatch(/^ecb-fx: every 24h, jitter 30m; next sync at \S+$/m);
    const got = await spawnOpenfief(["deliveries", "get", batch, "--store", url]);
    expect(got.code, got.stderr).toBe(0);
    expect((JSON.parse(got.stdout) as { delivery: { batchId: string } }).delivery.batchId).toBe(batch);
  });

  it.each([
    ["the core's token for the egress proxy's audience", "openfief-core", "openfief-egress"],
    ["the core's token for another instance", "openfief-core", "openfief-plugin:nbp-fx"],
    ["the plugin's own token for its instance's audience", "plugin-ecb-fx", "openfief-plugin:ecb-fx"],
  ])("the plugin host refuses %s before any plugin code runs", async (_what, account, audience) => {
    const issued = await fetch(`${server.url}/api/v1/namespaces/${NS}/serviceaccounts/${account}/token`, {
      method: "POST", headers: { "content-type": "application/json", authorization: "Bearer test" },
      body: JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { audiences: [audience], expirationSeconds: 600 } }),
    });
    const token = ((await issued.json()) as { status: { token: string } }).status.token;
    const calls = (await log.read({ stream: "plugin/ecb-fx", type: "plugin.call" })).length;
    const res = await fetch(`http://127.0.0.1:${host.port}/openfief.connector.v1.ConnectorService/Sync`, {
      method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify({ batchId: "b-refused" }),
    });
    await res.arrayBuffer();
    // Another instance: that instance is not run here (403); anything else: not the core's token for it (401).
    expect(res.status).toBe(audience === "openfief-plugin:nbp-fx" ? 403 : 401);
    expect((await log.read({ stream: "plugin/ecb-fx", type: "plugin.call" })).length).toBe(calls);
  });

  it("the container connector's SDK refuses the core's token for another instance", async () => {
    const issued = await fetch(`${server.url}/api/v1/namespaces/${NS}/serviceaccounts/openfief-core/token`, {
      method: "POST", headers: { "content-type": "application/json", authorization: "Bearer test" },
      body: JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { audiences: ["openfief-plugin:ecb-fx"], expirationSeconds: 600 } }),
    });
    const token = ((await issued.json()) as { status: { token: string } }).status.token;
    const before = nbpCalls.length;
    const res = await fetch(`http://127.0.0.1:${nbp.port}/openfief.connector.v1.ConnectorService/Sync`, {
      method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify({ batchId: "b-refused" }),
    });
    await res.arrayBuffer();
    expect(res.status).toBe(401);
    expect(nbpCalls).toHaveLength(before);
  });
});
