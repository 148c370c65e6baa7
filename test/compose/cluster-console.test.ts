/**
 * The console and the API in a cluster, against the fake API server: sign-in with a token the
 * cluster's TokenReview accepts, roles from SubjectAccessReviews on the stored RBAC, a viewer who
 * cannot approve, an owner whose approval is written to the PluginGrant as the user (the
 * impersonation headers asserted, one `Impersonate-Group` line per group) and recorded under the
 * same user's name, bad and expired tokens refused, and an API server that does not answer
 * refusing everyone (fail closed). The log is the cluster's: PostgreSQL.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { openLogAt } from "../../src/app/index.js";
import { observe } from "../../src/compose/index.js";
import type { StoreLocation } from "../../src/app/index.js";
import { startClusterConsole } from "../../src/compose/index.js";
import type { ClusterConsole } from "../../src/compose/index.js";
import type { EventLog } from "../../src/events/index.js";
import { pluginStream } from "../../src/events/index.js";
import { startLogDatabases } from "../events/postgres-support.js";
import type { LogDatabases } from "../events/postgres-support.js";
import { FakeApiServer } from "../kube/fake-apiserver.js";
import { bearer, call, cookieOf } from "../server/support.js";

const NS = "openfief";
const GRANTS = "/apis/openfief.io/v1alpha1/namespaces/openfief/plugingrants/nbp-fx";
const ALICE = { username: "alice@example.com", uid: "u-alice", groups: ["fief-owners", "system:authenticated"] };
const BOB = { username: "bob", uid: "u-bob", groups: ["system:authenticated"] };
const MALLORY = { username: "mallory", groups: ["system:authenticated"] };
/** Alice has the owner's review in the console's eyes, but no RBAC of her own in the API server (a reviewer that lies). */
const CAROL = { username: "carol", groups: ["system:authenticated"] };
const TOKENS: Record<string, Record<string, unknown>> = { "alice-token": ALICE, "bob-token": BOB, "mallory-token": MALLORY, "carol-token": CAROL };

let fake: FakeApiServer;
let dbs: LogDatabases;
let dir: string;
let loc: StoreLocation;
let running: ClusterConsole;
let log: EventLog;

const pluginDoc = parseYaml(readFileSync(join(import.meta.dirname, "../../examples/plugins/nbp-fx.yaml"), "utf8")) as Record<string, unknown>;
/** The grant in the cluster: v1's capability and data tier, not its egress host (which waits for approval). */
const grantSpec = { capabilities: ["connector"], egress: [], dataTiers: ["fx-rates"] };

function rbac(): void {
  const role = (name: string, rules: unknown[]) => fake.put({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name }, rules });
  role("openfief-owner", [
    { apiGroups: ["openfief.io"], resources: ["plugins"], verbs: ["get", "list", "watch"] },
    { apiGroups: ["openfief.io"], resources: ["plugingrants"], verbs: ["get", "list", "watch", "update", "patch", "create"] },
  ]);
  role("openfief-viewer", [{ apiGroups: ["openfief.io"], resources: ["plugins", "plugingrants"], verbs: ["get", "list", "watch"] }]);
  const bind = (name: string, roleName: string, subject: Record<string, string>) =>
    fake.put({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: roleName }, subjects: [subject] });
  bind("fief-owners", "openfief-owner", { kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "fief-owners" });
  bind("bob-views", "openfief-viewer", { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "bob" });
  bind("carol-views", "openfief-viewer", { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "carol" });
}

