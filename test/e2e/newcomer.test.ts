/**
 * What a new user tripped on (issue 11, "From trying it as a new user would"), each with the
 * command that showed it: two plugins on one digest, a second `up` on one folder, a closed pipe,
 * inputs without limits, a refused config shown nowhere, several inputs and standard input, a
 * tampered log acted on, `why`'s wording, the CLI's consistency, and a data folder others could read.
 */
import { spawn } from "node:child_process";
import { chmodSync, existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDataStore, storeFile } from "../../src/app/index.js";
import { startControlPlane } from "../../src/compose/index.js";
import { tamper, withFile } from "../support/sqlite-file.js";
import { BIN, BUNDLE_ENV, freshBundle, json, ok, openfief, ROOT, spawnOpenfief } from "./support.js";

interface Row { name: string; status: string; verdict: string | null; problems: { code: string }[] }

let dir: string;
let counter = 0;
const SIGNERS = join(ROOT, "examples", "trusted-signers.json");
const LAYOUT = join(ROOT, "examples", "oci");
const V1_IMAGE = "localhost/openfief-demo/nbp-fx@sha256:32a155bf13262adffa93e0d7023b17306472f1dcb8d93c686bfe850e9dc594cb";

// The processes these tests start run the bundle users run: built first when the sources are newer.
beforeAll(freshBundle, 180_000);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-newcomer-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A fresh data folder with the demo plugins applied and reconciled. */
async function demoFolder(): Promise<string[]> {
  const data = ["--data", join(dir, `data-${++counter}`)];
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data]);
  await ok(["reconcile", ...data, "--oci-layout", LAYOUT, "--trusted-signers", SIGNERS]);
  return data;
}

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

const plugin = (name: string, image: string, extra = "") => `apiVersion: openfief.io/v1alpha1
kind: Plugin
metadata: {name: ${name}}
spec:
  image: ${image}
  manifest: {capabilities: [connector], egress: [], secrets: [], dataTiers: []${extra}}
`;
const grant = (name: string) => `apiVersion: openfief.io/v1alpha1
kind: PluginGrant
metadata: {name: ${name}}
spec: {capabilities: [connector]}
`;

/** Runs the real command with `input` on its standard input. */
function run(args: readonly string[], input = ""): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...BUNDLE_ENV } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** The events `openfief log --json ARGS` prints, one JSON object a line. */
async function logLines(args: readonly string[]): Promise<{ seq: number; type: string }[]> {
  return (await ok(["log", "--json", ...args])).trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { seq: number; type: string });
}

/** Runs `openfief up ARGS` until it says it is up (or prints `ready`), then stops it with SIGTERM. Its views listen on free ports. */
function upUntilReady(args: readonly string[], ready: RegExp = /openfief is up/): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // Free ports for the console and the views: parallel test files would otherwise all want 4780-4782.
    const views = ["--plugin-proxy-origin", "http://localhost:0", "--gateway-origin", "http://localhost:0"];
    const child = spawn(process.execPath, [BIN, "up", "--listen", "127.0.0.1:0", ...args, ...views], { cwd: ROOT, env: { ...process.env, ...BUNDLE_ENV } });
    let stdout = "";
    let stderr = "";
    let stopping = false;
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (!stopping && ready.test(stdout)) {
        stopping = true;
        child.kill("SIGTERM");
      }
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("1. two plugins on one image digest with different manifests", () => {
  it("get a verdict each, and re-checking appends nothing while the answers stay the same", async () => {
    const data = await demoFolder();
    await ok(["apply", "-f", await file("twin.yaml", `${plugin("twin", V1_IMAGE)}---\n${grant("twin")}`), ...data]);
    await ok(["reconcile", ...data]);
    const rows = new Map((await json<Row[]>(["get", "plugins", ...data])).map((r) => [r.name, r]));
    expect(rows.get("nbp-fx")?.verdict).toBe("verified");
    expect(rows.get("twin")?.verdict).toMatch(/^refused/);
    const before = (await logLines(["--type", "signature.verdict", ...data])).length;
    await ok(["reconcile", ...data]);
    await ok(["reconcile", ...data]);
    expect((await logLines(["--type", "signature.verdict", ...data])).length).toBe(before);
  });
});

