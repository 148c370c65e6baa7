/**
 * The HTTP face in the control plane's life: not ready before the first reconcile pass, ready
 * after it; and stopped first in the ordered stop, ending its open event streams, so that no
 * request reaches a store being closed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { startControlPlane } from "../../src/compose/index.js";
import { bearer, call } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "openfief-console-life-"));

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("the console's server in the control plane", () => {
  it("is not ready before the first reconcile pass, ready after, and stops before the store, ending its streams", async () => {
    // No pass until asked: the loop's interval is longer than the test.
    const cp = await startControlPlane({ dataDir: dir, logger: pino({ level: "silent" }), egress: null, intervalMs: 600_000, server: { host: "127.0.0.1", port: 0 } });
    const url = cp.server?.url ?? "";
    const before = await call(url, "/readyz");
    expect([before.status, before.json()]).toEqual([503, { ready: false, reasons: ["the first reconcile pass has not finished"] }]);
    await cp.pass();
    expect((await call(url, "/readyz")).status).toBe(200);

    const token = (await cp.sessions.mintSession("alice", "owner")).token;
    let streamEnded: Promise<void> = Promise.resolve();
    await new Promise<void>((opened, reject) => {
      const req = request(new URL("/api/v1/events/stream", url), { headers: bearer(token) }, (res) => {
        streamEnded = new Promise((ended) => res.on("end", () => ended()));
        res.resume();
        opened();
      });
      req.on("error", reject);
      req.end();
    });
    await cp.stop();
    await streamEnded;
    await expect(call(url, "/healthz", { fresh: true })).rejects.toMatchObject({ code: "ECONNREFUSED" });
  }, 30_000);
});
