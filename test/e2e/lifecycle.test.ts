/**
 * The product end to end through the CLI, on the shipped demo: install, first run, an upgrade held
 * back with exactly its new host pending, `why`, a grant narrowed while the upgrade waits, `approve`,
 * the upgrade running, a signature refused keeping the previous version, uninstall; then the log
 * verifies, every decision re-checks, and `replay --at` shows the state before the approval.
 */
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { buildDemoImage, DEMO_IMAGES } from "../../scripts/make-demo.js";
import { writeImageToLayout } from "../../src/trust/oci-layout.js";
import { json, ok, openfief, ROOT } from "./support.js";

interface Row { name: string; running: string | null; asked: string | null; verdict: string | null; pending: string[]; deleted: boolean }

let dir: string;
let data: string[];
let layout: string;
const V1 = "32a155bf";
const V2 = "ac327d8f";

async function rows(): Promise<Map<string, Row>> {
  return new Map((await json<Row[]>(["get", "plugins", ...data])).map((r) => [r.name, r]));
}

const ECB_MODULE = "37ca3117ba230ff39ccb7212faaef86a069771114f6048f3d7269f05127d2fe2";

async function allowList(): Promise<Record<string, string>> {
  const cm = parse(await readFile(join(dir, "cluster", "openfief-egress-allowlist.yaml"), "utf8")) as { data: Record<string, string> };
  return cm.data;
}