describe("2. a second control plane on one data folder", () => {
  it("is refused, and told which process holds the folder", async () => {
    const data = join(dir, `up-${++counter}`);
    const logger = pino({ level: "silent" });
    const first = await startControlPlane({ dataDir: data, logger, egress: { port: 0 } });
    try {
      await expect(startControlPlane({ dataDir: data, logger, egress: { port: 0 } })).rejects.toThrow(new RegExp(`in use by openfief up \\(pid ${process.pid}, since .*egress http://127\\.0\\.0\\.1:${first.egress?.port}`));
      // Used by another process too (SQLite is shared; only the lock says no).
      const second = await run(["up", "--data", data, "--egress-port", "0"]);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/in use by openfief up \(pid \d+/);
    } finally {
      await first.stop();
    }
    const again = await startControlPlane({ dataDir: data, logger, egress: null });
    await again.stop();
  }, 60_000);
});

describe("3. a reader that goes away", () => {
  it("ends `openfief log | head -1` quietly, with no stack trace", async () => {
    const data = await demoFolder();
    const store = await openDataStore(data[1] as string);
    for (let i = 0; i < 40; i++) {
      await store.append(Array.from({ length: 100 }, (_, j) => ({ stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host: "api.nbp.pl", port: 443, allowed: true, reason: `granted ${i}-${j}`, rules: 1 } })));
    }
    await store.close();
    const r = await new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) => {
      const child = spawn("sh", ["-c", `node ${BIN} log ${data.join(" ")} | head -1`], { cwd: ROOT, env: { ...process.env, ...BUNDLE_ENV } });
      let stderr = "";
      let stdout = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.on("close", (code) => resolve({ code, stderr, stdout }));
    });
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  }, 60_000);
});

