/**
 * The second line of defence (ADR 0011): above 64 MiB, `worker.terminate()` was seen never to
 * return while a guest keeps calling `memory.grow(0)` (STACK.md). The host never allows such a
 * cap, so this test builds a pool directly with an 80 MiB cap to reproduce the hazard, and checks
 * that the sandbox process is killed and replaced while the host's own event loop keeps turning.
 */
import { pino } from "pino";
import { Registry } from "prom-client";
import { describe, expect, it, vi } from "vitest";
import { BODY, guest } from "./support/wat.js";
import { ticker } from "./support/host.js";
import { checkModule } from "../../src/host/module-check.js";
import { DEFAULT_CAPS, DEFAULT_LIMITS, resolveLimits, type Limits } from "../../src/host/limits.js";
import { ModulePool } from "../../src/host/module-pool.js";
import { Deadline } from "../../src/host/deadline.js";
import { PluginHostMetrics } from "../../src/host/metrics.js";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("the hard stop", () => {
  it("refuses a memory cap above 64 MiB in the host's limits", () => {
    expect(() => resolveLimits({ memory: 80 * 1024 * 1024 })).toThrow(/limits\.memory/);
  });

  it("kills the sandbox of a guest whose worker does not stop, and starts a new one for the next call", async () => {
    // 80 MiB: beyond what resolveLimits allows, to make terminate() hang as on Node 20.20.
    const limits: Limits = { ...DEFAULT_LIMITS, memory: 80 * 1024 * 1024, time: 500, instances: 1 };
    const checked = checkModule(await guest({ body: BODY.growSpin }), limits, DEFAULT_CAPS);
    if (!checked.ok) throw new Error(checked.error.message);
    const registry = new Registry();
    const metrics = new PluginHostMetrics(registry);
    const pool = new ModulePool({ digest: checked.value.digest, bytes: checked.value.bytes, limits, caps: DEFAULT_CAPS, hardStopMs: 500, logger: pino({ level: "silent" }), metrics });
    try {
      expect((await pool.prepare()).ok).toBe(true);
      const first = pool.pid as number;
      const tick = ticker();
      const d = new Deadline(limits.time);
      const r = await pool.run(new TextEncoder().encode('{"method":"go","params":{}}'), [], d, { log: () => undefined, hostCall: () => Promise.resolve(new Uint8Array()) });
      d.dispose();
      expect(r.ok === false && r.error.code).toBe("plugin_timed_out");
      await vi.waitFor(() => expect(alive(first)).toBe(false), { timeout: 10_000, interval: 50 });
      expect(tick.stop()).toBeGreaterThan(0);
      expect(pool.stops.processes).toBe(1);
      expect((await metrics.hardStops.get()).values[0]?.value).toBe(1);
      // The module is compiled again in a new process for the next call.
      const d2 = new Deadline(limits.time);
      const again = await pool.run(new TextEncoder().encode('{"method":"again","params":{}}'), [], d2, { log: () => undefined, hostCall: () => Promise.resolve(new Uint8Array()) });
      d2.dispose();
      expect(again.ok === false && again.error.code).toBe("plugin_timed_out");
      expect(pool.pid === undefined || pool.pid !== first).toBe(true);
    } finally {
      pool.kill("test over");
    }
  });
});
