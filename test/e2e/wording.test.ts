/**
 * What the `openfief` command (the bundle, as a process) says over the demo: who signed each
 * image and what that means, that the embedded mode only writes a container plugin's objects out,
 * a version that cannot run shown with its blocker instead of an approval, and the log in the
 * words the console uses — a grant edit as what it changed, a rollout decision as what happened,
 * a plugin's signature and config verdicts among its events.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok, ROOT, spawnOpenfief } from "./support.js";

const SIGNERS = join(ROOT, "examples", "trusted-signers.json");
const LAYOUT = join(ROOT, "examples", "oci");

let dir: string;
let data: string[];

/** Runs the bundle and returns what it printed, failing on a non-zero exit. */
async function run(args: readonly string[]): Promise<string> {
  const r = await spawnOpenfief([...args, ...data]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-wording-"));
  data = ["--data", join(dir, "data")];
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data]);
  await ok(["reconcile", ...data, "--oci-layout", LAYOUT, "--trusted-signers", SIGNERS]);
  await ok(["apply", "-f", join(ROOT, "examples", "upgrade"), ...data]);
  // nbp-fx v1 under another name, its config failing its signed schema: it cannot run whatever is approved.
  const v1 = (await readFile(join(ROOT, "examples", "plugins", "nbp-fx.yaml"), "utf8")).replace(/name: nbp-fx/, "name: conf").replace(/startDate: .*/, "startDate: 7");
  await writeFile(join(dir, "conf.yaml"), `${v1}---\napiVersion: openfief.io/v1alpha1\nkind: PluginGrant\nmetadata: {name: conf}\nspec: {capabilities: [connector]}\n`);
  await ok(["apply", "-f", join(dir, "conf.yaml"), ...data]);
  await ok(["reconcile", ...data]);
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("get plugins", () => {
  it("says who signed each image, that nothing runs a container here, and what blocks a version instead of what it waits for", async () => {
    const out = await run(["get", "plugins"]);
    const row = (name: string) => out.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
    expect(out.split("\n")[0]).toMatch(/^NAME +STATUS +RUNTIME +RUNNING +ASKED FOR +SIGNATURE +PENDING/);
    expect(row("nbp-fx")).toMatch(/held back +objects only .* signed by demo-owner \(not as the catalog lists nbp-fx\) +egress:static\.nbp\.pl:443/);
    expect(out).toContain("nbp-fx: catalog lists nbp-fx at sha256:32a155bf1326 by openfief-release; this image is sha256:ac327d8f7783; not verified.");
    expect(row("ecb-fx")).toMatch(/running +wasm 37ca3117ba23/);
    // conf runs nbp-fx v1's digest, which the catalog pins: only the digest counts.
    expect(row("conf")).toMatch(/in the catalog \(openfief-release\) +\(blocked by its config\) .*config refused by its schema/);
    expect(out).not.toMatch(/unverified| container +\S+@/);
    expect(out).toContain(`RUNTIME "objects only": objects written to ${join(dir, "data", "cluster")} (no container runtime in the embedded mode).`);
    expect(out).toMatch(/^SIGNATURE "signed by NAME": a signer you trust signed the image asked for, so it may run; /m);
    expect(out).toMatch(/^blocked: the version asked for cannot run whatever is approved; openfief why NAME says what to fix\.$/m);
  }, 60_000);
});

describe("why", () => {
  it("names what blocks a version right after what runs, and suggests no approval", async () => {
    const lines = (await run(["why", "conf"])).split("\n");
    expect(lines[0]).toMatch(/^conf runs nothing \(decided at event \d+/);
    expect(lines[1]).toMatch(/cannot run: its config does not match its schema: spec\.config\.startDate: must be string\.$/);
    expect(lines.join("\n")).toMatch(/It also asks for egress api\.nbp\.pl:443, data tier fx-rates beyond its grant; approving that would not make it run/);
    expect(lines.join("\n")).not.toMatch(/openfief approve/);
  }, 60_000);
});

describe("the log of a plugin", () => {
  it("holds its signature and config verdicts, and words each event as what happened", async () => {
    const out = await run(["log", "--plugin", "nbp-fx"]);
    expect(out).toMatch(/trust +signature\.verdict +reconciler +the signature check of nbp-fx@sha256:32a155bf1326: signed by demo-owner, a signer you trust and openfief-release, the catalog's publisher; in the catalog/);
    expect(out).toMatch(/trust +signature\.verdict +reconciler +the signature check of nbp-fx@sha256:ac327d8f7783: signed by demo-owner, a signer you trust; not in the catalog/);
    expect(out).toMatch(/config\.verdict +reconciler +the config matches the schema of nbp-fx@sha256:ac327d8f7783/);
    expect(out).toMatch(/grant\.observed +owner:cli +the grant was set by owner:cli: \+capability connector, \+egress api\.nbp\.pl:443, \+data tier fx-rates/);
    expect(out).toMatch(/rollout\.decided +reconciler +keeps nbp-fx@sha256:32a155bf1326 running under the current grant; nbp-fx@sha256:ac327d8f7783 waits for approval of egress static\.nbp\.pl:443/);
    expect(out).toMatch(/workload\.applied .*the workload was applied to \S+ \(its objects only: no container runtime in the embedded mode\)/);
    expect(out).not.toContain("a rollout decision (");
    // Another plugin's verdicts are not its story.
    expect(out).not.toMatch(/ecb-fx@|ledger-view@/);
  }, 60_000);

  it("words an approval as the permission it added", async () => {
    await run(["approve", "nbp-fx"]);
    const out = await run(["log", "--plugin", "nbp-fx", "--type", "grant.observed"]);
    expect(out.trim().split("\n").at(-1)).toMatch(/the grant was set by owner:cli: \+egress static\.nbp\.pl:443( ← \d+)?$/);
  }, 60_000);
});
