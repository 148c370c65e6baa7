/**
 * `openfief plugin-host` end to end on 127.0.0.1 (ADRs 0080, 0081): the fake API server serves the
 * `openfief-plugin-host` ConfigMap and answers TokenRequests; a real egress proxy (a real DNS
 * server, a connect function mapping the ECB's "public" address to a local TLS server) admits the
 * plugin by the TokenRequest token of its own ServiceAccount; the demo's `ecb-fx` module is read
 * from `examples/oci` by digest; a core client with a correctly signed token calls Sync over h2c
 * and HTTP/1.1. Tokens for another instance, audience or subject are refused, a plugin the
 * ConfigMap does not list is refused, and a plugin removed from it stops being served.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startClusterPluginHost, type ClusterPluginHost } from "../../src/compose/index.js";
import { ConnectorService, FileHeaderSchema, ImportFileRequestSchema, IngestMode } from "../../src/gen/openfief/connector/v1/connector_pb.js";
import { proxyHttp, type HttpCapability } from "../../src/host/index.js";
import { encodeHostedPlugins, NAMESPACE, PLUGIN_HOST_CONFIGMAP } from "../../src/plugins/index.js";
import { startDnsServer, type TestDnsServer } from "../egress/support/dns-server.js";
import { startHarness, type Harness } from "../egress/support/harness.js";
import { makeCert } from "../egress/support/tls.js";
import { CORE_SUBJECT, jwksDir, makeKey, mint, unsignedToken, type TestKey } from "../sdk/support/keys.js";
import { FakeApiServer } from "./fake-apiserver.js";

const NS = NAMESPACE;
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ECB_IMAGE = "localhost/openfief-demo/ecb-fx@sha256:bc5075adc604cc16c13be13e38549e2cb69b2da3e18ce9c023f6c9a312539300";
const ECB_MODULE = "37ca3117ba230ff39ccb7212faaef86a069771114f6048f3d7269f05127d2fe2";
const DAILY_PATH = "/stats/eurofxref/eurofxref-daily.xml";
const DEADLINE_MS = 20_000;

async function until(what: string, predicate: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never happened within ${DEADLINE_MS} ms: ${what}`);
}

function hostedData(): Record<string, string> {
  return encodeHostedPlugins(new Map([["ecb-fx", { image: ECB_IMAGE, module: ECB_MODULE, egress: [{ host: "www.ecb.europa.eu", port: 443 }] }]]));
}

let server: FakeApiServer;
let dns: TestDnsServer;
let origin: Server;
let proxy: Harness;
let http: HttpCapability;
let key: TestKey;
let keysDir: string;
let dataDir: string;
let host: ClusterPluginHost;
let daily: string;
const upstream: string[] = [];

beforeAll(async () => {
  daily = await readFile(join(ROOT, "plugins/ecb-fx/fixtures/eurofxref-daily.xml"), "utf8");
  server = await FakeApiServer.start();
  server.put({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "plugin-ecb-fx", namespace: NS } });
  server.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: PLUGIN_HOST_CONFIGMAP, namespace: NS }, data: hostedData() });

  dns = await startDnsServer({ "www.ecb.europa.eu": { kind: "answer", addresses: ["8.8.4.4"], ttl: 30 } });
  const cert = makeCert(["www.ecb.europa.eu"]);
  origin = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    upstream.push(`${req.method ?? ""} ${req.headers.host ?? ""}${req.url ?? ""}`);
    if (req.url === DAILY_PATH) return void res.writeHead(200, { "content-type": "application/xml" }).end(daily);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => origin.listen(0, "127.0.0.1", () => r()));
  // The proxy admits a token the fake API server issued by TokenRequest, as the plugin's ServiceAccount.
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
  http = proxyHttp({ proxyUrl: `http://127.0.0.1:${proxy.port}`, ca: cert.cert });

  key = await makeKey("ES256", "core-key");
  keysDir = await jwksDir([key]);
  dataDir = await mkdtemp(join(tmpdir(), "openfief-plugin-host-"));
  host = await startClusterPluginHost({
    kc: server.kubeConfig("plugin-host-token"),
    dataDir,
    listen: { host: "127.0.0.1", port: 0 },
    health: { host: "127.0.0.1", port: 0 },
    egressProxy: `http://127.0.0.1:${proxy.port}`,
    jwksDir: keysDir,
    coreSubject: CORE_SUBJECT,
    logger: pino({ level: "silent" }),
    ociLayouts: [join(ROOT, "examples/oci")],
    restartDelayMs: 50,
    http,
  });
  await until("the plugin host is ready", () => host.ready());
}, 60_000);

afterAll(async () => {
  await host?.close();
  await proxy?.close();
  await new Promise<void>((r) => origin.close(() => r()));
  await dns?.close();
  await server?.close();
  await rm(keysDir, { recursive: true, force: true });
  await rm(dataDir, { recursive: true, force: true });
});

const base = (): string => `http://127.0.0.1:${host.port}`;
const token = (instance: string, overrides: Parameters<typeof mint>[1] = {}): Promise<string> => mint(key, { aud: [`openfief-plugin:${instance}`], ...overrides });
function client(bearer: string, httpVersion: "1.1" | "2") {
  return createClient(ConnectorService, createConnectTransport({ baseUrl: base(), httpVersion, interceptors: [(next) => (req) => {
    req.header.set("authorization", `Bearer ${bearer}`);
    return next(req);
  }] }));
}

/** A raw Sync over HTTP/1.1, for the status the gate answers before Connect. */
async function rawSync(authorization: string | null): Promise<number> {
  const res = await fetch(`${base()}/openfief.connector.v1.ConnectorService/Sync`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(authorization === null ? {} : { authorization }) },
    body: JSON.stringify({ batchId: "b-raw" }),
  });
  await res.arrayBuffer();
  return res.status;
}

