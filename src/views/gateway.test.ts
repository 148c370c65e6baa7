/**
 * The gateway's gates as a table (docs/adr/0090): their order, and one row per refusal, each run
 * through `runGates` over the real collaborators (a log in a temp folder, the key ring's tokens,
 * the users' roles, the embedded upstream). The same refusals through HTTP, recorded, are in
 * test/views/gateway-embedded.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore, pluginStream } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import { parseGrant, parseImageRef, parseManifest, planRollout, rolloutPlanToJSON } from "../plugins/index.js";
import type { JsonValue, PolicyRule } from "../plugins/index.js";
import { EmbeddedUpstream } from "./embedded-upstream.js";
import { GATES, MAX_TARGET, runGates } from "./gates.js";
import type { Arrival, GateDeps, GateOutcome } from "./gates.js";
import { LogInstallations } from "./installations.js";
import { KeyRing } from "./key-ring.js";
import { RateBuckets, WatchSlots, gatewayLimits } from "./limits.js";
import type { GatewayLimitsInput } from "./limits.js";
import { PluginTokenValidator, TokenSigner, signPluginToken, signUserToken } from "./tokens.js";
import type { PluginTokenClaims } from "./tokens.js";
import { StaticUserRoles } from "./user-roles.js";
import type { UserRoles } from "./ports.js";
import { rbacViewAccess } from "./view-access.js";

const R = (verbs: string[], resources: string[], resourceNames: string[] = []): PolicyRule => ({ verbs, apiGroups: ["openfief.io"], resources, resourceNames, nonResourceURLs: [] });
const VIEW = { capabilities: ["view"], egress: [], secrets: [], dataTiers: [], rbac: [{ apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["get", "list", "watch"] }] };
const ROLES = new StaticUserRoles({ alice: { cluster: [R(["get", "list", "watch"], ["plugins", "plugingrants"])] }, dave: { cluster: [R(["get"], ["plugins"], ["ledger-view"])] } });

let dir: string;
let store: EventLog;
let signer: TokenSigner;
let validator: PluginTokenValidator;
let installations: LogInstallations;
const ids: Record<string, string> = {};

/** A Plugin, its grant and the real planner's decision: a view when its grant gives the capability. */
async function install(name: string, grant: JsonValue): Promise<void> {
  const stream = pluginStream(name);
  const image = `ghcr.io/openfief/${name}@sha256:${"c5".repeat(32)}`;
  await store.append([{ stream, type: "plugin.observed", actor: "owner:cli", data: { name, spec: { image, manifest: VIEW } } }]);
  await store.append([{ stream, type: "grant.observed", actor: "owner:cli", data: { name, spec: grant } }]);
  const m = parseManifest(VIEW);
  const g = parseGrant({ name, spec: grant });
  const img = parseImageRef(image);
  if (!m.ok || !g.ok || !img.ok) throw new Error("test plugin");
  const plan = planRollout({ current: { image: img.value, manifest: m.value }, currentDeployable: true, previous: null, grant: g.value.spec });
  await store.append([{ stream, type: "rollout.decided", actor: "reconciler", data: { name, rules: 1, inputs: { current: { image, manifest: VIEW as unknown as JsonValue }, currentDeployable: true, previous: null, grant }, plan: rolloutPlanToJSON(plan) } }]);
  await store.append([{ stream, type: "workload.desired", actor: "reconciler", data: { name, running: plan.outcome !== "none", objects: [], allowList: [] } }]);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-gates-"));
  store = await openStore({ file: join(dir, "events.db") });
  await install("ledger-view", { capabilities: ["view"], rbac: VIEW.rbac });
  await install("idle-view", { capabilities: [] });
  await install("gone-view", { capabilities: ["view"], rbac: VIEW.rbac });
  installations = new LogInstallations(store);
  for (const n of ["ledger-view", "idle-view", "gone-view"]) ids[n] = (await installations.byName(n))?.id ?? "";
  await store.append([{ stream: pluginStream("gone-view"), type: "plugin.deleted", actor: "owner:cli", data: { name: "gone-view" } }]);
  const ring = await KeyRing.open();
  signer = new TokenSigner(ring);
  validator = new PluginTokenValidator({ jwks: () => ring.jwks() });
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function claimsOf(name = "ledger-view", over: Partial<PluginTokenClaims> = {}): PluginTokenClaims {
  return { sub: "alice", installation_id: ids[name] ?? "", cluster_id: "embedded", plugin_name: "p", plugin_version: "v", definition_hash: "h", installation_name: name, ...over };
}

function deps(o: { limits?: GatewayLimitsInput; roles?: UserRoles } = {}): GateDeps {
  const l = gatewayLimits(o.limits);
  const roles = o.roles ?? ROLES;
  return {
    clusterId: "embedded", tokens: validator, installations, access: rbacViewAccess(ROLES), upstream: new EmbeddedUpstream(store, roles),
    rates: { user: new RateBuckets(l.rate.perUser, Date.now), installation: new RateBuckets(l.rate.perInstallation, Date.now) }, watches: new WatchSlots(l.watches),
  };
}

const PLUGINS = "/clusters/embedded/apis/openfief.io/v1alpha1/namespaces/openfief/plugins";

interface Row {
  readonly name: string;
  readonly target: string | (() => string);
  readonly gate: string;
  readonly status: number;
  readonly reason: string;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  /** The token: a PluginToken with these claims (default), a session token, or none. */
  readonly token?: Partial<PluginTokenClaims> & { installation?: string } | "session" | "none";
  readonly upgrade?: boolean;
  readonly foreign?: boolean;
  readonly deps?: () => GateDeps;
}

async function arrive(r: Pick<Row, "target" | "method" | "headers" | "token" | "upgrade" | "foreign">, d: GateDeps): Promise<GateOutcome> {
  const headers: Record<string, string> = { ...r.headers };
  if (r.token === "session") headers["authorization"] = `Bearer ${(await signUserToken(signer, "alice", 600)).token}`;
  else if (r.token !== "none") {
    const { installation, ...over } = r.token ?? {};
    headers["authorization"] = `Bearer ${(await signPluginToken(signer, claimsOf(installation, over))).token}`;
  }
  const req = { method: r.method ?? "GET", url: typeof r.target === "string" ? r.target : r.target(), headers } as unknown as IncomingMessage;
  const a: Arrival = { id: "req-1", req, upgrade: r.upgrade ?? false, target: req.url ?? "/", foreign: r.foreign ?? false, route: null, identity: null };
  return runGates(a, d);
}

const ROWS: readonly Row[] = [
  { name: "a target longer than the cap", target: `${PLUGINS}/${"x".repeat(MAX_TARGET)}`, gate: "target", status: 414, reason: "target_too_long" },
  { name: "a path the gateway does not serve", target: "/metrics", gate: "route", status: 404, reason: "no_route" },
  { name: "an installation route with a dot segment", target: () => `/installations/${ids["ledger-view"]}/runtime/../x`, gate: "route", status: 404, reason: "no_route" },
  { name: "an installation route with an encoded dot segment", target: () => `/installations/${ids["ledger-view"]}/runtime/%2e%2E/x`, gate: "route", status: 404, reason: "no_route" },
  { name: "an installation route with a single dot", target: () => `/installations/${ids["ledger-view"]}/runtime/a/./b`, gate: "route", status: 404, reason: "no_route" },
  { name: "an installation route hiding a separator", target: () => `/installations/${ids["ledger-view"]}/runtime/a%2F..%2Fb`, gate: "route", status: 404, reason: "no_route" },
  { name: "an installation route with no path", target: () => `/installations/${ids["ledger-view"]}/runtime`, gate: "route", status: 404, reason: "no_route" },
  { name: "an installation route with only a query", target: () => `/installations/${ids["ledger-view"]}/runtime?x=1`, gate: "route", status: 404, reason: "no_route" },
  { name: "no token", target: PLUGINS, token: "none", gate: "token", status: 401, reason: "missing" },
  { name: "a session token", target: PLUGINS, token: "session", gate: "token", status: 401, reason: "wrong_audience" },
  { name: "a user past their rate", target: PLUGINS, gate: "rate", status: 429, reason: "rate_limited_user", deps: () => deps({ limits: { rate: { perUser: { perSecond: 0.001, burst: 1 } } } }) },
  { name: "an installation past its rate", target: PLUGINS, gate: "rate", status: 429, reason: "rate_limited_installation", deps: () => deps({ limits: { rate: { perInstallation: { perSecond: 0.001, burst: 1 } } } }) },
  { name: "a foreign origin", target: PLUGINS, foreign: true, gate: "origin", status: 403, reason: "foreign_origin" },
  { name: "a token of another cluster", target: PLUGINS, token: { cluster_id: "prod" }, gate: "cluster", status: 403, reason: "cluster_mismatch" },
  { name: "a cluster the gateway does not front", target: PLUGINS.replace("embedded", "prod"), token: { cluster_id: "prod" }, gate: "cluster", status: 404, reason: "unknown_cluster" },
  { name: "a token of another installation", target: "/installations/other-view.7/controller/status", gate: "installation", status: 403, reason: "installation_mismatch" },
  { name: "a user who may not view the plugin", target: PLUGINS, token: { sub: "bob" }, gate: "can_view", status: 403, reason: "can_view" },
  { name: "an installation that is gone", target: PLUGINS, token: { installation_id: "ledger-view.9999" }, gate: "installation", status: 404, reason: "no_installation" },
  { name: "an installation being deleted", target: PLUGINS, token: { installation: "gone-view" }, gate: "installation", status: 409, reason: "deleting" },
  { name: "an installation running no view", target: PLUGINS, token: { installation: "idle-view" }, gate: "installation", status: 403, reason: "view_not_running" },
  { name: "a path Go cannot read", target: `${PLUGINS}/%zz`, gate: "request", status: 400, reason: "bad_escape" },
  { name: "a request kube-apiserver cannot resolve", target: "/clusters/embedded/api/v1/watch", gate: "request", status: 400, reason: "unresolvable" },
  { name: "impersonation", target: PLUGINS, headers: { "impersonate-user": "admin" }, gate: "request", status: 400, reason: "impersonation" },
  { name: "a watch named in its path beside another name", target: `/clusters/embedded/apis/openfief.io/v1alpha1/watch/namespaces/openfief/plugins/a?fieldSelector=metadata.name%3Db`, gate: "request", status: 400, reason: "name_mismatch" },
  { name: "a user whose roles refuse it", target: PLUGINS, token: { sub: "dave" }, gate: "user", status: 403, reason: "no_rule" },
  { name: "a user whose roles cannot be read", target: PLUGINS, gate: "user", status: 503, reason: "review_failed", deps: () => deps({ roles: { rulesFor: async () => { throw new Error("roles unreadable"); } } }) },
  { name: "a request outside the plugin's rules", target: `${PLUGINS.replace("plugins", "plugingrants")}`, gate: "plugin", status: 403, reason: "no_rule" },
  { name: "a user's watch past their cap", target: `${PLUGINS}?watch=1`, gate: "watches", status: 429, reason: "too_many_watches_user", deps: () => deps({ limits: { watches: { perUser: 0 } } }) },
  { name: "an installation's watch past its cap", target: `${PLUGINS}?watch=1`, gate: "watches", status: 429, reason: "too_many_watches_installation", deps: () => deps({ limits: { watches: { perInstallation: 0 } } }) },
  { name: "a watch past the cap on all", target: `${PLUGINS}?watch=1`, gate: "watches", status: 429, reason: "too_many_watches_total", deps: () => deps({ limits: { watches: { total: 0 } } }) },
];

describe("the gates", () => {
  it("run in the gateway's order: before identity, then the caller's rate, then FUN-17's gates, then the cap on watches", () => {
    expect(GATES.map((g) => g.name)).toEqual(["target", "route", "token", "rate", "origin", "cluster", "binding", "can_view", "installation", "request", "user", "plugin", "watches"]);
    expect(GATES.filter((g) => !g.identified).map((g) => g.name)).toEqual(["target", "route", "token"]);
  });

  it.each(ROWS)("refuse $name at $gate with $status ($reason)", async (r) => {
    const d = r.deps?.() ?? deps();
    // A row about a rate first spends the one request its bucket holds.
    if (r.gate === "rate") expect((await arrive({ target: r.target }, d)).kind).toBe("passed");
    const out = await arrive(r, d);
    expect(out.kind).toBe("refused");
    if (out.kind !== "refused") return;
    const recordedAs = out.gate.identified ? out.gate.records : out.gate.name;
    expect({ gate: recordedAs, status: out.refusal.status, reason: out.refusal.reason }).toEqual({ gate: r.gate, status: r.status, reason: r.reason });
    // Before identity nothing is known of the caller; after it, the refusal has a passage to record.
    expect(out.passage === null).toBe(!out.gate.identified);
    if (r.status === 429) expect(Number(out.refusal.headers?.["retry-after"])).toBeGreaterThanOrEqual(1);
  });

  it("let a request through every gate, with what they learnt: the installation, the attributes and what a watch is served", async () => {
    const d = deps();
    const out = await arrive({ target: "/clusters/embedded/apis/openfief.io/v1alpha1/watch/namespaces/openfief/plugins/ledger-view" }, d);
    expect(out.kind).toBe("passed");
    if (out.kind !== "passed") return;
    expect(out.passage.installation?.name).toBe("ledger-view");
    expect(out.passage.attributes).toMatchObject({ verb: "watch", name: "ledger-view" });
    expect(out.passage.served).toEqual({ fieldSelector: "metadata.name=ledger-view", labelSelector: "", name: "ledger-view" });
    expect(out.passage.slot?.kind).toBe("watch");
    expect(d.watches.open).toBe(1);
    out.passage.slot?.release();
    expect(d.watches.open).toBe(0);
  });

  it("fail at the gate that threw, with what was known", async () => {
    const d = { ...deps(), installations: { get: async () => { throw new Error("log unreadable"); }, byName: async () => null } };
    const out = await arrive({ target: PLUGINS }, d);
    expect(out).toMatchObject({ kind: "failed", gate: { name: "installation" } });
    expect(out.kind === "failed" && out.passage?.claims.sub).toBe("alice");
  });

  it("skip the gates of the other route: an installation route is never parsed as a Kubernetes request", async () => {
    const out = await arrive({ target: () => `/installations/${ids["ledger-view"]}/controller/status`, headers: { "impersonate-user": "admin" } }, deps());
    expect(out.kind).toBe("passed");
  });
});
