/**
 * A WebAssembly plugin run by the control plane itself (issue 13, "The main job"): the demo's
 * ecb-fx, a signed OCI artifact whose one layer is its module, installed into the plugin host from
 * its verified image, called under its effective permissions, its HTTP through the embedded egress
 * proxy with its own token — refused there (the test's DNS answers a private address, as no test
 * reaches the internet), and that refusal recorded by the proxy and the host alike.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyDemoFolder, demoSettings } from "../../src/app/index.js";
import { startControlPlane } from "../../src/compose/index.js";
import type { ControlPlane } from "../../src/compose/index.js";
import { startDnsServer } from "../egress/support/dns-server.js";
import type { TestDnsServer } from "../egress/support/dns-server.js";
import { json, openfief, ROOT } from "./support.js";

const MODULE = "37ca3117ba230ff39ccb7212faaef86a069771114f6048f3d7269f05127d2fe2";
let dir: string;
let dns: TestDnsServer;
let cp: ControlPlane;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-wasm-"));
  dns = await startDnsServer({ "www.ecb.europa.eu": { kind: "answer", addresses: ["127.0.0.1"] } });
  cp = await startControlPlane({ dataDir: dir, logger: pino({ level: "silent" }), settings: demoSettings(), egress: { port: 0, dnsServers: [dns.server] } });
  await applyDemoFolder(cp.runtime.store, "plugins");
  await cp.pass();
}, 120_000);

afterAll(async () => {
  await cp.stop();
  await dns.close();
  await rm(dir, { recursive: true, force: true });
});

describe("the demo's WebAssembly plugin", () => {
  it("runs in the plugin host from its verified artifact, with its module installed and nothing compiled for a cluster", async () => {
    const rows = await json<{ name: string; status: string; runtime: string | null; module: string | null }[]>(["get", "plugins", "--data", dir]);
    expect(rows.find((r) => r.name === "ecb-fx")).toMatchObject({ status: "running", runtime: "wasm", module: MODULE });
    expect((await cp.hosted?.host.modules())?.map((m) => m.digest)).toContain(MODULE);
    expect((await cp.runtime.store.read({ type: "module.installed" })).map((e) => e.data.digest)).toEqual([MODULE]);
  });

  it("answers manifest with exactly the manifest its image's label signs", async () => {
    const r = await cp.hosted?.call("ecb-fx", "manifest", {});
    expect(r?.ok).toBe(true);
    expect(r?.ok === true ? r.result : null).toEqual(JSON.parse(readFileSync(join(ROOT, "plugins", "ecb-fx", "manifest.json"), "utf8")));
  });

  it("reaches the ECB only through the egress proxy, which refuses a private address, and the refusal is on the log twice over", async () => {
    const r = await cp.hosted?.call("ecb-fx", "sync", { batchId: "b-1", watermark: "" });
    expect(r?.ok).toBe(false);
    expect(r?.ok === false ? r.error.code : null).toBe("http_failed");
    const egress = await cp.runtime.store.read({ stream: "egress/ecb-fx", type: "egress.decision" });
    expect(egress.at(-1)?.data).toMatchObject({ plugin: "ecb-fx", host: "www.ecb.europa.eu", port: 443, allowed: false });
    expect((await cp.runtime.store.last("plugin/ecb-fx", "plugin.call"))?.data).toMatchObject({ name: "ecb-fx", method: "sync", code: "http_failed", source: "plugin" });
  });

  it("counts its calls in the control plane's metrics, as the cluster's plugin host does", async () => {
    const text = await cp.metrics.registry.metrics();
    expect(text).toMatch(/^openfief_plugin_host_run_seconds_count\{result="returned"\} [1-9]/m);
    expect(text).toMatch(/^openfief_plugin_host_queue_wait_seconds_count [1-9]/m);
    expect(text).toMatch(/^openfief_plugin_host_queue_depth 0$/m);
    expect(text).toMatch(/^openfief_plugin_host_busy_total 0$/m);
    expect(text).toMatch(/^openfief_plugin_host_hard_stops_total 0$/m);
  });

  it("is called once from the command line, which prints the result or the error's code", async () => {
    const ok = await openfief(["call", "ecb-fx", "manifest", "--data", dir]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ capabilities: ["connector"] });
    const refused = await openfief(["call", "nbp-fx", "sync", "--data", dir]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/nbp-fx is a container plugin, not one the plugin host runs, and nothing runs it here: its objects written to \S+ \(no container runtime in the embedded mode\)/);
    const unknown = await openfief(["call", "ecb-fx", "no_such_method", "--data", dir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toMatch(/unknown_method \(reported by the plugin\)/);
    expect((await openfief(["call", "ecb-fx", "sync", "--params", "{not json", "--data", dir])).code).toBe(2);
  });

  it("is refused, and the refusal recorded, once its grant is gone", async () => {
    await openfief(["delete", "grant", "ecb-fx", "--data", dir]);
    await cp.pass();
    const r = await cp.hosted?.call("ecb-fx", "manifest", {});
    expect(r?.ok === false ? r.error.code : null).toBe("plugin_not_approved");
    expect((await cp.runtime.store.last("plugin/ecb-fx", "plugin.call"))?.data).toMatchObject({ code: "plugin_not_approved", source: "host" });
  });
});

describe("why, for a WebAssembly plugin", () => {
  it("says how its calls failed in the last hour", async () => {
    const out = (await openfief(["why", "ecb-fx", "--data", dir])).stdout;
    expect(out).toMatch(/Its calls failed with http_failed \(reported by the plugin\) once in the last hour/);
    expect(out).toMatch(/Its calls were refused with plugin_not_approved once in the last hour/);
  });
});
