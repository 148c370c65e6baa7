/**
 * What a plugin can make the host hold or write: its log counted in the bytes the host writes (not
 * the guest's characters), and the calls of one module waiting for an instance capped (one more
 * is refused at once with `plugin_busy`), each counted in the host's metrics.
 */
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BODY, floodBody, guest } from "./support/wat.js";
import { startHost, type TestHost } from "./support/host.js";
import type { PluginHost } from "../../src/host/index.js";

async function installed(host: PluginHost, bytes: Uint8Array): Promise<string> {
  const r = await host.install(bytes);
  if (!r.ok) throw new Error(`install failed: ${r.error.code} ${r.error.message}`);
  return r.value.digest;
}

/** A metric's value in the registry's text (summed over its labels when `labels` is not given). */
async function metric(registry: Registry, name: string, labels = ""): Promise<number> {
  const text = await registry.metrics();
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m?.[1] === name && (labels === "" || m[2] === labels)) sum += Number(m[3]);
  }
  return sum;
}

describe("a plugin's log", () => {
  it.each([
    ["characters JSON escapes six bytes each", "\u0001".repeat(100)],
    ["four-byte characters", "😀".repeat(50)],
    ["short lines, where the record's own fields weigh most", "x"],
  ])("stays within the per-call budget in the bytes the host writes: %s", async (_name, text) => {
    // A longer time limit than the suite's: a loaded machine must not turn a flood into a timeout.
    const t = await startHost({ limits: { time: 10_000 } });
    try {
      const line = `${text}\n`;
      const answer = JSON.stringify({ result: "done" });
      const flood = floodBody(5000, Buffer.byteLength(line), 600, Buffer.byteLength(answer));
      const d = await installed(t.host, await guest({ body: flood.body, rawData: flood.rawData, data: { 5000: line, 4096: answer } }));
      expect(await t.host.call("chatty", d, { method: "sync" })).toEqual({ ok: true, result: "done" });
      const written = t.raw.filter((r) => {
        const l = JSON.parse(r) as Record<string, unknown>;
        return l.plugin === "chatty" && (l.stream === "stdout" || l.stream === "stderr");
      });
      const bytes = written.reduce((n, r) => n + Buffer.byteLength(r) + 1, 0);
      expect(written.length).toBeGreaterThan(0);
      expect(bytes).toBeLessThanOrEqual(t.host.caps.logCallBytes);
      // The budget is spent, not left unused: one more line (they are all alike) would not have fitted.
      expect(bytes + Buffer.byteLength(written[0] ?? "") + 1).toBeGreaterThan(t.host.caps.logCallBytes);
      expect(t.logs.find((l) => l.plugin === "chatty" && typeof l.dropped === "number")?.dropped).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });
});

describe("the calls waiting for an instance", () => {
  let t: TestHost;
  let registry: Registry;
  let spin: string;

  beforeAll(async () => {
    registry = new Registry();
    t = await startHost({ limits: { instances: 1, time: 1500 }, caps: { queuedCalls: 2 }, registry });
    spin = await installed(t.host, await guest({ body: BODY.spin }));
    expect((await t.host.prepare(spin)).ok).toBe(true);
  });
  afterAll(async () => {
    await t.close();
  });

  it("are capped per module: one more is refused at once with plugin_busy, recorded and counted", async () => {
    let firstDone = false;
    const first = t.host.call("spinner", spin, { method: "sync" }).finally(() => (firstDone = true));
    const queued = [t.host.call("spinner", spin, { method: "sync" }), t.host.call("spinner", spin, { method: "sync" })];
    const refused = await t.host.call("spinner", spin, { method: "sync" });
    // Refused while the first still runs and two wait: not held until its own time ran out.
    expect(firstDone).toBe(false);
    expect(await metric(registry, "openfief_plugin_host_queue_depth")).toBe(2);
    expect(refused).toEqual({ ok: false, error: { source: "host", code: "plugin_busy", message: expect.stringMatching(/all 1 instance\(s\) of the module are busy and 2 call\(s\) wait already/) } });
    expect((await first).ok === false && (await first)).toMatchObject({ error: { code: "plugin_timed_out" } });
    for (const q of await Promise.all(queued)) expect(q.ok === false && q.error.code).toBe("plugin_timed_out");
    expect((await t.store.read({ stream: "plugin/spinner", type: "plugin.call" })).map((e) => e.data.code)).toContain("plugin_busy");
    expect(await metric(registry, "openfief_plugin_host_busy_total")).toBe(1);
    expect(await metric(registry, "openfief_plugin_host_queue_depth")).toBe(0);
    expect(await metric(registry, "openfief_plugin_host_run_seconds_count", '{result="timed_out"}')).toBeGreaterThanOrEqual(1);
    expect(await metric(registry, "openfief_plugin_host_queue_wait_seconds_count")).toBeGreaterThanOrEqual(3);
  }, 30_000);

  it("takes calls again once the queue has room", async () => {
    const r = await t.host.call("spinner", spin, { method: "sync" });
    expect(r.ok === false && r.error.code).toBe("plugin_timed_out");
  }, 30_000);
});
