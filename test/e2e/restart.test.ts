/**
 * Restart safety: the reconciler killed (SIGKILL, no clean-up) right after any of its appends,
 * then started again, converges to exactly the state of a run that was never interrupted — the
 * same decisions, the same objects and allow-lists, and not one event duplicated.
 */
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, ok, ROOT, spawnOpenfief } from "./support.js";

let base: string;

interface Snapshot {
  readonly counts: Record<string, number>;
  readonly plugins: unknown;
  readonly files: Record<string, string>;
}

function flags(dir: string): string[] {
  return ["--data", join(dir, "data"), "--out", join(dir, "cluster"), "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json")];
}

async function snapshot(dir: string): Promise<Snapshot> {
  const data = ["--data", join(dir, "data")];
  const lines = (await ok(["log", "--json", ...data])).trim().split("\n").map((l) => JSON.parse(l) as { stream: string; type: string });
  const counts: Record<string, number> = {};
  for (const e of lines) counts[`${e.stream} ${e.type}`] = (counts[`${e.stream} ${e.type}`] ?? 0) + 1;
  const files: Record<string, string> = {};
  for (const f of await readdir(join(dir, "cluster", "plugins"))) files[f] = await readFile(join(dir, "cluster", "plugins", f), "utf8");
  files["allowlist"] = await readFile(join(dir, "cluster", "openfief-egress-allowlist.yaml"), "utf8");
  // Where the workload was written names the run's own folder: the same place, for every run.
  // Since when an image is verified is the time of the run's own catalog event: the same event, for every run.
  const plugins = JSON.parse(JSON.stringify(await json(["get", "plugins", ...data])).split(dir).join("<run>").replace(/"since":"[^"]+"/g, '"since":"<time>"')) as unknown;
  return { counts, plugins, files };
}

async function install(dir: string): Promise<void> {
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), "--data", join(dir, "data")]);
}

let reference: Snapshot;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), "openfief-restart-"));
  const dir = join(base, "reference");
  await install(dir);
  await ok(["reconcile", ...flags(dir)]);
  reference = await snapshot(dir);
}, 60_000);

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

describe("restart safety", () => {
  it("records each step of an uninterrupted reconcile exactly once", () => {
    for (const plugin of ["ecb-fx", "ledger-view", "nbp-fx"]) {
      for (const type of ["config.verdict", "rollout.decided", "workload.desired", "workload.applied"]) {
        expect(reference.counts[`plugin/${plugin} ${type}`], `${plugin} ${type}`).toBe(1);
      }
    }
    expect(reference.counts["trust signature.verdict"]).toBe(3);
    // The catalog is recorded once, before the first verdict that cites it, and not again on a restart.
    expect(reference.counts["trust catalog.observed"]).toBe(1);
  });

  it.each([1, 2, 3, 5, 6, 8, 9])("converges to the same state after a kill right after append %i", async (n) => {
    const dir = join(base, `kill-${n}`);
    await install(dir);
    const killed = await spawnOpenfief(["reconcile", ...flags(dir)], { OPENFIEF_TEST_KILL_AFTER_APPENDS: String(n) });
    expect(killed.signal).toBe("SIGKILL");
    await ok(["reconcile", ...flags(dir)]);
    const after = await snapshot(dir);
    expect(after).toEqual(reference);
    // A further pass finds nothing to do.
    await ok(["reconcile", ...flags(dir)]);
    expect((await snapshot(dir)).counts).toEqual(reference.counts);
    expect(await json(["check-decisions", "--data", join(dir, "data")])).toMatchObject({ divergences: [] });
    expect(await json(["verify-log", "--data", join(dir, "data")])).toMatchObject({ ok: true });
  }, 60_000);
});
