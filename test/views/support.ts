/**
 * Shared set-up of the views tests: an event store in a temp dir holding a view plugin decided by
 * the real planner, a key ring with its signer and validators, the users' roles, servers on
 * 127.0.0.1 and a raw HTTP client (so headers such as Origin go out exactly as written).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import type { IncomingMessage, IncomingHttpHeaders, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { openStore, pluginStream } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import { parseGrant, parseImageRef, parseManifest, planRollout, rolloutPlanToJSON } from "../../src/plugins/index.js";
import type { JsonValue, PolicyRule } from "../../src/plugins/index.js";
import {
  KeyRing,
  LogInstallations,
  PluginTokenValidator,
  StaticUserRoles,
  TokenSigner,
  UserTokenValidator,
  ViewMetrics,
  rbacViewAccess,
  signUserToken,
} from "../../src/views/index.js";
import type { MintDeps } from "../../src/views/index.js";
import { consoleCallerGate } from "../../src/app/index.js";

export const PLUGIN = "ledger-view";
export const IMAGE = `ghcr.io/openfief/ledger-view@sha256:${"c5".repeat(32)}`;
export const PLUGIN_PROXY = "http://localhost:47001";
/** The console the mint's callers come from (its cookie is `openfief_session`, without TLS). */
export const CONSOLE = "http://127.0.0.1:47000";

const R = (verbs: string[], apiGroups: string[], resources: string[], resourceNames: string[] = []): PolicyRule => ({ verbs, apiGroups, resources, resourceNames, nonResourceURLs: [] });

/** The view's manifest: read plugins and config maps; one named Secret; discovery. */
export const MANIFEST = {
  capabilities: ["view"],
  egress: [],
  secrets: [],
  dataTiers: [],
  rbac: [
    { apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["get", "list", "watch"] },
    { apiGroups: ["openfief.io"], resources: ["plugingrants"], verbs: ["get", "list", "watch"], resourceNames: [PLUGIN] },
    { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["pods", "pods/log", "pods/exec"], verbs: ["get", "create"] },
  ],
  ui: { bundle: `sha256:${"b".repeat(64)}`, entry: "index.html" },
} as const;

/** The owner approves all of it. */
export const GRANT = { capabilities: ["view"], rbac: MANIFEST.rbac };

/**
 * alice may read everything of openfief.io and configmaps and pods; bob may do nothing;
 * carol may view only the plugin "other"; dave may view plugins but read no events.
 */
export const ROLES = new StaticUserRoles({
  alice: {
    cluster: [R(["get", "list", "watch"], ["openfief.io"], ["*"]), R(["get", "list", "watch"], [""], ["configmaps", "pods", "pods/log"])],
    namespaces: { openfief: [R(["get", "create"], [""], ["pods/exec"])] },
  },
  carol: { cluster: [R(["get"], ["openfief.io"], ["plugins"], ["other"])] },
  dave: { cluster: [R(["get", "list"], ["openfief.io"], ["plugins"])] },
});

/** A store in a temp dir. */
export async function tempStore(): Promise<{ store: EventLog; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "openfief-views-"));
  const store = await openStore({ file: join(dir, "events.db") });
  return { store, cleanup: async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); } };
}

/** Records a Plugin, its grant, and the real planner's decision for them. */
export async function installView(store: EventLog, name = PLUGIN, manifest: JsonValue = MANIFEST as unknown as JsonValue, grant: JsonValue = GRANT as unknown as JsonValue): Promise<void> {
  const stream = pluginStream(name);
  const [observed] = await store.append([{ stream, type: "plugin.observed", actor: "owner:cli", data: { name, spec: { image: IMAGE, manifest } } }]);
  await store.append([{ stream, type: "grant.observed", actor: "owner:cli", data: { name, spec: grant } }]);
  await decide(store, name, observed?.seq ?? null);
}