describe("the cluster's plugin host", () => {
  it("installs the listed module from its image by digest, checked against the signed label", async () => {
    expect(host.plugins()).toEqual(["ecb-fx"]);
    expect((await host.host.modules()).map((m) => m.digest)).toEqual([ECB_MODULE]);
  });

  it.each([["2"], ["1.1"]] as const)("answers the core's Sync over HTTP/%s with the ECB's rates, fetched through the egress proxy as the plugin", async (version) => {
    upstream.length = 0;
    const r = await client(await token("ecb-fx"), version).sync({ batchId: `b-${version}`, watermark: "" });
    expect(r.delivery?.batchId).toBe(`b-${version}`);
    expect(r.delivery?.institution?.id).toBeTruthy();
    expect(r.delivery?.fxRates.length).toBeGreaterThan(0);
    expect(r.delivery?.fxRates[0]).toMatchObject({ baseCurrency: "EUR" });
    expect(upstream).toEqual([`GET www.ecb.europa.eu${DAILY_PATH}`]);
  });

  it("went out only through tunnels the egress proxy opened for the plugin itself", () => {
    // A kept-alive tunnel carries later requests: one decision or more, every one the plugin's.
    expect(proxy.records.length).toBeGreaterThan(0);
    for (const r of proxy.records) expect(r).toMatchObject({ plugin: "ecb-fx", host: "www.ecb.europa.eu", port: 443, allowed: true });
  });

  it("asks a TokenRequest for the plugin's own ServiceAccount, audience openfief-egress, and reuses it", () => {
    const requests = server.requests.filter((r) => r.method === "POST" && r.path === `/api/v1/namespaces/${NS}/serviceaccounts/plugin-ecb-fx/token`);
    expect(requests).toHaveLength(1);
    expect((requests[0]?.body as { spec?: unknown }).spec).toEqual({ audiences: ["openfief-egress"], expirationSeconds: 600 });
  });

  it("maps a file streamed to ImportFile through the module's import_file", async () => {
    const header = create(ImportFileRequestSchema, { payload: { case: "header", value: create(FileHeaderSchema, { batchId: "b-file", mode: IngestMode.PREVIEW, fileName: "eurofxref-daily.xml", mediaType: "application/xml" }) } });
    const bytes = Buffer.from(daily);
    async function* stream() {
      yield header;
      for (let i = 0; i < bytes.length; i += 1000) yield create(ImportFileRequestSchema, { payload: { case: "chunk", value: bytes.subarray(i, i + 1000) } });
    }
    const r = await client(await token("ecb-fx"), "2").importFile(stream());
    expect(r.delivery?.batchId).toBe("b-file");
    expect(r.delivery?.fxRates.length).toBeGreaterThan(0);
  });

  it.each<[string, () => Promise<string | null>, number]>([
    ["no token", () => Promise.resolve(null), 401],
    ["an unsigned token", () => Promise.resolve(`Bearer ${unsignedToken("core-key")}`), 401],
    ["the core's token for the core's own audience", async () => `Bearer ${await mint(key, { aud: ["openfief-core"] })}`, 401],
    ["a token with two audiences", async () => `Bearer ${await mint(key, { aud: ["openfief-plugin:ecb-fx", "openfief-plugin:other"] })}`, 401],
    ["a token of another subject", async () => `Bearer ${await token("ecb-fx", { sub: "system:serviceaccount:openfief:plugin-ecb-fx" })}`, 401],
    ["an expired token", async () => `Bearer ${await token("ecb-fx", { exp: Math.floor(Date.now() / 1000) - 3600 })}`, 401],
    ["the core's token for an instance the ConfigMap does not list", async () => `Bearer ${await token("nbp-fx")}`, 403],
  ])("refuses %s before any plugin code runs", async (_what, authorization, status) => {
    const before = (await host.host.modules()).length;
    expect(await rawSync(await authorization())).toBe(status);
    expect((await host.host.modules()).length).toBe(before);
  });

  it("records a call to a plugin it does not run as a refused plugin.call in its own store", async () => {
    await expect(client(await token("nbp-fx"), "1.1").sync({ batchId: "b-x" })).rejects.toMatchObject({ code: Code.PermissionDenied });
    expect((await host.store.read({ type: "plugin.call", stream: "plugin/nbp-fx" })).at(-1)?.data).toMatchObject({ name: "nbp-fx", source: "host", code: "plugin_not_approved" });
  });

  it("serves /healthz, /readyz and /metrics on the health port", async () => {
    const at = `http://127.0.0.1:${host.healthPort}`;
    expect((await fetch(`${at}/healthz`)).status).toBe(200);
    expect((await fetch(`${at}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${at}/metrics`)).text();
    expect(metrics).toMatch(/openfief_plugin_host_calls_total\{method="sync",outcome="ok"\} [1-9]/);
    expect(metrics).toMatch(/openfief_plugin_host_refused_total\{reason="not_running"\} [1-9]/);
    expect(metrics).toContain("openfief_plugin_host_plugins 1");
    // The host's own: queue depth, wait and run time, busy refusals, hard stops (as in `openfief up`).
    expect(metrics).toMatch(/^openfief_plugin_host_run_seconds_count\{result="returned"\} [1-9]/m);
    expect(metrics).toMatch(/^openfief_plugin_host_queue_wait_seconds_count [1-9]/m);
    expect(metrics).toMatch(/^openfief_plugin_host_queue_depth 0$/m);
    expect(metrics).toMatch(/^openfief_plugin_host_busy_total 0$/m);
    expect(metrics).toMatch(/^openfief_plugin_host_hard_stops_total 0$/m);
  });

  it("stops serving a plugin removed from the ConfigMap, and uninstalls its module, after its watch failed and was restarted", async () => {
    const watches = (): number => server.requests.filter((r) => r.path === `/api/v1/namespaces/${NS}/configmaps` && r.query["watch"] === "true").length;
    const before = watches();
    // The next watch answers 500, and the open one is cut: client-node's informer stops for good.
    server.failNextWatch("configmaps", "500");
    server.dropWatches("configmaps");
    await until("the watch restarted past the failure", () => watches() >= before + 2 && server.openWatches("configmaps") === 1);
    expect(host.plugins()).toEqual(["ecb-fx"]);
    server.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: PLUGIN_HOST_CONFIGMAP, namespace: NS }, data: {} });
    await until("ecb-fx no longer listed", () => host.plugins().length === 0);
    const err = await client(await token("ecb-fx"), "2").sync({ batchId: "b-gone" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.PermissionDenied);
    await until("the module uninstalled", async () => (await host.host.modules()).length === 0);
  });
});
