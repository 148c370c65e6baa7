/**
 * Views benchmark (`npm run bench:views`, or `npx tsx bench/views.ts`). Figures, not tests: each is
 * the median of several runs.
 *   - the scope algebra at its caps (32 rules × 32 entries each side, every list overlapping):
 *     the slowest intersection and coverage a vendor and an owner can ask of the planner;
 *   - RequestInfo and a PluginToken's verification, per request;
 *   - the gateway through real HTTP on 127.0.0.1 in the embedded mode, `BENCH_INFLIGHT` requests
 *     in flight: allowed requests a second with its limits lifted (the baseline) and at their
 *     defaults; one user flooding past the rate limit (requests a second, the statuses, the log's
 *     growth per 10,000); refusals with 3.5 KB paths recorded one by one (the baseline) and within
 *     the default budget, with the log's growth per 10,000 of each.
 *
 *   BENCH_RUNS=7 (runs per figure)   BENCH_REQUESTS=500 (allowed requests per run)
 *   BENCH_REFUSALS=10000 (refused requests per figure)   BENCH_INFLIGHT=8
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { Agent, request } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, pluginStream } from "../src/events/index.js";
import type { EventLog } from "../src/events/index.js";
import { RBAC_LIMITS, intersectRules, parseGrant, parseImageRef, parseManifest, planRollout, rolloutPlanToJSON, uncoveredRules } from "../src/plugins/index.js";
import type { JsonValue, PolicyRule } from "../src/plugins/index.js";
import {
  EmbeddedUpstream, KeyRing, LogInstallations, PluginTokenValidator, StaticUserRoles, StoreDecisionRecorder, TokenSigner, createGateway, rbacViewAccess, requestInfo, signPluginToken,
} from "../src/views/index.js";
import type { Gateway, GatewayLimitsInput } from "../src/views/index.js";
import { withFile } from "../test/support/sqlite-file.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 500);
const REFUSALS = Number(process.env.BENCH_REFUSALS ?? 10_000);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 8);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;

function atCaps(seed: number, wild: boolean): PolicyRule[] {
  const n = RBAC_LIMITS.rules;
  const k = RBAC_LIMITS.entries;
  return Array.from({ length: n }, (_, i) => ({
    verbs: Array.from({ length: k }, (_, j) => (wild && j === 0 ? "*" : `verb${(i + j + seed) % (k + 8)}`)),
    apiGroups: Array.from({ length: k }, (_, j) => `g${(i * 3 + j) % (k + 16)}.example.io`),
    resources: Array.from({ length: k }, (_, j) => (j % 7 === 0 ? `*/sub${j}` : `res${(i + j) % (k + 24)}/sub${j % 5}`)),
    resourceNames: Array.from({ length: k }, (_, j) => `name-${(i + j) % (k + 32)}`),
    nonResourceURLs: [],
  }));
}

function figure(label: string, fn: () => void): void {
  const runs: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    fn();
    runs.push(ms(t0));
  }
  console.log(`${label.padEnd(62)} ${median(runs).toFixed(2).padStart(10)} ms`);
}

/** A store holding ledger-view decided by the real planner; keys; a token for alice. */
async function gatewaySetup(): Promise<{ store: EventLog; dir: string; ring: KeyRing; token: string; roles: StaticUserRoles; installations: LogInstallations }> {
  const dir = mkdtempSync(join(tmpdir(), "openfief-bench-views-"));
  const store = await openStore({ file: join(dir, "events.db") });
  const name = "ledger-view";
  const image = `ghcr.io/openfief/ledger-view@sha256:${"c5".repeat(32)}`;
  const manifest = { capabilities: ["view"], egress: [], secrets: [], dataTiers: [], rbac: [{ apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["get", "list"] }] };
  const stream = pluginStream(name);
  await store.append([{ stream, type: "plugin.observed", actor: "bench", data: { name, spec: { image, manifest } } }]);
  await store.append([{ stream, type: "grant.observed", actor: "bench", data: { name, spec: { capabilities: ["view"], rbac: manifest.rbac } } }]);
  const m = parseManifest(manifest);
  const g = parseGrant({ name, spec: { capabilities: ["view"], rbac: manifest.rbac } });
  const img = parseImageRef(image);
  if (!m.ok || !g.ok || !img.ok) throw new Error("bench plugin");
  const plan = rolloutPlanToJSON(planRollout({ current: { image: img.value, manifest: m.value }, currentDeployable: true, previous: null, grant: g.value.spec }));
  await store.append([{ stream, type: "rollout.decided", actor: "bench", data: { name, rules: 1, inputs: { current: { image, manifest: manifest as unknown as JsonValue }, currentDeployable: true, previous: null, grant: { capabilities: ["view"] } }, plan } }]);
  const ring = await KeyRing.open();
  const signer = new TokenSigner(ring);
  const roles = new StaticUserRoles({ alice: { cluster: [{ apiGroups: ["openfief.io"], resources: ["*"], verbs: ["*"], resourceNames: [], nonResourceURLs: [] }] } });
  const installations = new LogInstallations(store);
  const inst = await installations.byName(name);
  if (inst === null) throw new Error("installation");
  const token = (await signPluginToken(signer, { sub: "alice", installation_id: inst.id, cluster_id: "embedded", plugin_name: inst.pluginName, plugin_version: inst.pluginVersion, definition_hash: inst.definitionHash, installation_name: name })).token;
  return { store, dir, ring, token, roles, installations };
}

/** Limits out of the way: what the gateway costs without any of them biting. */
const LIFTED_RATE = { perUser: { perSecond: 1e9, burst: 1e9 }, perInstallation: { perSecond: 1e9, burst: 1e9 } };
const LIFTED: GatewayLimitsInput = { rate: LIFTED_RATE, refusals: { perSource: 1e9, total: 1e9 } };

/** The store's file and its write-ahead log, in bytes, after a checkpoint. */
function logBytes(store: EventLog, dir: string): number {
  withFile(store.location, (db) => db.pragma("wal_checkpoint(TRUNCATE)"));
  const size = (f: string): number => (existsSync(f) ? statSync(f).size : 0);
  return size(join(dir, "events.db")) + size(join(dir, "events.db-wal"));
}

type Setup = Awaited<ReturnType<typeof gatewaySetup>>;

/** Gateways over one setup, and `n` requests `INFLIGHT` at a time to one. */
function harness(s: Setup) {
  const agent = new Agent({ keepAlive: true, maxSockets: INFLIGHT });
  const start = async (limits: GatewayLimitsInput): Promise<{ port: number; gateway: Gateway; close: () => Promise<void> }> => {
    const gateway = createGateway({
      clusterId: "embedded", tokens: new PluginTokenValidator({ jwks: () => s.ring.jwks() }), installations: s.installations, access: rbacViewAccess(s.roles),
      upstream: new EmbeddedUpstream(s.store, s.roles), recorder: new StoreDecisionRecorder(s.store), pluginProxyOrigin: "http://localhost:1", limits,
    });
    const server = createServer();
    gateway.attach(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const close = async (): Promise<void> => {
      await gateway.close();
      await new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
    };
    return { port: (server.address() as AddressInfo).port, gateway, close };
  };
  const get = (port: number, path: string): Promise<number> => new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent, headers: { authorization: `Bearer ${s.token}` } }, (res) => { res.resume(); res.on("end", () => resolve(res.statusCode ?? 0)); });
    req.on("error", reject);
    req.end();
  });
  /** Requests a second, how many of each status, and the log's growth in bytes. */
  const flood = async (limits: GatewayLimitsInput, path: (i: number) => string, n: number, inflight = INFLIGHT): Promise<{ perSecond: number; statuses: Record<number, number>; grew: number }> => {
    const g = await start(limits);
    const before = logBytes(s.store, s.dir);
    const statuses: Record<number, number> = {};
    let next = 0;
    const t0 = process.hrtime.bigint();
    await Promise.all(Array.from({ length: inflight }, async () => {
      while (next < n) {
        const st = await get(g.port, path(next++));
        statuses[st] = (statuses[st] ?? 0) + 1;
      }
    }));
    const perSecond = n / (ms(t0) / 1000);
    await g.close();
    return { perSecond, statuses, grew: logBytes(s.store, s.dir) - before };
  };
  return { flood, close: () => agent.destroy() };
}

const line = (label: string, value: string): void => console.log(`${label.padEnd(72)} ${value}`);
const perTenThousand = (bytes: number): string => `${((bytes * 10_000) / REFUSALS / 1024).toFixed(1).padStart(8)} KiB per 10,000`;
const ALLOWED = "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins/ledger-view";
const LONG = `/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugingrants/${"x".repeat(3500)}`;

async function gatewayFigure(): Promise<void> {
  const s = await gatewaySetup();
  const h = harness(s);
  const rate = async (limits: GatewayLimitsInput, inflight = INFLIGHT): Promise<number> => (await h.flood(limits, () => ALLOWED, REQUESTS, inflight)).perSecond;
  await rate(LIFTED); // warm-up
  // As the benchmark before the limits measured it (one request at a time), to set beside its figure.
  const oneByOne: number[] = [];
  for (let r = 0; r < 3; r++) oneByOne.push(await rate({ rate: LIFTED_RATE }, 1));
  line("gateway GET, allowed, one at a time (default budget and caps)", `${(1000 / median(oneByOne)).toFixed(3).padStart(8)} ms/request`);
  // Allowed: every gate passed, each decision recorded; limits lifted and at the default budget and caps, in turns
  // (one user is the whole load here, so its rate stays lifted).
  const lifted: number[] = [];
  const defaults: number[] = [];
  for (let r = 0; r < 3; r++) {
    lifted.push(await rate(LIFTED));
    defaults.push(await rate({ rate: LIFTED_RATE }));
  }
  line("gateway, allowed, limits lifted (baseline)", `${median(lifted).toFixed(0).padStart(8)} requests/s`);
  line("gateway, allowed, default refusal budget and watch caps", `${median(defaults).toFixed(0).padStart(8)} requests/s  (${(median(defaults) / median(lifted)).toFixed(2)}× baseline)`);
  const limited = await h.flood({}, (i) => `${LONG}${i}`, REFUSALS);
  line(`gateway, one user past the default rate (${REFUSALS} requests, ${INFLIGHT} in flight)`, `${limited.perSecond.toFixed(0).padStart(8)} requests/s  ${JSON.stringify(limited.statuses)}`);
  line("  the log's growth", perTenThousand(limited.grew));
  // Refused at the plugin gate with 3.5 KB paths, the rate lifted: every refusal recorded (as before the budget), then within it.
  const every = await h.flood(LIFTED, (i) => `${LONG}${i}`, REFUSALS);
  const budgeted = await h.flood({ rate: LIFTED_RATE }, (i) => `${LONG}${i}`, REFUSALS);
  line("gateway, refused at the plugin gate, every refusal recorded (baseline)", `${every.perSecond.toFixed(0).padStart(8)} requests/s, ${perTenThousand(every.grew)}`);
  line("gateway, refused at the plugin gate, default refusal budget", `${budgeted.perSecond.toFixed(0).padStart(8)} requests/s, ${perTenThousand(budgeted.grew)}  (${(budgeted.grew / Math.max(1, every.grew)).toFixed(4)}× baseline)`);
  h.close();
  await s.store.close();
  rmSync(s.dir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  console.log(`views benchmark: ${RUNS} runs per figure, medians (caps: ${RBAC_LIMITS.rules} rules × ${RBAC_LIMITS.entries} entries)`);
  const a = atCaps(0, false);
  const b = atCaps(3, false);
  const w = atCaps(5, true);
  figure("intersectRules, both sides at the caps", () => void intersectRules(a, b));
  figure("intersectRules, wildcard verbs against the caps", () => void intersectRules(w, b));
  figure("uncoveredRules, both sides at the caps", () => void uncoveredRules(a, b));
  figure("uncoveredRules, wildcard verbs against the caps", () => void uncoveredRules(w, b));
  const targets = ["/api/v1/namespaces/ns/pods?watch=1&fieldSelector=metadata.name%3Dweb&labelSelector=app+in+(a,b)", "/apis/apps/v1/namespaces/ns/deployments/web/scale", "/healthz"];
  figure("requestInfo × 10,000", () => { for (let i = 0; i < 10_000; i++) requestInfo("GET", targets[i % 3] as string); });
  const ring = await KeyRing.open();
  const signer = new TokenSigner(ring);
  const tok = (await signPluginToken(signer, { sub: "alice", installation_id: "x.1", cluster_id: "c", plugin_name: "p", plugin_version: "v", definition_hash: "h", installation_name: "x" })).token;
  const v = new PluginTokenValidator({ jwks: () => ring.jwks() });
  const verifies: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 1000; i++) await v.verify(tok);
    verifies.push(ms(t0));
  }
  console.log(`${"PluginToken verification × 1,000 (ES256)".padEnd(62)} ${median(verifies).toFixed(2).padStart(10)} ms`);
  await gatewayFigure();
}

void main();
