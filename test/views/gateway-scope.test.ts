/**
 * A view stays inside its rules, whatever form a request takes (the embedded upstream, through
 * real HTTP on 127.0.0.1): every verb × every path form (a named get, a collection, a field
 * selector naming the object or another, `?watch=1`, the `/watch/` prefix with and without a name,
 * a name beside a field selector) × rules with and without `resourceNames`, for every resource the
 * embedded API serves. Each allowed request serves exactly the objects its rules name, and its
 * decision (found by the answer's `Audit-ID`) says what was served.
 */
import { request } from "node:http";
import type { IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayStream, pluginStream } from "../../src/events/index.js";
import type { EventLog, GatewayDecision } from "../../src/events/index.js";
import type { JsonValue } from "../../src/plugins/index.js";
import { EmbeddedUpstream, LogInstallations, StoreDecisionRecorder, createGateway, rbacViewAccess, signPluginToken } from "../../src/views/index.js";
import type { PluginTokenClaims } from "../../src/views/index.js";
import { IMAGE, PLUGIN, PLUGIN_PROXY, ROLES, installView, serve, tempStore, tokens } from "./support.js";

type Resource = "plugins" | "plugingrants" | "events";
type Variant = "named" | "open";
const RESOURCES: readonly Resource[] = ["plugins", "plugingrants", "events"];
/** The object each resource's rules name, and another one. Event 1 is the first plugin.observed. */
const NAMED: Record<Resource, { n: string; other: string }> = { plugins: { n: PLUGIN, other: "other" }, plugingrants: { n: PLUGIN, other: "other" }, events: { n: "1", other: "2" } };
const OPEN_VIEW = "open-view";
const BASE = "/clusters/embedded/apis/openfief.io/v1alpha1";

function manifest(variant: Variant): JsonValue {
  const rule = (r: Resource) => ({ apiGroups: ["openfief.io"], resources: [r], verbs: ["get", "list", "watch"], ...(variant === "named" ? { resourceNames: [NAMED[r].n] } : {}) });
  return { capabilities: ["view"], egress: [], secrets: [], dataTiers: [], rbac: RESOURCES.map(rule), ui: { bundle: `sha256:${"b".repeat(64)}`, entry: "index.html" } };
}

/** What a row expects: the status, the gate of a refusal, and for an answer the names it serves. */
interface Row {
  readonly variant: Variant;
  readonly resource: Resource;
  readonly form: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly gate?: string;
  readonly reason?: string;
  /** Exactly these names served; or "all": the named one and at least one more. */
  readonly serves?: readonly string[] | "all";
  /** The verb recorded, and the field selector served. */
  readonly verb?: string;
  readonly servedField?: string;
}

function rows(): Row[] {
  const out: Row[] = [];
  for (const variant of ["named", "open"] as const) for (const resource of RESOURCES) rowsOf(variant, resource, out);
  return out;
}

