/**
 * A module's life in the host: stored by digest across restarts, prepared ahead of calls, kept in
 * an LRU of compiled modules, uninstalled unless pinned; successes counted into `plugin.calls`.
 */
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { openStore } from "../../src/events/index.js";
import { createPluginHost, HostConfigError } from "../../src/host/index.js";
import { withFile } from "../support/sqlite-file.js";
import { startHost } from "./support/host.js";
import { BODY, constantBody, guest } from "./support/wat.js";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function install(t: Awaited<ReturnType<typeof startHost>>, bytes: Uint8Array): Promise<string> {
  const r = await t.host.install(bytes);
  if (!r.ok) throw new Error(r.error.message);
  return r.value.digest;
}

describe("the plugin host's modules", () => {
  it("keeps module bytes in the modules table, so a new host runs them without an install", async () => {
    const t = await startHost();
    try {
      const d = await install(t, await guest({ body: BODY.echo }));
      const row = withFile(t.store.location, (db) => db.prepare("SELECT size, length(bytes) AS n FROM modules WHERE digest = ?").get(d)) as { size: number; n: number };
      expect(row.size).toBe(row.n);
      // Events carry the digest only.
      expect(JSON.stringify(await t.store.read({ type: "module.installed" }))).not.toContain("openfief_call");
      await t.host.close();
      const store = await openStore({ file: join(t.dir, "events.db") });
      const again = createPluginHost({ store, logger: pino({ level: "silent" }), limits: { time: 500 } });
      try {
        expect((await again.modules()).map((m) => m.digest)).toEqual([d]);
        // A cold start is the prepare's, not the call's: the call's 500 ms are for the call.
        expect((await again.prepare(d)).ok).toBe(true);
        expect(await again.call("p", d, { method: "x" })).toEqual({ ok: true, result: { method: "x", params: {} } });
      } finally {
        await again.close();
        await store.close();
      }
    } finally {
      await t.close();
    }
  });

  it("prepares modules so that their first call finds an instance ready", async () => {
    const t = await startHost();
    try {
      const d = await install(t, await guest({ body: BODY.echo }));
      t.host.evict(d);
      expect(t.host.sandboxPid(d)).toBeUndefined();
      const results = await t.host.preparePinned([d, "e".repeat(64)]);
      expect(results.map((r) => r.ok || r.error.code)).toEqual([true, "plugin_not_installed"]);
      expect(t.host.sandboxPid(d)).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });

  it("keeps at most caps.modules compiled modules, dropping the least recently used", async () => {
    // The call after the drop compiles again within its time: give it more than the tests' 500 ms.
    const t = await startHost({ caps: { modules: 2 }, limits: { time: 10_000 } });
    try {
      const a = await install(t, await guest({ body: BODY.echo, data: { 9000: "a" } }));
      const pidA = t.host.sandboxPid(a) as number;
      await install(t, await guest({ body: BODY.echo, data: { 9000: "b" } }));
      await install(t, await guest({ body: BODY.echo, data: { 9000: "c" } }));
      expect(t.host.sandboxPid(a)).toBeUndefined();
      await vi.waitFor(() => expect(alive(pidA)).toBe(false), { timeout: 5000, interval: 50 });
      // Dropped from memory, not uninstalled: the next call compiles it again.
      expect((await t.host.call("p", a, { method: "x" })).ok).toBe(true);
    } finally {
      await t.close();
    }
  });

  it("uninstalls a module no plugin pins, and refuses one that is pinned", async () => {
    let pinned = true;
    const t = await startHost({ pinned: () => pinned });
    try {
      const d = await install(t, await guest({ body: BODY.echo }));
      const pid = t.host.sandboxPid(d) as number;
      expect(await t.host.uninstall(d)).toEqual({ ok: false, error: expect.objectContaining({ code: "plugin_pinned" }) });
      pinned = false;
      expect(await t.host.uninstall(d, { actor: "owner:cli" })).toEqual({ ok: true, value: undefined });
      expect((await t.store.read({ type: "module.uninstalled" })).map((e) => [e.data, e.actor])).toEqual([[{ digest: d }, "owner:cli"]]);
      expect(await t.host.modules()).toEqual([]);
      await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 5000, interval: 50 });
      const r = await t.host.call("p", d, { method: "x" });
      expect(r.ok === false && r.error.code).toBe("plugin_not_installed");
      expect((await t.host.uninstall(d)).ok === false).toBe(true);
    } finally {
      await t.close();
    }
  });

  it("counts successful calls into plugin.calls events and records each failure on its own", async () => {
    let now = Date.parse("2026-12-01T10:00:00Z");
    const t = await startHost({ clock: () => new Date((now += 1000)) });
    try {
      const ok = await install(t, await guest({ body: BODY.echo }));
      const bad = await install(t, await guest(constantBody(JSON.stringify({ error: { code: "internal", message: "x" } }))));
      for (let i = 0; i < 3; i++) expect((await t.host.call("counted", ok, { method: "sync" })).ok).toBe(true);
      expect((await t.host.call("counted", bad, { method: "sync" })).ok).toBe(false);
      expect(await t.store.read({ type: "plugin.calls" })).toEqual([]);
      await t.host.close();
      const summaries = (await t.store.read({ type: "plugin.calls", stream: "plugin/counted" })).map((e) => e.data);
      expect(summaries).toEqual([{ name: "counted", runtime: "wasm", digest: ok, from: expect.any(String), to: expect.any(String), succeeded: 3 }]);
      const [s] = summaries;
      expect(s !== undefined && s.from < s.to).toBe(true);
      expect((await t.store.read({ type: "plugin.call", stream: "plugin/counted" })).map((e) => e.data.digest)).toEqual([bad]);
      expect(t.host.lastCalls().get("counted")).toMatchObject({ digest: bad, error: { source: "plugin", code: "internal" } });
    } finally {
      await t.close();
    }
  });

  it.each([
    [{ memory: 65 * 1024 * 1024 }, "limits.memory"],
    [{ memory: 1000 }, "limits.memory"],
    [{ time: 0 }, "limits.time"],
    [{ stack: 1024 }, "limits.stack"],
    [{ instances: 0 }, "limits.instances"],
  ])("refuses invalid limits %j", async (limits, field) => {
    const t = await startHost();
    try {
      expect(() => createPluginHost({ store: t.store, logger: pino({ level: "silent" }), limits })).toThrow(HostConfigError);
      try {
        createPluginHost({ store: t.store, logger: pino({ level: "silent" }), limits });
      } catch (err) {
        expect((err as HostConfigError).problems.map((p) => p.field)).toContain(field);
      }
    } finally {
      await t.close();
    }
  });
});
