/**
 * Confined plugins end to end: guests built from WAT by wabt, a real host (sandbox processes,
 * worker threads, a real event store), calls through the public API.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BODY, constantBody, COUNTER, floodBody, guest, TEST_MANIFEST } from "./support/wat.js";
import { startHost, ticker, type TestHost } from "./support/host.js";
import type { PluginHost } from "../../src/host/index.js";

let t: TestHost;
let echo: string;

async function installed(host: PluginHost, bytes: Uint8Array): Promise<string> {
  const r = await host.install(bytes);
  if (!r.ok) throw new Error(`install failed: ${r.error.code} ${r.error.message}`);
  return r.value.digest;
}

beforeAll(async () => {
  t = await startHost();
  echo = await installed(t.host, await guest({ body: BODY.echo }));
});
afterAll(async () => {
  await t.close();
});

async function failures(plugin: string) {
  return (await t.store.read({ type: "plugin.call", stream: `plugin/${plugin}` })).map((e) => e.data);
}

describe("a module that speaks the ABI", () => {
  it("is installed, recorded by digest, and answers its calls", async () => {
    expect((await t.host.modules()).map((m) => m.digest)).toContain(echo);
    const installedEvents = (await t.store.read({ type: "module.installed" })).map((e) => e.data);
    expect(installedEvents).toContainEqual({ digest: echo, size: expect.any(Number) });
    const r = await t.host.call("works", echo, { method: "sync", params: { batchId: "b-1" } });
    expect(r).toEqual({ ok: true, result: { method: "sync", params: { batchId: "b-1" } } });
    expect(t.host.lastCalls().get("works")).toMatchObject({ runtime: "wasm", digest: echo, method: "sync" });
    expect(await failures("works")).toEqual([]);
  });

  it("installs the same bytes once", async () => {
    const again = await t.host.install(await guest({ body: BODY.echo }));
    expect(again.ok && again.value.digest).toBe(echo);
    expect((await t.store.read({ type: "module.installed" })).filter((e) => e.data.digest === echo)).toHaveLength(1);
  });

  it("serves concurrent calls up to its instance limit and queues the rest", async () => {
    const calls = await Promise.all(Array.from({ length: 10 }, (_, i) => t.host.call("works", echo, { method: "m", params: { i } })));
    expect(calls.map((c) => c.ok && (c.result as { params: { i: number } }).params.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it("gets memory up to the cap and no further, whatever its module declares", async () => {
    const d = await installed(t.host, await guest({ body: BODY.growReport }));
    expect(await t.host.call("grower", d, { method: "grow" })).toEqual({ ok: true, result: 1024 });
  });
});

describe("module checks at install", () => {
  it.each([
    ["a forbidden import", { body: BODY.echo, imports: '(import "env" "abort" (func (param i32 i32 i32 i32)))' }, "plugin_module_invalid", "imports[3]", /env\.abort/],
    ["an oversized initial memory", { body: BODY.echo, memory: "1025" }, "plugin_module_invalid", "memory.initial", /above the cap|more than the cap/],
    ["a wrong ABI version", { body: BODY.echo, abiVersion: 2 }, "plugin_abi_unsupported", undefined, /ABI version 2/],
    ["an invalid manifest", { body: BODY.echo, manifestResponse: JSON.stringify({ result: { capabilities: [], egress: [], secrets: [], dataTiers: [] } }) }, "plugin_manifest_invalid", "manifest.capabilities", /capabilit/],
    ["a manifest that is not an answer", { body: BODY.echo, manifestResponse: "not json" }, "plugin_failed", undefined, /not UTF-8 JSON/],
    ["a manifest the module reports as an error", { body: BODY.echo, manifestResponse: JSON.stringify({ error: { code: "internal", message: "no" } }) }, "plugin_manifest_invalid", "manifest", /internal/],
    ["a view capability WebAssembly cannot serve", { body: BODY.echo, manifestResponse: JSON.stringify({ result: { ...TEST_MANIFEST, capabilities: ["connector", "view"] } }) }, "plugin_dialect_unknown", "manifest.capabilities[1]", /connector contract only/],
    ["a trap in _initialize", { body: BODY.echo, initialize: "(unreachable)" }, "plugin_failed", undefined, /unreachable/],
  ])("refuses %s", async (_name, o, code, field, message) => {
    const before = (await t.host.modules()).length;
    const r = await t.host.install(await guest(o));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe(code);
    if (field !== undefined) expect(r.error.field).toBe(field);
    expect(r.error.message).toMatch(message);
    expect(await t.host.modules()).toHaveLength(before);
  });

  it("refuses a module whose manifest differs from the signed label", async () => {
    const r = await t.host.install(await guest({ body: BODY.echo, data: { 9000: "other" } }), { manifest: { ...TEST_MANIFEST, egress: [{ host: "other.example.com", port: 443 }] } as never });
    expect(r.ok === false && r.error).toMatchObject({ code: "plugin_manifest_invalid", message: expect.stringMatching(/signed manifest label/) });
  });
});

describe("a call that fails", () => {
  it.each([
    ["an infinite loop", { body: BODY.spin }, "plugin_timed_out", /time limit of 500 ms/],
    ["unbounded allocation", { body: BODY.allocForever }, "plugin_failed", /memory exhausted at 67108864 bytes/],
    ["deep recursion", { body: BODY.recurse }, "plugin_failed", /overflowed its stack/],
    ["proc_exit", { body: BODY.exit }, "plugin_failed", /exited with code 3/],
    ["host_call with a bad pointer", { body: BODY.badPointer }, "plugin_failed", /outside the plugin's memory/],
    ["a trap", { body: BODY.trap }, "plugin_failed", /trapped: unreachable/],
    ["a flood of host_calls", { body: BODY.hostCallFlood }, "plugin_failed", /more than 256 host_calls/],
    ["a response that is not JSON", { ...constantBody("{oops") }, "plugin_failed", /not UTF-8 JSON/],
    ["a response claiming a host code", { ...constantBody(JSON.stringify({ error: { code: "plugin_timed_out", message: "x" } })) }, "plugin_failed", /not one of the ABI's codes/],
    ["a response with extra fields", { ...constantBody(JSON.stringify({ result: 1, extra: 2 })) }, "plugin_failed", /exactly one field/],
  ])("ends %s with its code, records it, and leaves the host responsive", async (name, o, code, message) => {
    const plugin = `bad-${name.replace(/[^a-z]+/g, "-").replace(/^-|-$/g, "")}`.slice(0, 40);
    const d = await installed(t.host, await guest(o));
    const tick = ticker();
    const during = t.host.call("works", echo, { method: "during" });
    const r = await t.host.call(plugin, d, { method: "go" });
    const ticks = tick.stop();
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ source: "host", code });
    expect(r.error.message).toMatch(message);
    // A call that ran into its time limit lasted long enough for the timer to fire meanwhile.
    if (code === "plugin_timed_out") expect(ticks).toBeGreaterThan(0);
    expect((await during).ok).toBe(true);
    expect(await failures(plugin)).toEqual([expect.objectContaining({ name: plugin, digest: d, method: "go", source: "host", code })]);
    // The host still serves both the failing module (a fresh instance) and the others.
    expect((await t.host.call("works", echo, { method: "after" })).ok).toBe(true);
  });

  it("reports a plugin's own failure with its own code", async () => {
    const d = await installed(t.host, await guest(constantBody(JSON.stringify({ error: { code: "http_failed", message: "upstream down" } }))));
    const r = await t.host.call("reporter", d, { method: "sync" });
    expect(r).toEqual({ ok: false, error: { source: "plugin", code: "http_failed", message: "upstream down" } });
    expect(await failures("reporter")).toEqual([expect.objectContaining({ source: "plugin", code: "http_failed", message: "upstream down" })]);
  });

  it("discards the instance of a failed call", async () => {
    const small = await startHost({ limits: { instances: 1 } });
    try {
      const d = await installed(small.host, await guest(COUNTER));
      const results = [];
      for (const method of ["count", "count", "trap", "count", "count"]) {
        const r = await small.host.call("counter", d, { method });
        results.push(r.ok ? r.result : r.error.code);
      }
      expect(results).toEqual([1, 2, "plugin_failed", 1, 2]);
    } finally {
      await small.close();
    }
  });

  it("counts the time spent waiting for an instance against the limit", async () => {
    const small = await startHost({ limits: { instances: 1 } });
    try {
      const d = await installed(small.host, await guest({ body: BODY.spin }));
      const [a, b] = await Promise.all([small.host.call("spinner", d, { method: "a" }), small.host.call("spinner", d, { method: "b" })]);
      expect([a.ok || a.error.code, b.ok || b.error.code]).toEqual(["plugin_timed_out", "plugin_timed_out"]);
    } finally {
      await small.close();
    }
  });

  it("stops a guest spinning on memory.grow(0) at the 64 MiB cap, and the host stays responsive", async () => {
    const d = await installed(t.host, await guest({ body: BODY.growSpin }));
    const tick = ticker();
    const during = t.host.call("works", echo, { method: "during" });
    const r = await t.host.call("hazard", d, { method: "go" });
    expect(r.ok === false && r.error.code).toBe("plugin_timed_out");
    expect((await during).ok).toBe(true);
    // The next call needs a new instance, which exists only once the spinning one is gone.
    const again = await t.host.call("hazard", d, { method: "again" });
    expect(again.ok === false && again.error.code).toBe("plugin_timed_out");
    expect(tick.stop()).toBeGreaterThan(0);
    expect((await t.host.call("works", echo, { method: "after" })).ok).toBe(true);
  });

  it("refuses a call of code that is not installed", async () => {
    const r = await t.host.call("ghost", "f".repeat(64), { method: "sync" });
    expect(r.ok === false && r.error).toMatchObject({ code: "plugin_not_installed", field: "digest" });
    expect(await failures("ghost")).toEqual([expect.objectContaining({ code: "plugin_not_installed" })]);
  });

  it("records a refusal of the app layer like any failed call", async () => {
    const r = await t.host.refuse("pending", echo, "sync", { source: "host", code: "plugin_not_approved", message: "waits: origin https://api.example.com is pending approval" });
    expect(r.ok).toBe(false);
    expect(await failures("pending")).toEqual([expect.objectContaining({ code: "plugin_not_approved", message: "waits: origin https://api.example.com is pending approval" })]);
  });
});

describe("a plugin's log", () => {
  it("is capped in lines too, so a flood of short lines costs the host little", async () => {
    // A byte budget large enough that the line cap is what stops the flood.
    const small = await startHost({ caps: { logCallBytes: 1024 * 1024 }, limits: { time: 10_000 } });
    try {
      const answer = JSON.stringify({ result: "done" });
      const flood = floodBody(5000, 2, 5000, Buffer.byteLength(answer));
      const d = await installed(small.host, await guest({ body: flood.body, rawData: flood.rawData, data: { 5000: "x\n", 4096: answer } }));
      expect(await small.host.call("liner", d, { method: "sync" })).toEqual({ ok: true, result: "done" });
      const lines = small.logs.filter((l) => l.plugin === "liner" && (l.stream === "stdout" || l.stream === "stderr"));
      expect(lines).toHaveLength(1000);
      expect(small.logs.find((l) => l.plugin === "liner" && typeof l.dropped === "number")?.dropped).toBe(9000);
    } finally {
      await small.close();
    }
  });

  const SECRET = "s3cr3t-Zq9XvK2mW7pLx";
  it("is captured, capped per line and per call, and never shows a Secret", async () => {
    const small = await startHost({ caps: { logLineBytes: 256, logCallBytes: 8192 } });
    try {
      const line = `${"A".repeat(250)}${SECRET} and again ${SECRET}\n`;
      const answer = JSON.stringify({ error: { code: "internal", message: `failed with ${SECRET}` } });
      const flood = floodBody(5000, Buffer.byteLength(line), 2000, Buffer.byteLength(answer));
      const d = await installed(small.host, await guest({ body: flood.body, rawData: flood.rawData, data: { 5000: line, 4096: answer } }));
      const r = await small.host.call("flooder", d, { method: "sync", secrets: [SECRET] });
      expect(r).toEqual({ ok: false, error: { source: "plugin", code: "internal", message: "failed with [REDACTED]" } });
      const pluginLines = small.logs.filter((l) => l.plugin === "flooder" && (l.stream === "stdout" || l.stream === "stderr"));
      expect(pluginLines.length).toBeGreaterThan(10);
      const total = pluginLines.reduce((n, l) => n + String(l.msg).length, 0);
      expect(total).toBeLessThanOrEqual(8192);
      for (const l of pluginLines) expect(String(l.msg).length).toBeLessThanOrEqual(256 + " [line cut]".length);
      expect(small.logs.some((l) => l.plugin === "flooder" && typeof l.dropped === "number" && l.dropped > 0)).toBe(true);
      // Not the Secret, nor the start of it a cut could have left.
      for (const raw of small.raw) expect(raw).not.toContain(SECRET.slice(0, 6));
      const events = JSON.stringify(await small.store.read());
      expect(events).not.toContain(SECRET.slice(0, 6));
      expect(events).toContain("[REDACTED]");
    } finally {
      await small.close();
    }
  });
});
