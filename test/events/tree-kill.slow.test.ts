/**
 * The Merkle tree after kill -9: a process appending and extending the tree is killed at random
 * moments, several times over one log; each time the next one resumes the tree from what was
 * stored, and in the end the stored tree equals an independent computation over every event
 * (tiles included) — never a different tree.
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/events/store.js";
import { formatHash, rootOf, TILE_WIDTH, tilesToPublish, parseTile } from "../../src/tlog/index.js";
import { independentLeaves } from "../support/log-tree-contract.js";

const WRITER = fileURLToPath(new URL("./support/tree-writer.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "openfief-tree-kill-"));
const file = join(dir, "log.db");

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the writer until it reports `steps` steps, then kills it with SIGKILL at a moment of its own. */
function runAndKill(steps: number, delayMs: number): Promise<{ head: number; tree: number }> {
  return new Promise((resolve, reject) => {
    const p = fork(WRITER, [file], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
    let last = { head: 0, tree: 0 };
    let n = 0;
    p.on("message", (m) => {
      last = m as { head: number; tree: number };
      if (++n === steps) setTimeout(() => p.kill("SIGKILL"), delayMs);
    });
    p.on("error", reject);
    p.on("exit", (_code, signal) => (signal === "SIGKILL" ? resolve(last) : reject(new Error(`the writer ended with ${String(signal ?? _code)}`))));
  });
}

describe("the Merkle tree after kill -9", () => {
  it("resumes from what was stored and ends equal to the tree of every event", async () => {
    let seen = { head: 0, tree: 0 };
    for (const [steps, delay] of [[14, 3], [9, 0]] as const) {
      const before = seen;
      seen = await runAndKill(steps, delay);
      expect(seen.head).toBeGreaterThan(before.head);
    }
    const log = await openStore({ file });
    try {
      const stored = await log.tree.size();
      expect(stored).toBeLessThanOrEqual(await log.head());
      expect(await log.tree.catchUp()).toBe(await log.head());
      const leaves = await independentLeaves(log);
      expect(formatHash(await log.tree.root())).toBe(formatHash(rootOf(leaves)));
      // The root at what was stored before the catch-up is the independent one too (tiles written by the killed processes).
      expect(formatHash(await log.tree.root(stored))).toBe(formatHash(rootOf(leaves.slice(0, stored))));
      for (const t of tilesToPublish(0, leaves.length).filter((x) => x.level === 0)) {
        const hashes = parseTile((await log.tree.tile(t)) as Uint8Array, t.width);
        if (!hashes.ok) throw new Error(hashes.error.message);
        expect(hashes.value.map(formatHash)).toEqual(leaves.slice(t.index * TILE_WIDTH, t.index * TILE_WIDTH + t.width).map(formatHash));
      }
    } finally {
      await log.close();
    }
  }, 60_000);
});