describe("4. inputs without limits", () => {
  it.each([
    ["a file over the size cap", async () => file("huge.yaml", `# ${"x".repeat(1_100_000)}\n${plugin("huge", V1_IMAGE)}`), /over the 1048576-byte limit/],
    ["an endless device", async () => "/dev/zero", /over the 1048576-byte limit/],
    ["a grant with more dataTiers than the CRD allows", async () => file("tiers.yaml", `apiVersion: openfief.io/v1alpha1\nkind: PluginGrant\nmetadata: {name: tiers}\nspec: {dataTiers: [${Array.from({ length: 5000 }, (_, i) => `t${i}`).join(", ")}]}\n`), /dataTiers/],
  ])("refuses %s before parsing it, with exit code 2", async (_what, make, message) => {
    const path = await make();
    const r = await openfief(["apply", "-f", path, "--data", join(dir, "limits")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  });
});

describe("5. a config its schema refuses", () => {
  it("is recorded with a warning saying why (apply exits 0: it recorded), and shows in get plugins", async () => {
    const data = await demoFolder();
    const schema = ", configSchema: {type: object, properties: {region: {type: string}}, additionalProperties: false}";
    const text = `${plugin("conf", V1_IMAGE, schema).replace("  manifest:", "  config: {region: 7}\n  manifest:")}---\n${grant("conf")}`;
    const r = await openfief(["apply", "-f", await file("conf.yaml", text), ...data]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^warning: plugin\/conf will not run with this config, which does not match its schema: spec\.config\.region/);
    await openfief(["reconcile", ...data]);
    const rows = new Map((await json<Row[]>(["get", "plugins", ...data])).map((x) => [x.name, x]));
    expect(rows.get("conf")?.problems.map((p) => p.code)).toContain("config_refused");
    expect(await ok(["get", "plugins", ...data])).toMatch(/conf .*config refused by its schema/);
  });
});

describe("6. several inputs, and standard input", () => {
  it("records every file given with -f, and reads - from standard input", async () => {
    const data = ["--data", join(dir, `multi-${++counter}`)];
    const a = await file("a.yaml", plugin("alpha", V1_IMAGE));
    const b = await file("b.yaml", plugin("beta", V1_IMAGE));
    const out = await ok(["apply", "-f", a, "-f", b, ...data]);
    expect(out).toContain("plugin/alpha recorded");
    expect(out).toContain("plugin/beta recorded");
    const piped = await run(["apply", "-f", "-", ...data], plugin("gamma", V1_IMAGE));
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain("plugin/gamma recorded");
  }, 60_000);
});

describe("7. a tampered log", () => {
  it("is not acted on, and verify-log notices dropped guards and restores them once the chain holds", async () => {
    const data = await demoFolder();
    withFile(storeFile(data[1] as string), (db) => db.exec("DROP TRIGGER events_no_update"));
    const guards = await openfief(["verify-log", ...data]);
    expect(guards.code).toBe(1);
    expect(guards.stdout).toMatch(/guards .* are missing: events_no_update/);
    expect((await openfief(["reconcile", ...data])).stderr).toMatch(/guards are missing/);
    expect((await openfief(["verify-log", "--restore-guards", ...data])).stdout).toMatch(/events_no_update were missing and are restored/);
    expect((await openfief(["verify-log", ...data])).code).toBe(0);
    // An edit after the last verified point stops the next pass; an edit anywhere stops `up`.
    await ok(["apply", "-f", await file("late.yaml", plugin("late", V1_IMAGE)), ...data]);
    const tampered = await openDataStore(data[1] as string);
    const late = await tampered.head();
    tamper(tampered.location, `UPDATE events SET actor = 'mallory' WHERE seq = ${late}`);
    await tampered.restoreGuards();
    await tampered.close();
    const refused = await openfief(["reconcile", ...data]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`does not hold at event ${late}`));
    const early = await openDataStore(data[1] as string);
    tamper(early.location, "UPDATE events SET actor = 'mallory' WHERE seq = 2");
    await early.restoreGuards();
    await early.close();
    await expect(startControlPlane({ dataDir: data[1] as string, logger: pino({ level: "silent" }), egress: null })).rejects.toThrow(/does not hold at event 2/);
  });
});

describe("8. why's wording", () => {
  it("says what happens after a grant is narrowed, and after a running plugin is deleted", async () => {
    const data = await demoFolder();
    await ok(["apply", "-f", await file("narrow.yaml", "apiVersion: openfief.io/v1alpha1\nkind: PluginGrant\nmetadata: {name: nbp-fx}\nspec: {capabilities: [connector], egress: []}\n"), ...data]);
    await ok(["reconcile", ...data]);
    const narrowed = await ok(["why", "nbp-fx", ...data]);
    expect(narrowed).not.toMatch(/instead of/);
    expect(narrowed).toMatch(/keeps running .* as it ran before/);
    await ok(["delete", "plugin", "ledger-view", ...data]);
    await ok(["reconcile", ...data]);
    const deleted = await ok(["why", "ledger-view", ...data]);
    expect(deleted).toMatch(/runs nothing: its Plugin was deleted/);
    expect(deleted).not.toMatch(/no earlier version was running/);
  });

  it("counts one tampered decision once", async () => {
    const data = await demoFolder();
    const store = await openDataStore(data[1] as string);
    const [d] = await store.read({ type: "rollout.decided", limit: 1 });
    if (d === undefined) throw new Error("no decision");
    await store.append([{ stream: d.stream, type: "rollout.decided", actor: "mallory", data: { ...d.data, inputs: { ...d.data.inputs, currentDeployable: !d.data.inputs.currentDeployable }, plan: { ...d.data.plan, reasons: [] } } }]);
    const total = (await store.read({ type: "rollout.decided" })).length;
    await store.close();
    const r = await openfief(["check-decisions", ...data]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`1 of ${total} decisions do not reproduce`);
  });
});

describe("9. npm start again", () => {
  it("keeps the owner's state instead of applying the demo over it", async () => {
    const data = join(dir, `demo-${++counter}`);
    const logger = pino({ level: "silent" });
    // The same steps `up --demo` takes, through the same use cases.
    const { applyDemoFolder, demoSettings } = await import("../../src/app/index.js");
    const cp1 = await startControlPlane({ dataDir: data, logger, egress: null, settings: demoSettings() });
    await applyDemoFolder(cp1.runtime.store, "plugins");
    await applyDemoFolder(cp1.runtime.store, "upgrade");
    await cp1.pass();
    await cp1.stop();
    await ok(["approve", "nbp-fx", "--data", data]);
    const observed = (await logLines(["--type", "plugin.observed", "--data", data])).length;
    const again = await upUntilReady(["--demo", "--no-egress", "--data", data]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/The demo was applied to .* before: its state is kept/);
    expect(again.stdout).toMatch(/--reset/);
    // Where to see the view: the console's page of ledger-view, which frames it from the plugin proxy.
    expect(again.stdout).toMatch(/views: a view plugin's page in the console shows the plugin's own UI: http:\/\/127\.0\.0\.1:\d+\/plugins\/ledger-view\n {2}served by the plugin proxy on http:\/\/localhost:\d+/);
    // The approval stands (v2 runs with nothing pending), and the demo's v1 was not applied again.
    const nbp = (await json<(Row & { running: string | null; pending: string[] })[]>(["get", "plugins", "--data", data])).find((r) => r.name === "nbp-fx");
    expect(nbp).toMatchObject({ status: "running", pending: [] });
    expect(nbp?.running).toContain("ac327d8f");
    expect((await logLines(["--type", "plugin.observed", "--data", data])).length).toBe(observed);
  }, 60_000);

  it("prints JSON with --json, and keeps the JSON log in the data folder", async () => {
    const data = join(dir, `json-${++counter}`);
    const r = await upUntilReady(["--json", "--no-egress", "--data", data], /"up": true/);
    expect(JSON.parse(r.stdout)).toMatchObject({ up: true, data, egress: null, views: { pluginProxy: expect.stringMatching(/^http:\/\/localhost:[1-9][0-9]*$/), gateway: expect.stringMatching(/^http:\/\/localhost:[1-9][0-9]*\/clusters\/embedded$/) } });
    expect(existsSync(join(data, "openfief.log"))).toBe(true);
  }, 60_000);
});

describe("10. the CLI's consistency", () => {
  it.each<[string, string[], number, RegExp]>([
    ["an unknown option is a usage error", ["get", "plugins", "--nope"], 2, /unknown option/],
    ["a mistyped option is a usage error with the option it meant", ["get", "plugins", "--dta"], 2, /unknown option '--dta' \(Did you mean --data\?\)/],
    ["a missing argument is a usage error", ["why"], 2, /missing required argument/],
    ["an unknown kind to delete is a usage error", ["delete", "pod", "x"], 2, /unknown kind/],
    ["verify with a folder that is no OCI layout is a usage error", ["verify", `${V1_IMAGE}`, "--oci-layout", "/missing"], 2, /not an OCI image layout/],
    ["a token for a plugin the log does not know is refused", ["token", "nosuch"], 1, /no plugin nosuch/],
    ["the egress proxy outside a cluster says so, not only \"Invalid URL\"", ["egress"], 1, /not running in a Kubernetes pod .*--kubeconfig/],
    ["the operator outside a cluster says so", ["operator"], 1, /not running in a Kubernetes pod .*--kubeconfig/],
    ["a kubeconfig that cannot be read is named", ["egress", "--kubeconfig", "/nonexistent"], 1, /cannot read the kubeconfig \/nonexistent/],
  ])("%s", async (_what, args, code, message) => {
    const data = await demoFolder();
    const r = await openfief([...args, ...(["verify", "egress"].includes(args[0] ?? "") ? [] : data)]);
    expect(r.code).toBe(code);
    expect(r.stderr).toMatch(message);
    // One line, as every refusal reads, the parser's own included.
    expect(r.stderr).toMatch(/^openfief: [^\n]+\n$/);
  });

  it.each([
    ["a mistyped option", ["get", "plugins", "--dta", "x"], /^openfief: unknown option '--dta' \(Did you mean --data\?\)\n$/],
    ["a mistyped command", ["gte", "plugins"], /^openfief: unknown command 'gte' \(Did you mean get\?\)\n$/],
    ["a missing file", ["apply", "-f", "/nonexistent.yaml"], /^openfief: [^\n]*\/nonexistent\.yaml[^\n]*\n$/],
  ])("the compiled CLI answers %s in one line, exit 2", async (_what, args, message) => {
    const r = await spawnOpenfief(args);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: "" });
    expect(r.stderr).toMatch(message);
  });

  it("deletes a grant named as plugingrant, the way apply prints it", async () => {
    const data = await demoFolder();
    expect(await ok(["delete", "plugingrant", "ledger-view", ...data])).toMatch(/^plugingrant\/ledger-view deleted/);
  });

  it("stops following at once when --until is already past", async () => {
    const data = await demoFolder();
    const r = await openfief(["log", "--follow", "--until", "2020-01-01T00:00:00Z", ...data]);
    expect(r.code).toBe(0);
  });

  it("refuses a mistyped --data instead of starting a new signing key there", async () => {
    const missing = join(dir, "no-such-folder");
    const r = await openfief(["token", "nbp-fx", "--data", missing]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no event log in/);
    expect(existsSync(missing)).toBe(false);
  });

  it("refuses a signing key others can write, and names a garbage key file", async () => {
    const data = await demoFolder();
    await ok(["token", "nbp-fx", ...data]);
    const key = join(data[1] as string, "egress-signing-key.json");
    chmodSync(key, 0o666);
    expect((await openfief(["token", "nbp-fx", ...data])).stderr).toMatch(/writable by others .*chmod 600/);
    chmodSync(key, 0o600);
    writeFileSync(key, "not json");
    expect((await openfief(["token", "nbp-fx", ...data])).stderr).toContain(key);
    const garbageKey = await file("garbage.pem", "not a key");
    const v = await openfief(["verify", V1_IMAGE, "--oci-layout", LAYOUT, "--key", garbageKey]);
    expect(v.code).toBe(2);
    expect(v.stderr).toContain(garbageKey);
  });

  it.each([
    ["an unknown top-level field", "extra: 1\n", /unknown field "extra"/],
    ["a status", "status: {deployed: {}}\n", /unknown field "status".*status is the cluster's to write/],
  ])("refuses %s like an unknown spec field", async (_what, extra, message) => {
    const r = await openfief(["apply", "-f", await file("extra.yaml", `${plugin("extra", V1_IMAGE)}${extra}`), "--data", join(dir, "extra")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it("words what replay shows pending instead of printing raw JSON", async () => {
    const data = ["--data", join(dir, `replay-${++counter}`)];
    await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data]);
    await ok(["reconcile", ...data, "--oci-layout", LAYOUT, "--trusted-signers", SIGNERS]);
    await ok(["apply", "-f", join(ROOT, "examples", "upgrade"), ...data]);
    await ok(["reconcile", ...data]);
    const head = (await logLines(data)).at(-1)?.seq ?? 0;
    const out = await ok(["replay", "--at", String(head), ...data]);
    expect(out).toContain("egress static.nbp.pl:443");
    expect(out).not.toContain("{\"");
  });

  it("prints IPv6 destinations in brackets", async () => {
    const data = await demoFolder();
    const store = await openDataStore(data[1] as string);
    await store.append([{ stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host: "::1", port: 443, allowed: false, reason: "forbidden address", rules: 1 } }]);
    await store.close();
    expect(await ok(["log", "--type", "egress.decision", ...data])).toContain("refused [::1]:443 by policy");
  });

  it("says a granted host that does not resolve failed to reach it, and one not granted was refused by policy", async () => {
    const data = await demoFolder();
    const store = await openDataStore(data[1] as string);
    await store.append([
      { stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host: "api.nbp.pl", port: 443, allowed: false, reason: "dns_nxdomain", rules: 1, addresses: [] } },
      { stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host: "evil.example", port: 443, allowed: false, reason: "not_listed", rules: 1 } },
    ]);
    await store.close();
    const r = await spawnOpenfief(["log", "--type", "egress.decision", ...data]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("failed to reach api.nbp.pl:443: no such host (dns_nxdomain)");
    expect(r.stdout).toContain("refused evil.example:443 by policy: not on its allow-list (not_listed)");
    expect(r.stdout).not.toMatch(/denied/);
  });

  it("removes temporary files a killed writer left in the cluster folder", async () => {
    const data = await demoFolder();
    const plugins = join(data[1] as string, "cluster", "plugins");
    await writeFile(join(plugins, "nbp-fx.yaml.tmp-999999"), "half");
    await ok(["reconcile", ...data]);
    expect((await readdir(plugins)).filter((n) => n.includes(".tmp-"))).toEqual([]);
  });
});