/** The rows of one resource under one kind of rules. */
function rowsOf(variant: Variant, resource: Resource, out: Row[]): void {
  const { n, other } = NAMED[resource];
  const named = variant === "named";
  const col = `${BASE}/namespaces/openfief/${resource}`;
  const watchCol = `${BASE}/watch/namespaces/openfief/${resource}`;
  const fs = (x: string): string => `fieldSelector=metadata.name%3D${x}`;
  const T = "timeoutSeconds=1";
  const row = (form: string, method: string, path: string, e: Omit<Row, "variant" | "resource" | "form" | "method" | "path">): void => void out.push({ variant, resource, form, method, path, ...e });
  const narrow = (e: Omit<Row, "variant" | "resource" | "form" | "method" | "path" | "status">): Omit<Row, "variant" | "resource" | "form" | "method" | "path"> =>
    named ? { status: 403, gate: "plugin" } : { status: 200, ...e };
  row("a named get", "GET", `${col}/${n}`, { status: 200, serves: [n], verb: "get" });
  row("a named get of another", "GET", `${col}/${other}`, narrow({ serves: [other], verb: "get" }));
  row("a named get with ?watch=1 (a get)", "GET", `${col}/${n}?watch=1`, { status: 200, serves: [n], verb: "get" });
  row("a list", "GET", col, narrow({ serves: "all", verb: "list", servedField: "" }));
  row("a list named by a field selector", "GET", `${col}?${fs(n)}`, { status: 200, serves: [n], verb: "list", servedField: `metadata.name=${n}` });
  row("a list naming another by a field selector", "GET", `${col}?${fs(other)}`, narrow({ serves: [other], verb: "list", servedField: `metadata.name=${other}` }));
  row("a watch by ?watch=1", "GET", `${col}?watch=1&${T}`, narrow({ serves: "all", verb: "watch", servedField: "" }));
  row("a watch by ?watch=1 named by a field selector", "GET", `${col}?watch=1&${fs(n)}&${T}`, { status: 200, serves: [n], verb: "watch", servedField: `metadata.name=${n}` });
  row("a /watch/ of the collection", "GET", `${watchCol}?${T}`, narrow({ serves: "all", verb: "watch", servedField: "" }));
  row("a /watch/ naming the object in its path", "GET", `${watchCol}/${n}?${T}`, { status: 200, serves: [n], verb: "watch", servedField: `metadata.name=${n}` });
  row("a /watch/ naming another in its path", "GET", `${watchCol}/${other}?${T}`, narrow({ serves: [other], verb: "watch", servedField: `metadata.name=${other}` }));
  row("a /watch/ naming the object in its path and its field selector", "GET", `${watchCol}/${n}?${fs(n)}&${T}`, { status: 200, serves: [n], verb: "watch", servedField: `metadata.name=${n}` });
  row("a /watch/ naming the object in its path and another in its field selector", "GET", `${watchCol}/${n}?${fs(other)}&${T}`, { status: 400, gate: "request", reason: "name_mismatch" });
  row("a /watch/ naming the object in its path beside a field selector that does not parse", "GET", `${watchCol}/${n}?fieldSelector=x&${T}`, { status: 400, gate: "request", reason: "bad_field_selector" });
  row("a /watch/ naming the object in its path beside a selector on another field", "GET", `${watchCol}/${n}?fieldSelector=metadata.namespace%3Dopenfief&${T}`, { status: 400, gate: "request", reason: "name_mismatch" });
  row("a create", "POST", col, { status: 403, gate: "user" });
  row("an update", "PUT", `${col}/${n}`, { status: 403, gate: "user" });
  row("a patch", "PATCH", `${col}/${n}`, { status: 403, gate: "user" });
  row("a delete", "DELETE", `${col}/${n}`, { status: 403, gate: "user" });
  row("a deletecollection", "DELETE", col, { status: 403, gate: "user" });
}

const ROWS = rows();

let store: EventLog;
let cleanup: () => Promise<void>;
let gw: Awaited<ReturnType<typeof serve>>;
const answers = new Map<Row, { status: number; headers: IncomingHttpHeaders; body: string }>();

/** One request, read to its end (a watch ends by its `timeoutSeconds`). */
function exchange(url: string, method: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ hostname: u.hostname, port: Number(u.port), method, path, headers: method === "GET" || method === "DELETE" ? headers : { ...headers, "content-type": "application/json", "content-length": "2" } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end(method === "GET" || method === "DELETE" ? undefined : "{}");
  });
}

/** The names an answer served: a list's items, a watch's objects, or the one object got. */
function served(body: string): string[] {
  const lines = body.split("\n").filter((l) => l !== "");
  if (lines.length > 1 || (lines[0] ?? "").startsWith('{"type"')) return [...new Set(lines.map((l) => (JSON.parse(l) as { object: { metadata: { name: string } } }).object.metadata.name))];
  if (lines.length === 0) return [];
  const doc = JSON.parse(lines[0] as string) as { items?: { metadata: { name: string } }[]; metadata: { name: string } };
  return doc.items === undefined ? [doc.metadata.name] : doc.items.map((i) => i.metadata.name);
}

