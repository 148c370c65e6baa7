/**
 * One audit trail for the cluster, on a real PostgreSQL: the reconciler's decisions, two egress
 * proxy replicas (each its writer thread, each recording as itself) and the cluster's plugin host
 * (behind the fake API server) all append to the same log. `why` on that log names an egress
 * decision of each proxy and the plugin host's failed call; the chain verifies. The plugin host
 * then starts again elsewhere — a new, empty folder, nothing of the old one — and runs its module
 * from the log, by digest, without installing it again.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyDemoFolder, demoSettings, explain, type StoreLocation } from "../../src/app/index.js";
import { openRuntime, startClusterPluginHost, type ClusterPluginHost } from "../../src/compose/index.js";
import { WorkerDecisionRecorder } from "../../src/egress/index.js";
import { openPostgresLog, type EventLog } from "../../src/events/index.js";
import { ConnectorService, SyncRequestSchema } from "../../src/gen/openfief/connector/v1/connector_pb.js";
import { proxyHttp } from "../../src/host/index.js";
import { encodeHostedPlugins, NAMESPACE, PLUGIN_HOST_CONFIGMAP } from "../../src/plugins/index.js";
import { startDnsServer, type TestDnsServer } from "../egress/support/dns-server.js";
import { startHarness, type Harness } from "../egress/support/harness.js";
import { makeCert } from "../egress/support/tls.js";
import { startLogDatabases, type LogDatabases } from "../events/postgres-support.js";
import { CORE_SUBJECT, jwksDir, makeKey, mint, type TestKey } from "../sdk/support/keys.js";
import { FakeApiServer } from "./fake-apiserver.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ECB_IMAGE = "localhost/openfief-demo/ecb-fx@sha256:bc5075adc604cc16c13be13e38549e2cb69b2da3e18ce9c023f6c9a312539300";
const ECB_MODULE = "37ca3117ba230ff39ccb7212faaef86a069771114f6048f3d7269f05127d2fe2";
const DAILY_PATH = "/stats/eurofxref/eurofxref-daily.xml";

async function until(what: string, predicate: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never happened within ${ms} ms: ${what}`);
}

let dbs: LogDatabases;
let url: string;
let store: StoreLocation;
let log: EventLog;
let api: FakeApiServer;
let dns: TestDnsServer;
let origin: Server;
const proxies: Harness[] = [];
const recorders: WorkerDecisionRecorder[] = [];
let key: TestKey;
let keysDir: string;
const folders: string[] = [];
let originFails = false;
let daily: string;

/** A proxy replica recording on the one log as `egress-proxy/<id>`, admitting TokenRequest tokens of the fake API server. */
async function replica(id: string): Promise<Harness> {
  const recorder = await WorkerDecisionRecorder.open({ url, actor: `egress-proxy/${id}` });
  recorders.push(recorder);
  const h = await startHarness({
    dnsServer: dns.server,
    allowLists: { "ecb-fx": "www.ecb.europa.eu:443\n" },
    recorder,
    ports: {
      reviewer: {
        review: (token: string) => {
          const who = api.issuedTokens.get(token);
          return who === undefined ? { ok: false, code: "token_refused" } : { ok: true, username: who.user };
        },
      },
    },
  });
  h.routes.set("8.8.4.4", (origin.address() as AddressInfo).port);
  proxies.push(h);
  return h;
}

/** The cluster's plugin host on the one log, in a new folder of its own, its HTTP through `proxy`. */
async function pluginHost(proxy: Harness, ca: string): Promise<ClusterPluginHost> {
  const dataDir = await mkdtemp(join(tmpdir(), "openfief-one-log-host-"));
  folders.push(dataDir);
  return startClusterPluginHost({
    kc: api.kubeConfig("plugin-host-token"),
    dataDir,
    store,
    listen: { host: "127.0.0.1", port: 0 },
    health: { host: "127.0.0.1", port: 0 },
    egressProxy: `http://127.0.0.1:${proxy.port}`,
    jwksDir: keysDir,
    coreSubject: CORE_SUBJECT,
    logger: pino({ level: "silent" }),
    ociLayouts: [join(ROOT, "examples/oci")],
    restartDelayMs: 50,
    http: proxyHttp({ proxyUrl: `http://127.0.0.1:${proxy.port}`, ca }),
  });
}

async function sync(host: ClusterPluginHost, batchId: string): Promise<void> {
  const bearer = await mint(key, { aud: ["openfief-plugin:ecb-fx"] });
  const client = createClient(ConnectorService, createConnectTransport({ baseUrl: `http://127.0.0.1:${host.port}`, httpVersion: "1.1", interceptors: [(next) => (req) => {
    req.header.set("authorization", `Bearer ${bearer}`);
    return next(req);
  }] }));
  await client.sync(create(SyncRequestSchema, { batchId })).catch(() => undefined);
}