/** Runs `openfief up ARGS` under umask 000 until it says it is up, calls `whileUp` with the folder as it is then, and stops it. */
function upWideOpen(args: readonly string[], whileUp: () => void): Promise<{ code: number | null; stdout: string; stderr: string; failure: unknown }> {
  return new Promise((resolve, reject) => {
    const views = ["--plugin-proxy-origin", "http://localhost:0", "--gateway-origin", "http://localhost:0"];
    // umask 000: whatever the code leaves to the umask comes out readable and writable by everyone.
    const child = spawn("/bin/sh", ["-c", 'umask 000 && exec "$0" "$@"', process.execPath, BIN, "up", "--listen", "127.0.0.1:0", "--egress-port", "0", ...args, ...views], { cwd: ROOT, env: { ...process.env, OPENFIEF_LOG_LEVEL: "warn" } });
    let stdout = "";
    let stderr = "";
    let failure: unknown = null;
    let stopping = false;
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (!stopping && /openfief is up/.test(stdout)) {
        stopping = true;
        try {
          whileUp();
        } catch (err) {
          failure = err;
        }
        child.kill("SIGTERM");
      }
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr, failure }));
  });
}

/** The mode of the folder and of each file directly in it, as the disk has them. */
function modes(data: string): Record<string, string> {
  const out: Record<string, string> = { ".": (statSync(data).mode & 0o777).toString(8) };
  for (const e of readdirSync(data, { withFileTypes: true })) if (e.isFile()) out[e.name] = (statSync(join(data, e.name)).mode & 0o777).toString(8);
  return out;
}

