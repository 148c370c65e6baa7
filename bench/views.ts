/**
 * Views benchmark (`npm run bench:views`, or `npx tsx bench/views.ts`). Figures, not tests: each is
 * the median of several runs.
 *   - the scope algebra at its caps (32 rules × 32 entries each side, every list overlapping):
 *     the slowest intersection and coverage a vendor and an owner can ask of the planner;
 *   - RequestInfo and a PluginToken's verification, per request;
 *   - a gateway round trip through real HTTP on 127.0.0.1 in the embedded mode (gates, the
 *     recorded decision, the answer), sequential requests.
 *
 *   BENCH_RUNS=7 (runs per figure)   BENCH_REQUESTS=500 (gateway requests per run)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, pluginStream } from "../src/events/index.js";
import { RBAC_LIMITS, intersectRules, parseGrant, parseImageRef, parseManifest, planRollout, rolloutPlanToJSON, uncoveredRules } from "../src/plugins/index.js";
import type { JsonValue, PolicyRule } from "../src/plugins/index.js";
import {
  EmbeddedUpstream, KeyRing, LogInstallations, PluginTokenValidator, StaticUserRoles, StoreDecisionRecorder, TokenSigner, createGateway, rbacViewAccess, requestInfo, signPluginToken,
} from "../src/views/index.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 500);
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

async function gatewayFigure(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "openfief-bench-views-"));
  const store = await openStore({ file: join(dir, "events.db") });
  const name = "ledger-view";
  const image = `ghcr.io/openfief/ledger-view@sha256:${"c5".repeat(32)}`;
  const manifest = { capabilities: ["view"], egress: [], secrets: [], dataTiers: [], rbac: [{ apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["get", "list"] }] };
  const stream = pluginStream(name);
  store.append([{ stream, type: "plugin.observed", actor: "bench", data: { name, spec: { image, manifest } } }]);
  store.append([{ stream, type: "grant.observed", actor: "bench", data: { name, spec: { capabilities: ["view"], rbac: manifest.rbac } } }]);
  const m = parseManifest(manifest);
  const g = parseGrant({ name, spec: { capabilities: ["view"], rbac: manifest.rbac } });
  const img = parseImageRef(image);
  if (!m.ok || !g.ok || !img.ok) throw new Error("bench plugin");
  const plan = rolloutPlanToJSON(planRollout({ current: { image: img.value, manifest: m.value }, currentDeployable: true, previous: null, grant: g.value.spec }));
  store.append([{ stream, type: "rollout.decided", actor: "bench", data: { name, inputs: { current: { image, manifest: manifest as unknown as JsonValue }, currentDeployable: true, previous: null, grant: { capabilities: ["view"] } }, plan } }]);
  const ring = await KeyRing.open();
  const signer = new TokenSigner(ring);
  const roles = new StaticUserRoles({ alice: { cluster: [{ apiGroups: ["openfief.io"], resources: ["*"], verbs: ["*"], resourceNames: [], nonResourceURLs: [] }] } });
  const installations = new LogInstallations(store);
  const inst = await installations.byName(name);
  if (inst === null) throw new Error("installation");
  const gateway = createGateway({
    clusterId: "embedded", tokens: new PluginTokenValidator({ jwks: () => ring.jwks() }), installations, access: rbacViewAccess(roles),
    upstream: new EmbeddedUpstream(store, roles), recorder: new StoreDecisionRecorder(store), pluginProxyOrigin: "http://localhost:1",
  });
  const server = createServer();
  gateway.attach(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  const token = (await signPluginToken(signer, { sub: "alice", installation_id: inst.id, cluster_id: "embedded", plugin_name: inst.pluginName, plugin_version: inst.pluginVersion, definition_hash: inst.definitionHash, installation_name: name })).token;
  const get = (path: string): Promise<number> => new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers: { authorization: `Bearer ${token}` } }, (res) => { res.resume(); res.on("end", () => resolve(res.statusCode ?? 0)); });
    req.on("error", reject);
    req.end();
  });
  const runs = async (path: string): Promise<number> => {
    const per: number[] = [];
    for (let r = 0; r < Math.max(3, Math.floor(RUNS / 2)); r++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < REQUESTS; i++) await get(path);
      per.push(ms(t0) / REQUESTS);
    }
    return median(per);
  };
  const allowed = await runs(`/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins/${name}`);
  const refused = await runs("/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugingrants");
  console.log(`${"gateway GET, allowed (embedded, recorded, answered)".padEnd(62)} ${allowed.toFixed(3).padStart(10)} ms/request`);
  console.log(`${"gateway GET, refused at the plugin gate (recorded)".padEnd(62)} ${refused.toFixed(3).padStart(10)} ms/request`);
  await new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
  await store.close();
  rmSync(dir, { recursive: true, force: true });
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
