import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EMPTY_PENDING } from "../../src/plugins/effective.js";
import { pluginStatus, PluginStatusWriter } from "../../src/kube/status.js";
import { FakeApiServer } from "./fake-apiserver.js";

const IMAGE = `ghcr.io/acme/nbp-fx@sha256:${"b".repeat(64)}`;

describe("PluginStatusWriter", () => {
  let server: FakeApiServer;
  beforeEach(async () => {
    server = await FakeApiServer.start();
    server.put({
      apiVersion: "openfief.io/v1alpha1",
      kind: "Plugin",
      metadata: { name: "nbp-fx", namespace: "openfief" },
      spec: { image: IMAGE, manifest: { capabilities: ["connector"] } },
    });
  });
  afterEach(async () => {
    await server.close();
  });

  it("applies the status through the status subresource with server-side apply as openfief-operator", async () => {
    const status = pluginStatus({
      generation: 1,
      deployed: { image: IMAGE },
      pending: { ...EMPTY_PENDING, egress: [{ host: "api.nbp.pl", port: 443 }] },
      signature: { kind: "signed" },
      now: "2026-11-01T10:00:00Z",
    });
    await new PluginStatusWriter(server.kubeConfig()).write("nbp-fx", status);
    const patch = server.requests.find((r) => r.method === "PATCH");
    expect(patch).toMatchObject({
      path: "/apis/openfief.io/v1alpha1/namespaces/openfief/plugins/nbp-fx/status",
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: "openfief-operator", force: "true" },
    });
    const stored = server.get("openfief.io/v1alpha1", "Plugin", "openfief", "nbp-fx");
    expect(stored?.["status"]).toEqual(JSON.parse(JSON.stringify(status)));
    expect(stored?.["spec"]).toMatchObject({ image: IMAGE });
  });

  it("removes pendingApproval and deployed when a later status has none", async () => {
    const writer = new PluginStatusWriter(server.kubeConfig());
    const base = { generation: 1, signature: { kind: "signed" } as const, now: "2026-11-01T10:00:00Z" };
    await writer.write("nbp-fx", pluginStatus({ ...base, deployed: { image: IMAGE }, pending: { ...EMPTY_PENDING, secrets: ["x"] } }));
    await writer.write("nbp-fx", pluginStatus({ ...base, deployed: null, pending: EMPTY_PENDING }));
    const status = server.get("openfief.io/v1alpha1", "Plugin", "openfief", "nbp-fx")?.["status"] as Record<string, unknown>;
    expect(status["pendingApproval"]).toBeUndefined();
    expect(status["deployed"]).toBeUndefined();
    expect(status["observedGeneration"]).toBe(1);
  });

  it("fails with the API's reason when the Plugin is gone", async () => {
    server.remove("openfief.io/v1alpha1", "Plugin", "openfief", "nbp-fx");
    const status = pluginStatus({ generation: 1, deployed: null, pending: EMPTY_PENDING, signature: { kind: "unknown" }, now: "2026-11-01T10:00:00Z" });
    await expect(new PluginStatusWriter(server.kubeConfig()).write("nbp-fx", status)).rejects.toMatchObject({ code: "api_error", status: 404 });
  });
});