describe("11. a data folder others could read", () => {
  it("is made its owner's only (0700, every file 0600) by up, whatever the umask", async () => {
    const data = join(dir, `private-${++counter}`);
    let seen: Record<string, string> = {};
    const r = await upWideOpen(["--demo", "--data", data], () => (seen = modes(data)));
    if (r.failure !== null) throw r.failure;
    expect(r.code).toBe(0);
    // The log, its WAL and shared memory, up's own log, the settings, the lock, the keys.
    for (const name of ["openfief.db", "openfief.db-wal", "openfief.db-shm", "openfief.log", "settings.json", "up.lock", "session-key.json", "view-keys.json", "egress-signing-key.json", "jwks.json"]) {
      expect(seen[name], name).toBe("600");
    }
    expect(Object.entries(seen).filter(([, m]) => m !== "600")).toEqual([[".", "700"]]);
  }, 90_000);

  it("is tightened when an older version made it 0755 with files 0644, and says so", async () => {
    const data = join(dir, `older-${++counter}`);
    await ok(["apply", "-f", join(ROOT, "examples", "plugins"), "--data", data]);
    writeFileSync(join(data, "openfief.log"), "");
    writeFileSync(join(data, "settings.json"), "{}\n");
    chmodSync(data, 0o755);
    for (const f of ["openfief.db", "openfief.log", "settings.json"]) chmodSync(join(data, f), 0o644);
    const r = await upWideOpen(["--no-egress", "--data", data], () => undefined);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/made the data folder private to its owner \(it was made by an older version\): .*0755 → 0700.*openfief\.db 0644 → 0600/);
    expect(Object.entries(modes(data)).filter(([, m]) => m !== "600")).toEqual([[".", "700"]]);
  }, 90_000);

  it("is tightened by any command that opens it, which says so too", async () => {
    const data = await demoFolder();
    chmodSync(data[1] as string, 0o755);
    chmodSync(join(data[1] as string, "openfief.db"), 0o644);
    const r = await openfief(["get", "plugins", ...data]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/made the data folder private .*openfief\.db 0644 → 0600/);
    expect(modes(data[1] as string)).toMatchObject({ ".": "700", "openfief.db": "600" });
  });
});