beforeAll(async () => {
  [fake, dbs] = await Promise.all([FakeApiServer.start(), startLogDatabases()]);
  fake.tokenReviewer = (token) => {
    const user = TOKENS[token];
    return user === undefined ? { authenticated: false, error: `[invalid bearer token, token has expired] ${token}` } : { authenticated: true, user, audiences: ["https://kubernetes.default.svc"] };
  };
  const lie = fake.accessReviewer;
  // Carol is an owner in the console's reviews only: the API server's own check of her write must still refuse it.
  fake.accessReviewer = (spec) => (spec["user"] === "carol" ? { allowed: true } : lie(spec));
  rbac();
  fake.put({ ...pluginDoc });
  fake.put({ apiVersion: "openfief.io/v1alpha1", kind: "PluginGrant", metadata: { name: "nbp-fx", namespace: NS }, spec: grantSpec });
  dir = mkdtempSync(join(tmpdir(), "openfief-cluster-console-"));
  // The cluster's one log, on PostgreSQL.
  const url = await dbs.fresh();
  loc = { kind: "postgres", url, shown: "cluster log" };
  // What the operator records of the cluster's resources.
  log = await openLogAt(loc);
  await observe(log, "plugin", "nbp-fx", pluginDoc["spec"] as never);
  await observe(log, "grant", "nbp-fx", grantSpec as never);
  running = await startClusterConsole({
    store: loc,
    kubeConfig: fake.kubeConfig("console-token"),
    dataDir: join(dir, "console"),
    server: { host: "127.0.0.1", port: 0 },
    reviewCacheMs: 0,
    logger: pino({ level: "silent" }),
  });
}, 30_000);

