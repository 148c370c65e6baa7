/**
 * kill -9 between storing a delivery and recording it: the first process is killed (SIGKILL, by
 * its own hand right after the delivery is stored, before `sync.delivered`); a second process
 * finds the batch unfinished, calls `Sync` again with the same batch ID, finds the delivery
 * stored, and records it once: nothing is counted twice, and the watermark is the stored one's.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { dataDirDeliveries } from "../../src/app/index.js";
import { openStore } from "../../src/events/index.js";

const CHILD = fileURLToPath(new URL("./sync-child.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "openfief-sync-kill-"));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function child(env: Record<string, string>): Promise<{ code: number | null; signal: string | null; calls: { batchId: string; watermark: string }[] }> {
  return new Promise((resolve) => {
    const p = execFile(process.execPath, ["--import", "tsx", CHILD, dir], { env: { ...process.env, ...env } }, (_err, stdout) => {
      resolve({ code: p.exitCode, signal: p.signalCode, calls: stdout.trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { batchId: string; watermark: string }) });
    });
  });
}

describe("kill -9 between the delivery and the watermark", () => {
  it("retries the same batch, and nothing is counted twice", async () => {
    const first = await child({ OPENFIEF_TEST_KILL_AFTER_DELIVERY: "1" });
    expect(first.signal).toBe("SIGKILL");
    expect(first.calls).toHaveLength(1);
    const batch = first.calls[0]!.batchId;
    expect(readdirSync(join(dir, "deliveries", "batches"))).toEqual([`${batch}.json`]);

    const second = await child({});
    expect(second.code).toBe(0);
    expect(second.calls).toEqual([{ name: "bank", batchId: batch, watermark: "" }]);

    const store = await openStore({ file: join(dir, "log.db") });
    try {
      const events = (await store.read({ stream: "plugin/bank" })).map((e) => [e.type, e.data]);
      expect(events).toEqual([
        ["sync.started", expect.objectContaining({ batchId: batch, attempt: 1 })],
        ["sync.started", expect.objectContaining({ batchId: batch, attempt: 2 })],
        ["sync.delivered", expect.objectContaining({ batchId: batch, attempt: 2, fresh: false, counts: expect.objectContaining({ transactions: 1, fxRates: 2 }) })],
      ]);
    } finally {
      await store.close();
    }
    const deliveries = dataDirDeliveries(dir);
    expect(await deliveries.list()).toHaveLength(1);
    expect(readdirSync(join(dir, "deliveries", "objects"))).toHaveLength(1);
    // The first process's delivery stands: its watermark is the next sync's.
    const kept = await deliveries.get(batch);
    expect(kept?.watermark).toMatch(/^w-\d+$/);
    expect(batch).toBe(`b-${kept?.watermark.slice(2)}`);
  }, 60_000);
});