beforeAll(async () => {
  ({ store, cleanup } = await tempStore());
  await installView(store, PLUGIN, manifest("named"), { capabilities: ["view"], rbac: (manifest("named") as { rbac: JsonValue }).rbac });
  await installView(store, OPEN_VIEW, manifest("open"), { capabilities: ["view"], rbac: (manifest("open") as { rbac: JsonValue }).rbac });
  // Another plugin and its grant: what a view escaping its names would see.
  await store.append([{ stream: pluginStream("other"), type: "plugin.observed", actor: "owner:cli", data: { name: "other", spec: { image: IMAGE, manifest: {} } } }]);
  await store.append([{ stream: pluginStream("other"), type: "grant.observed", actor: "owner:cli", data: { name: "other", spec: { capabilities: [] } } }]);
  const t = await tokens();
  const installations = new LogInstallations(store);
  const gateway = createGateway({
    clusterId: "embedded", tokens: t.plugins, installations, access: rbacViewAccess(ROLES), upstream: new EmbeddedUpstream(store, ROLES),
    recorder: new StoreDecisionRecorder(store), pluginProxyOrigin: PLUGIN_PROXY,
    // Every row at once: well within any rate, cap or budget, so each answer is the rules' own and each decision is recorded.
    limits: { rate: { perUser: { perSecond: 10_000, burst: 10_000 }, perInstallation: { perSecond: 10_000, burst: 10_000 } }, refusals: { perSource: 1000, total: 10_000 } },
  });
  gw = await serve(() => {}, (server) => gateway.attach(server));
  const auth: Record<Variant, Record<string, string>> = { named: {}, open: {} };
  for (const [variant, name] of [["named", PLUGIN], ["open", OPEN_VIEW]] as const) {
    const inst = await installations.byName(name);
    if (inst === null) throw new Error(`no installation ${name}`);
    const claims: PluginTokenClaims = { sub: "alice", installation_id: inst.id, cluster_id: "embedded", plugin_name: inst.pluginName, plugin_version: inst.pluginVersion, definition_hash: inst.definitionHash, installation_name: name };
    auth[variant] = { authorization: `Bearer ${(await signPluginToken(t.signer, claims)).token}` };
  }
  const results = await Promise.all(ROWS.map((r) => exchange(gw.url, r.method, r.path, auth[r.variant])));
  ROWS.forEach((r, i) => answers.set(r, results[i] as { status: number; headers: IncomingHttpHeaders; body: string }));
}, 60_000);

afterAll(async () => {
  await gw.close();
  await cleanup();
});

async function decisionOf(r: Row, requestId: string): Promise<GatewayDecision | undefined> {
  const stream = gatewayStream(r.variant === "named" ? PLUGIN : OPEN_VIEW);
  return (await store.read({ stream, type: "gateway.decision" })).map((e) => e.data).find((d) => d.requestId === requestId);
}

describe("every verb and path form, with and without resourceNames, for every resource", () => {
  it.each(ROWS)("$variant rules: $form of $resource ($method) is $status", async (r) => {
    const a = answers.get(r);
    expect(a?.status).toBe(r.status);
    const id = String(a?.headers["audit-id"] ?? "");
    const d = await decisionOf(r, id);
    expect(d).toBeDefined();
    if (r.status !== 200) {
      expect(d).toMatchObject({ decision: "deny", gate: r.gate, status: r.status, ...(r.reason === undefined ? {} : { reason: r.reason }) });
      expect(d?.served).toBeUndefined();
      return;
    }
    const names = served(a?.body ?? "");
    if (r.serves === "all") {
      expect(names).toContain(NAMED[r.resource].n);
      expect(names.length).toBeGreaterThan(1);
    } else expect(names).toEqual(r.serves);
    expect(d).toMatchObject({ decision: "allow", gate: "upstream", attributes: { verb: r.verb, resource: r.resource } });
    if (r.servedField === undefined) expect(d?.served).toBeUndefined();
    else expect(d?.served).toEqual({ fieldSelector: r.servedField, labelSelector: "" });
  });

  it("covers every resource the embedded API serves, each with and without names", () => {
    for (const v of ["named", "open"]) for (const res of RESOURCES) expect(ROWS.filter((r) => r.variant === v && r.resource === res).length).toBeGreaterThanOrEqual(20);
  });
});