async function applyYaml(name: string, text: string): Promise<void> {
  const file = join(dir, name);
  await writeFile(file, text);
  await ok(["apply", "-f", file, ...data]);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-e2e-"));
  data = ["--data", join(dir, "data")];
  // A copy of the demo layout, plus one image nobody signed.
  layout = join(dir, "oci");
  await cp(join(ROOT, "examples", "oci"), layout, { recursive: true });
  const base = DEMO_IMAGES[0];
  if (base === undefined) throw new Error("no demo image");
  const unsigned = buildDemoImage({ ...base, version: "3.0.0-unsigned", tag: "nbp-fx-v3" });
  await writeImageToLayout(layout, { manifest: unsigned.manifest, blobs: unsigned.blobs, tag: "nbp-fx-v3" });
  await writeFile(join(dir, "unsigned-digest"), unsigned.digest);
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data]);
  await ok(["reconcile", ...data, "--oci-layout", layout, "--trusted-signers", join(ROOT, "examples", "trusted-signers.json"), "--out", join(dir, "cluster")]);
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the plugin lifecycle through the CLI", () => {
  it("runs the demo plugins on first install, with their objects and allow-lists written", async () => {
    const r = await rows();
    expect(r.get("nbp-fx")).toMatchObject({ verdict: "verified", pending: [] });
    expect(r.get("nbp-fx")?.running).toContain(V1);
    // ledger-view's digest moves with its UI bundle: the demo's Plugin names it.
    const ledger = (parse(await readFile(join(ROOT, "examples/plugins/ledger-view.yaml"), "utf8")) as { spec: { image: string } }).spec.image;
    expect(r.get("ledger-view")?.running).toContain((ledger.split("@sha256:")[1] ?? "?").slice(0, 8));
    // The WebAssembly plugin runs in the plugin host: only its identity and its Service selecting the
    // host are its own; the host is told what to run in openfief-plugin-host; an allow-list all the same.
    expect(r.get("ecb-fx")).toMatchObject({ verdict: "verified", pending: [], runtime: "wasm", module: ECB_MODULE });
    expect(r.get("nbp-fx")).toMatchObject({ runtime: "container", module: null });
    expect((await readdir(join(dir, "cluster", "plugins"))).sort()).toEqual(["ecb-fx.yaml", "ledger-view.yaml", "nbp-fx.yaml"]);
    const ecb = parseAllDocuments(await readFile(join(dir, "cluster", "plugins", "ecb-fx.yaml"), "utf8")).map((d) => d.toJSON() as { kind: string; spec?: { selector?: unknown } });
    expect(ecb.map((o) => o.kind)).toEqual(["ServiceAccount", "Service"]);
    expect(ecb[1]?.spec?.selector).toEqual({ "app.kubernetes.io/name": "openfief-plugin-host" });
    const hosted = parse(await readFile(join(dir, "cluster", "openfief-plugin-host.yaml"), "utf8")) as { data: Record<string, string> };
    expect(Object.keys(hosted.data)).toEqual(["ecb-fx"]);
    expect(JSON.parse(hosted.data["ecb-fx"] ?? "{}")).toMatchObject({ module: ECB_MODULE, origins: ["https://www.ecb.europa.eu"] });
    expect(await allowList()).toEqual({ "ecb-fx": "www.ecb.europa.eu:443\n", "ledger-view": "", "nbp-fx": "api.nbp.pl:443\n" });
  });

  it("holds back an upgrade that asks for a new host, with exactly that host pending", async () => {
    await ok(["apply", "-f", join(ROOT, "examples", "upgrade"), ...data]);
    await ok(["reconcile", ...data]);
    const nbp = (await rows()).get("nbp-fx");
    expect(nbp?.running).toContain(V1);
    expect(nbp?.asked).toContain(V2);
    expect(nbp?.pending).toEqual(["egress:static.nbp.pl:443"]);
    expect((await allowList())["nbp-fx"]).toBe("api.nbp.pl:443\n");
  });

  it("explains with why: the previous version keeps running because approval is pending", async () => {
    const text = await ok(["why", "nbp-fx", ...data]);
    expect(text).toMatch(/keeps running .*nbp-fx@sha256:32a155bf/);
    expect(text).toContain("Pending approval: egress static.nbp.pl:443");
    expect(text).toContain("the version asked for needs permissions the grant does not give");
    expect(text).toContain("Re-deciding from the log gives the same answer.");
    const answer = await json<{ plan: { outcome: string }; inputs: { currentDeployable: boolean }; chain: { type: string }[] }>(["why", "nbp-fx", ...data]);
    expect(answer.plan.outcome).toBe("previous");
    expect(answer.inputs.currentDeployable).toBe(true);
    expect(answer.chain.map((e) => e.type)).toContain("plugin.observed");
  });

  it("narrows the running version at once when the grant is narrowed while the upgrade waits", async () => {
    await applyYaml("narrow.yaml", [
      "apiVersion: openfief.io/v1alpha1", "kind: PluginGrant", "metadata: {name: nbp-fx}",
      "spec: {capabilities: [connector], dataTiers: [fx-rates]}", "",
    ].join("\n"));
    await ok(["reconcile", ...data]);
    const nbp = (await rows()).get("nbp-fx");
    expect(nbp?.running).toContain(V1);
    expect(nbp?.pending).toEqual(["egress:api.nbp.pl:443", "egress:static.nbp.pl:443"]);
    expect((await allowList())["nbp-fx"]).toBe("");
  });

  it("runs the upgrade once approve adds exactly the pending permissions to the grant", async () => {
    const out = await ok(["approve", "nbp-fx", ...data]);
    expect(out).toContain("approved egress api.nbp.pl:443, egress static.nbp.pl:443");
    await ok(["reconcile", ...data]);
    const nbp = (await rows()).get("nbp-fx");
    expect(nbp?.running).toContain(V2);
    expect(nbp?.pending).toEqual([]);
    expect((await allowList())["nbp-fx"]).toBe("api.nbp.pl:443\nstatic.nbp.pl:443\n");
    const again = await ok(["approve", "nbp-fx", ...data]);
    expect(again).toContain("nothing is pending approval");
  });

  it("keeps the previous version running when the new image's signature is refused", async () => {
    const digest = (await readFile(join(dir, "unsigned-digest"), "utf8")).trim();
    const v2 = await readFile(join(ROOT, "examples", "upgrade", "nbp-fx-v2.yaml"), "utf8");
    await applyYaml("v3.yaml", v2.replace(/sha256:[0-9a-f]{64}/, digest));
    await ok(["reconcile", ...data]);
    const nbp = (await rows()).get("nbp-fx");
    expect(nbp?.verdict).toBe("refused (unsigned)");
    expect(nbp?.running).toContain(V2);
    expect(await ok(["why", "nbp-fx", ...data])).toMatch(/cannot run: its signature was refused: it carries no signature that verifies \(unsigned\)/);
  });

  it("refuses bad input with a one-line reason and a non-zero exit", async () => {
    const bad = await openfief(["approve", "No_Such", ...data]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    const missing = await openfief(["why", "ghost", ...data]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no decision recorded for ghost");
  });

  it("uninstalls: the workload stops and the allow-list entry goes, the events stay", async () => {
    const before = (await ok(["log", "--plugin", "nbp-fx", "--json", ...data])).trim().split("\n").length;
    await ok(["delete", "plugin", "nbp-fx", ...data]);
    await ok(["reconcile", ...data]);
    expect((await readdir(join(dir, "cluster", "plugins"))).sort()).toEqual(["ecb-fx.yaml", "ledger-view.yaml"]);
    expect(await allowList()).toEqual({ "ecb-fx": "www.ecb.europa.eu:443\n", "ledger-view": "" });
    expect((await rows()).get("nbp-fx")).toMatchObject({ running: null, deleted: true });
    const after = (await ok(["log", "--plugin", "nbp-fx", "--json", ...data])).trim().split("\n");
    expect(after.length).toBeGreaterThan(before);
  });

  it("verifies the hash chain and re-checks every decision cleanly", async () => {
    expect(await json(["verify-log", ...data])).toMatchObject({ ok: true });
    const check = await json<{ checked: number; divergences: unknown[] }>(["check-decisions", ...data]);
    expect(check.divergences).toEqual([]);
    expect(check.checked).toBeGreaterThanOrEqual(6);
  });

  it("replays the state as it was before the approval", async () => {
    const approvals = (await ok(["log", "--type", "grant.observed", "--json", ...data])).trim().split("\n").map((l) => JSON.parse(l) as { seq: number; actor: string; causedBy: number | null });
    const approval = approvals.filter((e) => e.causedBy !== null).at(-1);
    expect(approval).toBeDefined();
    const state = await json<{ tables: { plugins: Record<string, { runningImage: string | null; pending: unknown }> } }>(["replay", "--at", String((approval?.seq ?? 1) - 1), ...data]);
    expect(state.tables.plugins["nbp-fx"]?.runningImage).toContain(V1);
    expect(state.tables.plugins["nbp-fx"]?.pending).not.toBeNull();
  });
});
