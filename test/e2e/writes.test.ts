/**
 * An owner's write either records and succeeds, or refuses and records nothing — never both
 * (docs/adr/0107). Each row runs one write as a user would — the `openfief` command as a process
 * (the bundle), then the HTTP API — and checks its exit code or status against how far the log's
 * head moved. A version that cannot run whatever is approved is refused with a code naming its
 * blocker (docs/adr/0108).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDataStore } from "../../src/app/index.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";
import { bearer, call } from "../server/support.js";
import { ok, ROOT, spawnOpenfief } from "./support.js";

const SIGNERS = join(ROOT, "examples", "trusted-signers.json");
const LAYOUT = join(ROOT, "examples", "oci");
const V1_IMAGE = "localhost/openfief-demo/nbp-fx@sha256:32a155bf13262adffa93e0d7023b17306472f1dcb8d93c686bfe850e9dc594cb";
const SCHEMA = ", configSchema: {type: object, properties: {region: {type: string}}, additionalProperties: false}";

const plugin = (name: string, extra = "", config = "") => `apiVersion: openfief.io/v1alpha1
kind: Plugin
metadata: {name: ${name}}
spec:
  image: ${V1_IMAGE}
${config === "" ? "" : `  config: ${config}\n`}  manifest: {capabilities: [connector], egress: [{host: api.nbp.pl}], secrets: [], dataTiers: []${extra}}
`;
const grant = (name: string) => `apiVersion: openfief.io/v1alpha1
kind: PluginGrant
metadata: {name: ${name}}
spec: {capabilities: [connector]}
`;

let dir: string;
let data: string;

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

async function head(folder: string): Promise<number> {
  const store = await openDataStore(folder);
  try {
    return store.head();
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-writes-"));
  data = join(dir, "data");
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), "--data", data]);
  await ok(["reconcile", "--data", data, "--oci-layout", LAYOUT, "--trusted-signers", SIGNERS]);
  await ok(["apply", "-f", join(ROOT, "examples", "upgrade"), "--data", data]);
  // A twin of nbp-fx v1 declaring another manifest than its image's signed label: its signature is refused.
  await ok(["apply", "-f", await file("twin.yaml", `${plugin("twin", ", configSchema: {type: object}")}---\n${grant("twin")}`), "--data", data]);
  await ok(["reconcile", "--data", data]);
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the openfief command (the bundle, as a process)", () => {
  it.each<[string, () => Promise<string[]>, number, "records" | "records nothing", RegExp | null]>([
    ["apply of a new plugin records it", async () => ["apply", "-f", await file("new.yaml", `${plugin("fresh")}---\n${grant("fresh")}`)], 0, "records", null],
    ["apply of the same documents again records nothing, and succeeds", async () => ["apply", "-f", join(dir, "new.yaml")], 0, "records nothing", null],
    ["apply of a config its schema refuses records it and warns, with the why to run", async () => ["apply", "-f", await file("conf.yaml", `${plugin("conf", SCHEMA, "{region: 7}")}---\n${grant("conf")}`)], 0, "records", /^warning: plugin\/conf will not run with this config.*spec\.config\.region.*openfief why conf/m],
    ["apply of a document that does not validate is refused", async () => ["apply", "-f", await file("bad.yaml", plugin("Bad_Name"))], 2, "records nothing", /Bad_Name/],
    ["approve of a version whose config its schema refuses is refused, naming the blocker", async () => ["approve", "conf"], 1, "records nothing", /nothing approved \(config_refused\).*its config does not match its schema: spec\.config\.region/],
    ["approve of a version whose signature was refused is refused, naming the blocker", async () => ["approve", "twin"], 1, "records nothing", /nothing approved \(signature_refused\).*its signature was refused: the Plugin's manifest is not the one its image was signed with \(manifest_mismatch\)/],
    ["approve of what is pending records the grant edit", async () => ["approve", "nbp-fx"], 0, "records", null],
    ["approve with nothing pending records nothing, and succeeds", async () => ["approve", "nbp-fx"], 0, "records nothing", null],
    ["approve of a plugin that does not exist is refused", async () => ["approve", "ghost"], 1, "records nothing", /ghost does not exist/],
    ["delete of a grant records it", async () => ["delete", "grant", "fresh"], 0, "records", null],
    ["delete of what does not exist is refused", async () => ["delete", "grant", "fresh"], 1, "records nothing", /does not exist/],
    ["delete of an unknown kind is refused", async () => ["delete", "pods", "fresh"], 2, "records nothing", /unknown kind/],
  ])("%s", async (_what, args, code, effect, stderr) => {
    const before = await head(data);
    const r = await spawnOpenfief([...(await args()), "--data", data]);
    const after = await head(data);
    expect(r.code, r.stderr).toBe(code);
    // The rule itself: a command that fails has recorded nothing.
    if (r.code !== 0) expect(after).toBe(before);
    expect(effect === "records" ? after > before : after === before).toBe(true);
    if (stderr !== null) expect(r.stderr).toMatch(stderr);
  }, 60_000);
});

describe("the HTTP API", () => {
  let demo: ConsoleDemo;
  let headers: Record<string, string>;
  beforeAll(async () => {
    demo = await startConsoleDemo({ history: false });
    headers = { ...bearer(await demo.token("alice", "owner")), origin: demo.url };
  }, 60_000);
  afterAll(async () => {
    await demo.stop();
  });

  const apply = (body: string) => ({ path: "/api/v1/apply", method: "POST", headers: { "content-type": "application/yaml" }, body });
  const approve = async (name: string) => ({ path: `/api/v1/plugins/${name}/approve`, method: "POST", headers: { "if-match": (await call(demo.url, `/api/v1/plugins/${name}`, { headers })).headers.etag ?? "" } });

  it.each<[string, () => Promise<{ path: string; method: string; headers?: Record<string, string>; body?: string }>, number, "records" | "records nothing", RegExp | null]>([
    ["apply of a config its schema refuses records it and answers 200 with the problems", async () => apply(`${plugin("conf", SCHEMA, "{region: 7}")}---\n${grant("conf")}`), 200, "records", /"configErrors":\[\{"code":"config_mismatch","path":"spec\.config\.region"/],
    ["apply of a document that does not validate is refused", async () => apply(plugin("Bad_Name")), 422, "records nothing", /invalid_resource/],
    ["approve of a version whose config its schema refuses is refused, naming the blocker", () => approve("conf"), 409, "records nothing", /"code":"config_refused"/],
    ["approve of what is pending records the grant edit", () => approve("nbp-fx"), 200, "records", null],
    ["delete of a grant records it", async () => ({ path: "/api/v1/grants/conf", method: "DELETE" }), 200, "records", null],
    ["delete of what does not exist is refused", async () => ({ path: "/api/v1/grants/conf", method: "DELETE" }), 404, "records nothing", /not_found/],
  ])("%s", async (_what, ask, status, effect, body) => {
    const store = demo.cp.runtime.store;
    const a = await ask();
    const before = await store.head();
    const r = await call(demo.url, a.path, { method: a.method, headers: { ...headers, ...a.headers }, ...(a.body === undefined ? {} : { body: a.body }) });
    expect(r.status, r.text).toBe(status);
    if (r.status !== 200) expect(await store.head()).toBe(before);
    expect(effect === "records" ? await store.head() > before : await store.head() === before).toBe(true);
    if (body !== null) expect(JSON.stringify(r.json())).toMatch(body);
  }, 30_000);

  it("leaves a blocked version out of what waits for approval, and says what blocks it", async () => {
    const pending = (await call(demo.url, "/api/v1/pending", { headers })).json<{ pending: { name: string }[] }>().pending.map((p) => p.name);
    expect(pending).not.toContain("conf");
    const rows = (await call(demo.url, "/api/v1/plugins", { headers })).json<{ plugins: { name: string; blockers: { code: string }[] }[] }>().plugins;
    expect(rows.find((p) => p.name === "conf")?.blockers.map((b) => b.code)).toEqual(["config_mismatch"]);
    const view = (await call(demo.url, "/api/v1/plugins/conf", { headers })).json<{ pending: { blockers: { code: string }[] } | null }>();
    expect(view.pending?.blockers.map((b) => b.code)).toEqual(["config_mismatch"]);
  });
});
