import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runOperator } from "../../src/kube/operator.js";
import type { OperatorContext } from "../../src/kube/operator.js";
import type { ClusterReconciler, PluginMeta } from "../../src/kube/ports.js";
import type { GrantSpec, PluginSpec } from "../../src/plugins/types.js";
import { FakeApiServer } from "./fake-apiserver.js";

const NS = "openfief";
const IMAGE = `ghcr.io/acme/nbp-fx@sha256:${"c".repeat(64)}`;

async function until(what: string, predicate: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never happened: ${what}`);
}

/** A stand-in for the owner's reconciler: records observations; applies a ServiceAccount per plugin. */
class RecordingReconciler implements ClusterReconciler {
  plugins = new Map<string, { spec: PluginSpec | null; meta: PluginMeta | null }>();
  grants = new Map<string, GrantSpec | null>();
  reconciles = 0;
  closed = false;
  constructor(private readonly ctx: OperatorContext) {}
  observePlugin(name: string, spec: PluginSpec | null, meta: PluginMeta | null): void {
    this.plugins.set(name, { spec, meta });
  }
  observeGrant(name: string, spec: GrantSpec | null): void {
    this.grants.set(name, spec);
  }
  async reconcileAll(): Promise<void> {
    this.reconciles += 1;
    if (!this.ctx.isLeader()) return;
    for (const [name, p] of this.plugins) {
      if (p.spec === null) continue;
      await this.ctx.target.applyPlugin(name, [{ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: `plugin-${name}`, namespace: NS } }]);
    }
  }
  close(): void {
    this.closed = true;
  }
}

describe("openfief operator (runOperator) against the fake API server", () => {
  let server: FakeApiServer;
  let dir: string;
  beforeEach(async () => {
    server = await FakeApiServer.start();
    dir = await mkdtemp(join(tmpdir(), "openfief-operator-"));
  });
  afterEach(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("leads, feeds observations to the reconciler, applies, serves /readyz and releases the Lease on shutdown", async () => {
    server.put({ apiVersion: "openfief.io/v1alpha1", kind: "Plugin", metadata: { name: "nbp-fx", namespace: NS }, spec: { image: IMAGE, manifest: { capabilities: ["connector"] } } });
    server.put({ apiVersion: "openfief.io/v1alpha1", kind: "PluginGrant", metadata: { name: "nbp-fx", namespace: NS }, spec: { capabilities: ["connector"] } });
    const controller = new AbortController();
    let reconciler: RecordingReconciler | undefined;
    let port = 0;
    const done = runOperator(
      {
        kubeConfigObject: server.kubeConfig(),
        dataDir: join(dir, "data"),
        healthPort: 0,
        healthHost: "127.0.0.1",
        identity: "pod-a",
        log: pino({ level: "silent" }),
        signal: controller.signal,
        reconcileDelayMs: 1,
        onListening: (p) => (port = p),
      },
      async (ctx) => (reconciler = new RecordingReconciler(ctx)),
    );
    await until("the ServiceAccount applied", () => server.get("v1", "ServiceAccount", NS, "plugin-nbp-fx") !== undefined);
    expect(reconciler?.plugins.get("nbp-fx")?.spec?.image).toBe(IMAGE);
    expect(reconciler?.plugins.get("nbp-fx")?.meta?.uid).toMatch(/-/);
    expect(reconciler?.grants.get("nbp-fx")).toEqual({ capabilities: ["connector"] });
    expect(server.get("coordination.k8s.io/v1", "Lease", NS, "openfief-operator")?.["spec"]).toMatchObject({ holderIdentity: "pod-a" });
    await until("ready", async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200);

    server.remove("openfief.io/v1alpha1", "PluginGrant", NS, "nbp-fx");
    await until("grant deletion observed", () => reconciler?.grants.get("nbp-fx") === null);

    controller.abort();
    await done;
    expect(reconciler?.closed).toBe(true);
    expect((server.get("coordination.k8s.io/v1", "Lease", NS, "openfief-operator")?.["spec"] as Record<string, unknown>)["holderIdentity"]).toBeUndefined();
  });

  it("refuses to start when the trusted signers ConfigMap is invalid, before leading or building the reconciler", async () => {
    server.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "openfief-trusted-signers", namespace: NS }, data: { "signers.json": '{"signers":[{"name":"x"}]}' } });
    let built = false;
    await expect(
      runOperator(
        { kubeConfigObject: server.kubeConfig(), dataDir: join(dir, "data"), healthPort: 0, healthHost: "127.0.0.1", identity: "pod-a", log: pino({ level: "silent" }), signal: new AbortController().signal },
        async (ctx) => {
          built = true;
          return new RecordingReconciler(ctx);
        },
      ),
    ).rejects.toMatchObject({ code: "invalid_trusted_signers", message: expect.stringContaining("signers[0]") });
    expect(built).toBe(false);
    expect(server.requestsTo("GET", "/apis/coordination.k8s.io")).toEqual([]);
  });
});