/** Appends the real planner's decision for a plugin's current spec and grant. */
export async function decide(store: EventLog, name: string, causedBy: number | null = null): Promise<void> {
  const stream = pluginStream(name);
  const observed = await store.last(stream, "plugin.observed");
  const grantEvent = await store.last(stream, "grant.observed");
  const spec = observed?.data.spec as { image: string; manifest: unknown };
  const m = parseManifest(spec.manifest);
  const img = parseImageRef(spec.image);
  const g = parseGrant({ name, spec: grantEvent?.data.spec ?? {} });
  if (!m.ok || !img.ok || !g.ok) throw new Error("test plugin does not parse");
  const plan = planRollout({ current: { image: img.value, manifest: m.value }, currentDeployable: true, previous: null, grant: g.value.spec });
  await store.append([{
    stream, type: "rollout.decided", actor: "reconciler", causedBy,
    data: { name, rules: 1, inputs: { current: { image: spec.image, manifest: spec.manifest as JsonValue }, currentDeployable: true, previous: null, grant: (grantEvent?.data.spec ?? {}) as JsonValue }, plan: rolloutPlanToJSON(plan) },
  }]);
  await store.append([{ stream, type: "workload.desired", actor: "reconciler", data: { name, running: plan.outcome !== "none", objects: [], allowList: [] } }]);
}

/** Keys, signer and validators over one clock. */
export async function tokens(clock: () => number = Date.now): Promise<{ ring: KeyRing; signer: TokenSigner; users: UserTokenValidator; plugins: PluginTokenValidator; session: (sub: string) => Promise<string> }> {
  const ring = await KeyRing.open({ clock, overlapSeconds: 3600 });
  const signer = new TokenSigner(ring, "openfief", clock);
  return {
    ring,
    signer,
    users: new UserTokenValidator({ jwks: () => ring.jwks(), clock, maxLifetimeSeconds: 43_200 }),
    plugins: new PluginTokenValidator({ jwks: () => ring.jwks(), clock }),
    session: async (sub) => (await signUserToken(signer, sub, 3600)).token,
  };
}

/** A logger whose lines the test can read. */
export function capturedLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const logger: Logger = pino({}, new Writable({ write: (c: Buffer, _e, cb) => { out.push(c.toString()); cb(); } }));
  return { logger, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** The mint's collaborators over a store. */
export function mintDeps(store: EventLog, t: Awaited<ReturnType<typeof tokens>>, clusterId = "embedded"): MintDeps & { metrics: ViewMetrics; registry: Registry } {
  const registry = new Registry();
  return { gate: consoleCallerGate(() => ({ origins: [CONSOLE], tls: false })), users: t.users, installations: new LogInstallations(store), access: rbacViewAccess(ROLES), signer: t.signer, clusterId, metrics: new ViewMetrics(registry), registry };
}

/** A server on 127.0.0.1 and an ephemeral port. */
export async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void, setup?: (server: Server) => void): Promise<{ url: string; server: Server; close: () => Promise<void> }> {
  const server = createServer();
  if (setup === undefined) server.on("request", handler);
  else setup(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, server, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

/** One request with exactly these headers; the whole answer. */
export function call(url: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: string; json: () => Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ hostname: u.hostname, port: Number(u.port), method, path, headers: body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json: () => JSON.parse(text) as Record<string, unknown> });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Opens a streaming GET and collects its lines until `until` says enough (or the stream ends). */
export function stream(url: string, path: string, headers: Record<string, string>): { status: Promise<number>; lines: string[]; next: (n: number) => Promise<string[]>; waitFor: (pred: (line: string) => boolean) => Promise<string>; close: () => void } {
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  let statusResolve: (n: number) => void = () => {};
  const status = new Promise<number>((r) => { statusResolve = r; });
  const u = new URL(url);
  let buffer = "";
  const req = request({ hostname: u.hostname, port: Number(u.port), method: "GET", path, headers }, (res) => {
    statusResolve(res.statusCode ?? 0);
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        lines.push(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
      }
      for (const w of waiters.splice(0)) w();
    });
    res.on("end", () => { for (const w of waiters.splice(0)) w(); });
  });
  req.on("error", () => { for (const w of waiters.splice(0)) w(); });
  req.end();
  return {
    status,
    lines,
    next: async (n) => {
      while (lines.length < n) {
        const before = lines.length;
        await new Promise<void>((r) => waiters.push(r));
        if (lines.length === before && req.destroyed) break;
      }
      return lines.slice(0, n);
    },
    waitFor: async (pred) => {
      for (;;) {
        const hit = lines.find(pred);
        if (hit !== undefined) return hit;
        if (req.destroyed) throw new Error("the stream ended");
        await new Promise<void>((r) => waiters.push(r));
      }
    },
    close: () => req.destroy(),
  };
}