/** Runs the real command (the bundle, through bin/) until `ready` shows on stdout or stderr, then stops it; inside `script` when `tty`, so it writes to a terminal. */
function upUntil(args: readonly string[], ready: RegExp, tty = false): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const argv = [BIN, "up", "--listen", "127.0.0.1:0", "--egress-port", "0", "--no-views", ...args];
    const child = tty
      ? spawn("script", ["-qec", [process.execPath, ...argv].map((a) => `'${a}'`).join(" "), "/dev/null"], { cwd: ROOT, env: { ...process.env, OPENFIEF_LOG_LEVEL: "info" } })
      : spawn(process.execPath, argv, { cwd: ROOT, env: { ...process.env, OPENFIEF_LOG_LEVEL: "info" } });
    let stdout = "";
    let stderr = "";
    let stopping = false;
    const check = (): void => {
      if (!stopping && ready.test(stdout + stderr)) {
        stopping = true;
        child.kill("SIGTERM");
      }
    };
    child.stdout.on("data", (d: Buffer) => ((stdout += d.toString()), check()));
    child.stderr.on("data", (d: Buffer) => ((stderr += d.toString()), check()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const jsonLines = (text: string): number => text.split(/\r?\n/).filter((l) => l.startsWith("{\"level\"")).length;

describe("12. a newcomer's first commands, through the bundle", () => {
  it("prints the version", async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string };
    const r = await spawnOpenfief(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^openfief ${version.replace(/\./g, "\\.")} \\(Node\\.js \\d+\\.\\d+\\.\\d+\\)\\n$`));
  });

  it.each<[string, (data: string[]) => string[], RegExp]>([
    ["a plugin the log never heard of", (data) => ["log", "--plugin", "unknwon", ...data], /^openfief: no plugin "unknwon" in the log/],
    ["a point past the end of the log", (data) => ["replay", "--at", "99999", ...data], /^openfief: --at 99999 is past the end of the log: it ends at event \d+ \(--at \d+ is the state now\)$/],
    ["a point that is neither a number nor a time", (data) => ["replay", "--at", "yesterday", ...data], /^openfief: --at must be an event's sequence number \(such as 42\) or an ISO-8601 time \(such as 2026-11-30T12:00:00Z\), not "yesterday"$/],
  ])("refuses %s in one line with exit code 2", async (_what, args, message) => {
    const data = await demoFolder();
    const r = await spawnOpenfief(args(data));
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(message);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  }, 60_000);

  it("names where the log ends in a refused replay", async () => {
    const data = await demoFolder();
    const head = (await logLines(data)).at(-1)?.seq ?? 0;
    const r = await spawnOpenfief(["replay", "--at", String(head + 1), ...data]);
    expect(r.stderr).toContain(`it ends at event ${head} (--at ${head} is the state now)`);
    expect((await spawnOpenfief(["replay", "--at", String(head), ...data])).code).toBe(0);
  }, 60_000);

  it.each<[string, () => Promise<string>, string[], RegExp]>([
    ["a file", () => file("a-file", "x"), ["log"], /is not a folder/],
    ["a path inside a file", async () => join(await file("another-file", "x"), "sub"), ["apply", "-f", join(ROOT, "examples", "plugins")], /is inside ".*another-file", which is not a folder/],
    ["a folder under /proc", async () => "/proc/openfief-data", ["apply", "-f", join(ROOT, "examples", "plugins")], /is under \/proc, which holds no files of its own/],
    ["/proc itself, to up", async () => "/proc", ["up", "--no-server", "--no-egress", "--no-views"], /is under \/proc/],
    ["a device", async () => "/dev/null", ["token", "nbp-fx"], /is not a folder/],
  ])("refuses --data that is %s in one line with exit code 2, without hanging", async (_what, make, args, message) => {
    const r = await spawnOpenfief([...args, "--data", await make()]);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  }, 30_000);

  it.skipIf(process.getuid?.() === 0)("refuses --data this user cannot read and write", async () => {
    const locked = join(dir, `locked-${++counter}`);
    await mkdir(locked, { mode: 0o000 });
    const r = await spawnOpenfief(["log", "--data", locked]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot be read and written by this user/);
  });

  it("says where a script's $OPENFIEF_DATA points when it is unusable", async () => {
    const r = await spawnOpenfief(["get", "plugins"], { OPENFIEF_DATA: "/proc/1" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^openfief: \$OPENFIEF_DATA "\/proc\/1" is under \/proc/);
  });

  it("writes lines for people and keeps the JSON log in the file when not on a terminal", async () => {
    const data = join(dir, `plain-${++counter}`);
    const r = await upUntil(["--data", data], /openfief is up/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/openfief is up: data in/);
    expect(jsonLines(r.stdout) + jsonLines(r.stderr)).toBe(0);
    const logged = (await readFile(join(data, "openfief.log"), "utf8")).trim().split("\n");
    expect(logged.length).toBeGreaterThan(0);
    for (const l of logged) expect(JSON.parse(l)).toHaveProperty("msg");
  }, 60_000);

  it.skipIf(!existsSync("/usr/bin/script"))("writes lines for people on a terminal", async () => {
    const data = join(dir, `tty-${++counter}`);
    const r = await upUntil(["--data", data], /openfief is up/, true);
    expect(r.stdout).toMatch(/openfief is up: data in/);
    expect(jsonLines(r.stdout)).toBe(0);
    expect((await readFile(join(data, "openfief.log"), "utf8")).length).toBeGreaterThan(0);
  }, 60_000);

  it("writes every JSON log line on stdout with --log-format json, and what it says for people on stderr", async () => {
    const data = join(dir, `jsonlog-${++counter}`);
    const r = await upUntil(["--data", data, "--log-format", "json"], /openfief is up/);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(jsonLines(r.stdout)).toBeGreaterThan(0);
    for (const l of lines) expect(() => JSON.parse(l) as unknown).not.toThrow();
    expect(r.stderr).toMatch(/openfief is up: data in/);
  }, 60_000);

  it("keeps stdout JSON lines only with --json and --log-format json", async () => {
    const data = join(dir, `jsonboth-${++counter}`);
    const r = await upUntil(["--data", data, "--json", "--log-format", "json"], /"up":true/);
    const parsed = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.filter((p) => p.up === true)).toHaveLength(1);
    expect(parsed.some((p) => typeof p.level === "number")).toBe(true);
  }, 60_000);

  it("refuses an unknown log format as a usage error", async () => {
    const r = await spawnOpenfief(["up", "--log-format", "yaml", "--data", join(dir, "never")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--log-format.*yaml/);
  });
});