let cert: { key: string; cert: string };

beforeAll(async () => {
  daily = await readFile(join(ROOT, "plugins/ecb-fx/fixtures/eurofxref-daily.xml"), "utf8");
  dbs = await startLogDatabases();
  url = await dbs.fresh();
  store = { kind: "postgres", url, shown: "postgres://postgres@127.0.0.1/one-log" };
  log = await openPostgresLog({ url, migrate: false });
  // The reconciler's side: the demo's plugins decided on the same log (ecb-fx runs in the plugin host).
  const dir = await mkdtemp(join(tmpdir(), "openfief-one-log-"));
  folders.push(dir);
  const rt = await openRuntime({ dataDir: dir, store, logger: pino({ level: "silent" }), ...demoSettings() });
  try {
    await applyDemoFolder(rt.store, "plugins");
    await rt.reconciler.reconcileAll();
  } finally {
    await rt.close();
  }

  api = await FakeApiServer.start();
  api.put({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "plugin-ecb-fx", namespace: NAMESPACE } });
  api.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: PLUGIN_HOST_CONFIGMAP, namespace: NAMESPACE }, data: encodeHostedPlugins(new Map([["ecb-fx", { image: ECB_IMAGE, module: ECB_MODULE, egress: [{ host: "www.ecb.europa.eu", port: 443 }] }]])) });
  dns = await startDnsServer({ "www.ecb.europa.eu": { kind: "answer", addresses: ["8.8.4.4"], ttl: 30 } });
  cert = makeCert(["www.ecb.europa.eu"]);
  origin = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    if (originFails) return void res.writeHead(503).end();
    if (req.url === DAILY_PATH) return void res.writeHead(200, { "content-type": "application/xml" }).end(daily);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => origin.listen(0, "127.0.0.1", () => r()));
  key = await makeKey("ES256", "core-key");
  keysDir = await jwksDir([key]);
}, 180_000);

afterAll(async () => {
  for (const p of proxies) await p.close();
  for (const r of recorders) await r.close();
  await log?.close();
  if (origin !== undefined) await new Promise<void>((r) => origin.close(() => r()));
  await dns?.close();
  await api?.close();
  await dbs?.stop();
  for (const f of [...folders, ...(keysDir === undefined ? [] : [keysDir])]) await rm(f, { recursive: true, force: true });
}, 60_000);

describe("one log for the whole cluster", () => {
  it("holds a decision of each proxy replica and the plugin host's failed call, and why names them all", async () => {
    const a = await replica("a");
    const b = await replica("b");
    // The plugin host's calls go through replica a, then (started again elsewhere) through replica b.
    const first = await pluginHost(a, cert.cert);
    try {
      await until("the plugin host is ready", () => first.ready());
      await sync(first, "through-a");
      originFails = true;
      await sync(first, "failing");
      originFails = false;
    } finally {
      await first.close();
    }
    const installs = (await log.read({ type: "module.installed" })).length;
    // Elsewhere: a new folder, nothing of the first one's; its module is in the log, by digest.
    const second = await pluginHost(b, cert.cert);
    try {
      await until("the plugin host started again is ready", () => second.ready());
      expect((await second.host.modules()).map((m) => m.digest)).toContain(ECB_MODULE);
      await sync(second, "through-b");
    } finally {
      await second.close();
    }
    expect((await log.read({ type: "module.installed" })).length).toBe(installs);

    const decisions = await log.read({ stream: "egress/ecb-fx", type: "egress.decision" });
    expect(new Set(decisions.map((e) => e.actor))).toEqual(new Set(["egress-proxy/a", "egress-proxy/b"]));
    const calls = await log.read({ stream: "plugin/ecb-fx", type: "plugin.call" });
    expect(calls.map((e) => [e.actor, e.data.code])).toContainEqual(["plugin-host", "http_failed"]);

    const { sentences } = await explain(log, "ecb-fx");
    const text = sentences.join("\n");
    expect(text).toMatch(/Its latest egress decision by egress-proxy\/a: allowed www\.ecb\.europa\.eu:443/);
    expect(text).toMatch(/Its latest egress decision by egress-proxy\/b: allowed www\.ecb\.europa\.eu:443/);
    expect(text).toMatch(/Its calls failed with http_failed \(reported by the plugin\) once in the last hour \(last at [^,]+, recorded by plugin-host\)/);
    expect(await log.verify()).toMatchObject({ ok: true });
  }, 120_000);
});
