import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bufferedLog } from "./decision-log.js";

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Waits until the destination has opened its file (sonic-boom opens it asynchronously). */
async function opened(log: ReturnType<typeof bufferedLog>): Promise<void> {
  const d = log.destination as unknown as NodeJS.EventEmitter & { fd: number };
  if (d.fd < 0) await new Promise<void>((r) => d.once("ready", () => r()));
}

describe("bufferedLog", () => {
  it("holds lines below its buffer size until closed, then writes every one", async () => {
    dir = mkdtempSync(join(tmpdir(), "egress-log-"));
    const file = join(dir, "decisions.log");
    const log = bufferedLog({ dest: file, bufferBytes: 4096, flushMs: 60_000 });
    await opened(log);
    for (let i = 0; i < 10; i++) log.logger.info({ i }, "egress decision");
    expect(readFileSync(file, "utf8")).toBe("");
    await log.close();
    const lines = readFileSync(file, "utf8").trim().split("\n").map((l) => (JSON.parse(l) as { i: number }).i);
    expect(lines).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it("waits at close for the write already under way, so every line lands in order", async () => {
    dir = mkdtempSync(join(tmpdir(), "egress-log-"));
    const file = join(dir, "decisions.log");
    const log = bufferedLog({ dest: file, bufferBytes: 512, maxBytes: 16 * 1024 * 1024, flushMs: 60_000 });
    await opened(log);
    // Past the buffer size at once: sonic-boom starts an asynchronous write, still in flight at close.
    for (let i = 0; i < 5000; i++) log.logger.info({ i, pad: "x".repeat(200) }, "egress decision");
    await log.close();
    const lines = readFileSync(file, "utf8").trim().split("\n").map((l) => (JSON.parse(l) as { i: number }).i);
    expect(lines).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  });

  it("drops and counts lines past its bound instead of holding them", async () => {
    dir = mkdtempSync(join(tmpdir(), "egress-log-"));
    const file = join(dir, "decisions.log");
    const log = bufferedLog({ dest: file, bufferBytes: 1024, maxBytes: 2048, flushMs: 60_000 });
    await opened(log);
    for (let i = 0; i < 200; i++) log.logger.info({ i, pad: "x".repeat(100) }, "egress decision");
    const dropped = log.dropped;
    await log.close();
    const written = readFileSync(file, "utf8").trim().split("\n").length;
    expect(dropped).toBeGreaterThan(0);
    expect(written + dropped).toBe(200);
  });
});