afterAll(async () => {
  await running?.stop();
  await log?.close();
  await fake?.close();
  await dbs?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const form = (body: string, extra: Record<string, string> = {}) => ({
  method: "POST",
  body,
  headers: { origin: running.url, "sec-fetch-site": "same-origin", "content-type": "application/x-www-form-urlencoded", ...extra },
});

async function signIn(token: string): Promise<string> {
  const r = await call(running.url, "/signin", form(`token=${encodeURIComponent(token)}`));
  expect(r.status).toBe(303);
  return cookieOf(r);
}

async function version(auth: Record<string, string>): Promise<string> {
  const r = await call(running.url, "/api/v1/plugins/nbp-fx", { headers: auth });
  expect(r.status).toBe(200);
  return String(r.headers.etag ?? "");
}

const grantWrites = () => fake.requests.filter((r) => r.path === GRANTS && (r.method === "PATCH" || r.method === "PUT"));

describe("signing in with the cluster's identity", () => {
  it("shows a token form, not sign-in links", async () => {
    const r = await call(running.url, "/signin");
    expect(r.status).toBe(200);
    expect(r.text).toContain('name="token"');
    expect(r.text).toContain("kubectl create token");
  });

  it("turns a TokenReview'd token into a console session naming the cluster's user and role", async () => {
    const cookie = await signIn("alice-token");
    const page = await call(running.url, "/plugins/nbp-fx", { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.text).toContain("alice@example.com");
    expect(page.text).toMatch(/<span class="role"[^>]*>owner<\/span>/);
    const review = fake.requestsTo("POST", "/apis/authentication.k8s.io/v1/tokenreviews").at(-1);
    expect((review?.body as { spec: { token: string } }).spec.token).toBe("alice-token");
    const sars = fake.requestsTo("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews").map((r) => (r.body as { spec: Record<string, unknown> }).spec);
    expect(sars).toContainEqual(expect.objectContaining({ user: "alice@example.com", groups: ALICE.groups, uid: "u-alice", resourceAttributes: expect.objectContaining({ verb: "update", group: "openfief.io", resource: "plugingrants", namespace: NS }) }));
  });

  it("serves the API to a bearer token the cluster accepts, each request reviewed", async () => {
    const before = fake.requestsTo("POST", "/apis/authentication.k8s.io/v1/tokenreviews").length;
    const r = await call(running.url, "/api/v1/plugins", { headers: bearer("bob-token") });
    expect(r.status).toBe(200);
    expect(fake.requestsTo("POST", "/apis/authentication.k8s.io/v1/tokenreviews").length).toBe(before + 1);
  });

  it("refuses a bad or expired token, and never repeats it", async () => {
    for (const token of ["expired-token", "x".repeat(40)]) {
      const api = await call(running.url, "/api/v1/plugins", { headers: bearer(token) });
      expect(api.status).toBe(401);
      expect(api.text).not.toContain(token);
      const page = await call(running.url, "/signin", form(`token=${token}`));
      expect(page.status).toBe(401);
      expect(page.text).not.toContain(token);
      expect(page.headers["set-cookie"]).toBeUndefined();
    }
  });

  it("refuses a user the cluster lets see no plugins", async () => {
    const r = await call(running.url, "/api/v1/plugins", { headers: bearer("mallory-token") });
    expect(r.status).toBe(403);
    expect((await call(running.url, "/signin", form("token=mallory-token"))).status).toBe(403);
  });

  it("refuses a sign-in form sent from another origin", async () => {
    const r = await call(running.url, "/signin", form("token=alice-token", { origin: "https://evil.example", "sec-fetch-site": "cross-site" }));
    expect(r.status).toBe(403);
    expect(r.headers["set-cookie"]).toBeUndefined();
  });

  it("ends a session whose role the cluster took away", async () => {
    const cookie = await signIn("bob-token");
    expect((await call(running.url, "/plugins", { headers: { cookie } })).status).toBe(200);
    const binding = fake.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "bob-views");
    fake.remove("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "bob-views");
    try {
      expect((await call(running.url, "/plugins", { headers: { cookie } })).status).toBe(403);
    } finally {
      fake.put(binding as Record<string, unknown>);
    }
  });
});

describe("approving in the cluster", () => {
  it("refuses a viewer's approval: nothing written to the cluster or the log", async () => {
    const writes = grantWrites().length;
    const head = await log.version(pluginStream("nbp-fx"));
    const r = await call(running.url, "/api/v1/plugins/nbp-fx/approve", { method: "POST", headers: { ...bearer("bob-token"), "if-match": await version(bearer("bob-token")) } });
    expect(r.status).toBe(403);
    const cookie = await signIn("bob-token");
    const viaForm = await call(running.url, "/plugins/nbp-fx/approve", form(`version=${head}`, { cookie }));
    expect(viaForm.status).toBe(403);
    expect(grantWrites().length).toBe(writes);
    expect(await log.version(pluginStream("nbp-fx"))).toBe(head);
  });

  it("refuses an approval the API server refuses as the user, even when the console's review allowed it", async () => {
    const writes = grantWrites().length;
    const head = await log.version(pluginStream("nbp-fx"));
    const r = await call(running.url, "/api/v1/plugins/nbp-fx/approve", { method: "POST", headers: { ...bearer("carol-token"), "if-match": await version(bearer("carol-token")) } });
    expect(r.status).toBe(403);
    const tried = grantWrites().slice(writes);
    expect(tried.map((w) => w.query["dryRun"])).toEqual(["All"]);
    expect(tried[0]?.headers["impersonate-user"]).toBe("carol");
    expect(await log.version(pluginStream("nbp-fx"))).toBe(head);
    expect(fake.get("openfief.io/v1alpha1", "PluginGrant", NS, "nbp-fx")?.["spec"]).toEqual(grantSpec);
  });

  it("patches an owner's approval into the PluginGrant as the user, and records it under the same name", async () => {
    const writes = grantWrites().length;
    const r = await call(running.url, "/api/v1/plugins/nbp-fx/approve", { method: "POST", headers: { ...bearer("alice-token"), "if-match": await version(bearer("alice-token")) } });
    expect(r.status).toBe(200);
    const approved = r.json<{ seq: number; approved: { egress: unknown[] } }>();
    expect(approved.approved.egress).toEqual([{ host: "api.nbp.pl", port: 443 }]);
    const made = grantWrites().slice(writes);
    expect(made.map((w) => [w.method, w.query["dryRun"] ?? null, w.contentType])).toEqual([
      ["PATCH", "All", "application/merge-patch+json"],
      ["PATCH", null, "application/merge-patch+json"],
    ]);
    for (const w of made) {
      const raw = w.rawHeaders ?? [];
      const pairs: [string, string][] = [];
      for (let i = 0; i < raw.length; i += 2) pairs.push([(raw[i] ?? "").toLowerCase(), raw[i + 1] ?? ""]);
      expect(pairs.filter(([k]) => k === "impersonate-user").map(([, v]) => v)).toEqual(["alice@example.com"]);
      expect(pairs.filter(([k]) => k === "impersonate-group").map(([, v]) => v)).toEqual(ALICE.groups);
      expect(pairs.filter(([k]) => k === "impersonate-uid").map(([, v]) => v)).toEqual(["u-alice"]);
      // The console's own credentials carry the request; the user is only impersonated.
      expect(w.client).toBe("console-token");
      expect((w.body as { metadata: { resourceVersion?: string } }).metadata.resourceVersion).toMatch(/^\d+$/);
    }
    const inCluster = fake.get("openfief.io/v1alpha1", "PluginGrant", NS, "nbp-fx")?.["spec"] as Record<string, unknown>;
    expect(inCluster["egress"]).toEqual([{ host: "api.nbp.pl", port: 443 }]);
    const grantEvent = (await log.read({ stream: pluginStream("nbp-fx"), type: ["grant.observed"] })).at(-1);
    expect(grantEvent?.seq).toBe(approved.seq);
    expect(grantEvent?.actor).toBe("owner:kube:alice@example.com");
    // The operator, seeing the PluginGrant change, finds it recorded already: the event keeps the user's name.
    await observe(log, "grant", "nbp-fx", inCluster as never);
    expect((await log.read({ stream: pluginStream("nbp-fx"), type: ["grant.observed"] })).at(-1)?.seq).toBe(approved.seq);
  });

  it("records the cluster's grant back when the write fails after its dry run, and approves nothing", async () => {
    // Ask for one more host: an upgrade of the Plugin, recorded as the operator would.
    const spec = structuredClone(pluginDoc["spec"]) as { manifest: { egress: Array<{ host: string }> } };
    spec.manifest.egress.push({ host: "static.nbp.pl" });
    fake.put({ ...pluginDoc, spec });
    await observe(log, "plugin", "nbp-fx", spec as never);
    const held = fake.get("openfief.io/v1alpha1", "PluginGrant", NS, "nbp-fx")?.["spec"];
    fake.interceptor = (r) => (r.method === "PATCH" && r.path === GRANTS && r.query["dryRun"] === undefined ? { status: 500, body: { kind: "Status", code: 500, message: "etcdserver: request timed out" } } : null);
    try {
      const r = await call(running.url, "/api/v1/plugins/nbp-fx/approve", { method: "POST", headers: { ...bearer("alice-token"), "if-match": await version(bearer("alice-token")) } });
      expect(r.status).toBe(503);
    } finally {
      fake.interceptor = () => null;
    }
    const grants = (await log.read({ stream: pluginStream("nbp-fx"), type: ["grant.observed"] })).slice(-2);
    expect(grants.map((e) => e.actor)).toEqual(["owner:kube:alice@example.com", "cluster"]);
    expect(grants[1]?.causedBy).toBe(grants[0]?.seq);
    expect(grants[1]?.data.spec).toEqual(held);
    expect(fake.get("openfief.io/v1alpha1", "PluginGrant", NS, "nbp-fx")?.["spec"]).toEqual(held);
    // Once the cluster answers again, the same approval goes through.
    const again = await call(running.url, "/api/v1/plugins/nbp-fx/approve", { method: "POST", headers: { ...bearer("alice-token"), "if-match": await version(bearer("alice-token")) } });
    expect(again.status).toBe(200);
    expect((fake.get("openfief.io/v1alpha1", "PluginGrant", NS, "nbp-fx")?.["spec"] as { egress: unknown[] }).egress).toContainEqual({ host: "static.nbp.pl", port: 443 });
  });

  it("refuses an approval against a version the owner did not see", async () => {
    const r = await call(running.url, "/api/v1/plugins/nbp-fx/approve", { method: "POST", headers: { ...bearer("alice-token"), "if-match": '"1"' } });
    expect(r.status).toBe(412);
  });

  it("leaves Plugins and grants to kubectl: apply and delete are refused", async () => {
    const r = await call(running.url, "/api/v1/plugins/nbp-fx", { method: "DELETE", headers: bearer("alice-token") });
    expect(r.status).toBe(409);
    expect(r.json<{ message: string }>().message).toContain("kubectl");
  });
});

describe("an API server that does not answer", () => {
  it("refuses every sign-in and request (fail closed)", async () => {
    const gone = await FakeApiServer.start();
    const kubeConfig = gone.kubeConfig("console-token");
    await gone.close();
    const other = await startClusterConsole({ store: loc, kubeConfig, dataDir: join(dir, "console-2"), server: { host: "127.0.0.1", port: 0 }, logger: pino({ level: "silent" }) });
    try {
      const api = await call(other.url, "/api/v1/plugins", { headers: bearer("alice-token") });
      expect(api.status).toBe(503);
      const page = await call(other.url, "/signin", { ...form("token=alice-token"), headers: { ...form("").headers, origin: other.url } });
      expect(page.status).toBe(503);
      expect(page.headers["set-cookie"]).toBeUndefined();
    } finally {
      await other.stop();
    }
  });
});
