/**
 * Connectors' syncs and deliveries through the compiled bundle, as a user runs them: `up --demo`
 * schedules ecb-fx (with no egress proxy its sync fails `unavailable`, recorded and retried with
 * the same batch); `import` maps the ECB's daily file through ecb-fx as one batch; `deliveries`
 * lists it with the connector's next sync; `deliveries get` prints it as JSON; bad input is one
 * line and exit 2.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, spawnOpenfief, startOpenfief } from "./support.js";
import type { Started } from "./support.js";

const DAILY = join(ROOT, "plugins", "ecb-fx", "fixtures", "eurofxref-daily.xml");
let root: string;
let data: string;
let up: Started;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "openfief-deliveries-"));
  data = join(root, "data");
  up = await startOpenfief(["up", "--demo", "--data", data, "--no-egress", "--no-views", "--listen", "127.0.0.1:0"]);
  await up.waitFor(/console on (http:\/\/\S+?)[;\s]/, 150_000);
}, 180_000);

afterAll(async () => {
  const r = await up.stop();
  expect(r.code, r.stderr).toBe(0);
  await rm(root, { recursive: true, force: true });
});

interface Listing {
  deliveries: { batchId: string; plugin: string; kind: string; digest: string; counts: { fxRates: number } }[];
  connectors: { name: string; nextAt: string | null; retrying: boolean; lastFailed: { code: string; attempt: number } | null }[];
}

describe("syncs and deliveries", () => {
  it("up --demo schedules ecb-fx: its sync is called at once, fails unavailable without an egress proxy, and is retried", async () => {
    let listing: Listing | null = null;
    for (let i = 0; i < 100; i++) {
      const r = await spawnOpenfief(["deliveries", "ecb-fx", "--data", data, "--json"]);
      expect(r.code, r.stderr).toBe(0);
      listing = JSON.parse(r.stdout) as Listing;
      if (listing.connectors[0]?.lastFailed !== null && listing.connectors[0]?.lastFailed !== undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(listing?.connectors).toEqual([expect.objectContaining({ name: "ecb-fx", retrying: true, lastFailed: expect.objectContaining({ code: "http_failed" }) })]);
    const log = await spawnOpenfief(["log", "--plugin", "ecb-fx", "--data", data]);
    expect(log.stdout).toMatch(/the scheduler called Sync for batch \S+, from the start/);
    expect(log.stdout).toMatch(/Sync of batch \S+ failed \(attempt \d+\) with http_failed; retried at /);
    const text = await spawnOpenfief(["deliveries", "--data", data]);
    expect(text.stdout).toMatch(/^ecb-fx: every 24h, jitter 30m; retry at \S+ \(attempt \d failed: http_failed\)$/m);
  });

  it("imports a file through ecb-fx as one batch, lists it, and prints it as JSON", async () => {
    const imported = await spawnOpenfief(["import", "ecb-fx", DAILY, "--media-type", "application/xml", "--data", data]);
    expect(imported.code, imported.stderr).toBe(0);
    const batch = /as batch (import-[0-9a-f-]+): (\d+) FX rates/.exec(imported.stdout);
    expect(batch, imported.stdout).not.toBeNull();
    const listed = JSON.parse((await spawnOpenfief(["deliveries", "--data", data, "--json"])).stdout) as Listing;
    expect(listed.deliveries).toEqual([expect.objectContaining({ batchId: batch?.[1], plugin: "ecb-fx", kind: "import", counts: expect.objectContaining({ fxRates: Number(batch?.[2]) }) })]);
    const table = await spawnOpenfief(["deliveries", "ecb-fx", "--data", data]);
    expect(table.stdout).toMatch(new RegExp(`^${batch?.[1]}\\s+ecb-fx\\s+import\\s+\\S+\\s+${batch?.[2]} FX rates\\s+sha256:`, "m"));
    const got = await spawnOpenfief(["deliveries", "get", batch?.[1] ?? "", "--data", data]);
    expect(got.code, got.stderr).toBe(0);
    const d = JSON.parse(got.stdout) as { batchId: string; digest: string; delivery: { batchId: string; fxRates: { baseCurrency: string; rate: string }[] } };
    expect(d.batchId).toBe(batch?.[1]);
    expect(d.digest).toBe(listed.deliveries[0]?.digest);
    expect(d.delivery.batchId).toBe(batch?.[1]);
    expect(d.delivery.fxRates[0]).toMatchObject({ baseCurrency: "EUR", rate: expect.stringMatching(/^\d+\.\d+$/) });
    const log = await spawnOpenfief(["log", "--plugin", "ecb-fx", "--data", data]);
    expect(log.stdout).toMatch(/eurofxref-daily\.xml \(\d+ bytes\) was imported by owner:cli as batch import-/);
  });

  it("a preview maps the file and keeps nothing", async () => {
    const before = JSON.parse((await spawnOpenfief(["deliveries", "--data", data, "--json"])).stdout) as Listing;
    const r = await spawnOpenfief(["import", "ecb-fx", DAILY, "--preview", "--data", data]);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { fxRates: unknown[] }).fxRates.length).toBeGreaterThan(0);
    const after = JSON.parse((await spawnOpenfief(["deliveries", "--data", data, "--json"])).stdout) as Listing;
    expect(after.deliveries).toEqual(before.deliveries);
  });

  it.each([
    ["a file that is not there", ["import", "ecb-fx", "no-such-file.xml"], /cannot read no-such-file\.xml: no such file or folder/],
    ["a bad plugin name", ["import", "Bad_Name", "x.xml"], /invalid plugin name/],
    ["a bad media type", ["import", "ecb-fx", "x.xml", "--media-type", "xml"], /invalid --media-type/],
    ["a bad batch ID", ["deliveries", "get", "../etc"], /invalid batch ID/],
    ["too many arguments", ["deliveries", "ecb-fx", "extra"], /too many arguments/],
  ])("refuses %s in one line, exit 2", async (_what, args, message) => {
    const r = await spawnOpenfief([...args, "--data", data]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });

  it("refuses a file over the limit of one import before reading it, exit 2", async () => {
    const big = join(root, "big.xml");
    await writeFile(big, Buffer.alloc(8 * 1024 * 1024 + 1, 0x20));
    const r = await spawnOpenfief(["import", "ecb-fx", big, "--data", data]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/big\.xml is 8388609 bytes, over the 8388608-byte limit of one import/);
  });

  it("an unknown batch is not found, exit 1", async () => {
    const r = await spawnOpenfief(["deliveries", "get", "import-none", "--data", data]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no delivery of batch import-none/);
  });
});
