/**
 * The one module install both plugin hosts call: the demo's `ecb-fx` image read from
 * `examples/oci` by digest into a real plugin host over a real store. It installs the module under
 * the image's signed label or under a manifest given by the rollout, and refuses — recorded as a
 * refused `install` call of the plugin — an image whose layer is not the published module, an
 * image without a signed label, and an image not pinned by digest.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { installModule } from "../../src/app/index.js";
import type { ModuleSourceFor } from "../../src/app/index.js";
import { pluginStream } from "../../src/events/index.js";
import { parseManifestLabel } from "../../src/plugins/index.js";
import { digestOf, MEDIA_TYPE, OciLayoutSource, readLabel, readWasmModule, WASM_LAYER_MEDIA_TYPE, writeImageToLayout } from "../../src/trust/index.js";
import { startHost, type TestHost } from "../host/support/host.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ECB_IMAGE = "localhost/openfief-demo/ecb-fx@sha256:bc5075adc604cc16c13be13e38549e2cb69b2da3e18ce9c023f6c9a312539300";
const ECB_MODULE = "37ca3117ba230ff39ccb7212faaef86a069771114f6048f3d7269f05127d2fe2";
const demo = new OciLayoutSource(join(ROOT, "examples", "oci"));
const fromDemo: ModuleSourceFor = async (image) => ({ source: demo, repository: image.repository });

let t: TestHost;
let dirs: string[] = [];
beforeEach(async () => {
  t = await startHost();
});
afterEach(async () => {
  await t.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

/** The last refusal recorded for `plugin`: its error code and the method refused. */
async function lastRefusal(plugin: string): Promise<unknown> {
  const e = await t.store.last(pluginStream(plugin));
  return e?.data;
}

describe("installModule", () => {
  it("installs the image's module by digest under the image's signed label", async () => {
    const r = await installModule(t.host, fromDemo, { plugin: "ecb-fx", image: ECB_IMAGE, module: ECB_MODULE, actor: "plugin-host" });
    expect(r).toEqual({ ok: true, digest: ECB_MODULE });
    expect((await t.host.modules()).map((m) => m.digest)).toEqual([ECB_MODULE]);
  });

  it("installs under the manifest the rollout decided on when one is given", async () => {
    const artifact = await readWasmModule(demo, "openfief-demo/ecb-fx", ECB_IMAGE.slice(ECB_IMAGE.indexOf("@") + 1));
    const label = readLabel(await demo.blob("openfief-demo/ecb-fx", artifact.config.digest, artifact.config.size));
    const manifest = parseManifestLabel(label ?? "");
    if (!manifest.ok) throw new Error("the demo image has no signed label");
    const r = await installModule(t.host, fromDemo, { plugin: "ecb-fx", image: ECB_IMAGE, module: ECB_MODULE, manifest: manifest.value });
    expect(r.ok).toBe(true);
  });

  it("refuses an image whose layer is not the module published for it, and records why", async () => {
    const other = "0".repeat(64);
    const r = await installModule(t.host, fromDemo, { plugin: "ecb-fx", image: ECB_IMAGE, module: other });
    expect(r).toMatchObject({ ok: false, error: { code: "plugin_module_invalid", message: expect.stringMatching(/not the module that was published/) } });
    expect(await t.host.modules()).toEqual([]);
    expect(JSON.stringify(await lastRefusal("ecb-fx"))).toContain("plugin_module_invalid");
  });

  it("refuses an image without a signed manifest label when the rollout gave none", async () => {
    const dir = mkdtempSync(join(tmpdir(), "module-install-"));
    dirs.push(dir);
    const module = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
    const config = new TextEncoder().encode(JSON.stringify({ config: { Labels: {} } }));
    const manifest = new TextEncoder().encode(JSON.stringify({
      schemaVersion: 2, mediaType: MEDIA_TYPE.ociManifest,
      config: { mediaType: MEDIA_TYPE.ociConfig, digest: digestOf(config), size: config.length },
      layers: [{ mediaType: WASM_LAYER_MEDIA_TYPE, digest: digestOf(module), size: module.length }],
    }));
    const written = await writeImageToLayout(dir, { manifest, blobs: [config, module] });
    const source = new OciLayoutSource(dir);
    const r = await installModule(t.host, async () => ({ source, repository: "x/unlabelled" }), {
      plugin: "unlabelled", image: `localhost/x/unlabelled@${written.digest}`, module: digestOf(module).slice("sha256:".length),
    });
    expect(r).toMatchObject({ ok: false, error: { code: "plugin_manifest_invalid" } });
    expect(await t.host.modules()).toEqual([]);
    expect(JSON.stringify(await lastRefusal("unlabelled"))).toContain("plugin_manifest_invalid");
  });

  it("refuses an image not pinned by digest without reading anything", async () => {
    const r = await installModule(t.host, () => Promise.reject(new Error("nothing is read")), { plugin: "ecb-fx", image: "localhost/openfief-demo/ecb-fx:1.0", module: ECB_MODULE });
    expect(r).toMatchObject({ ok: false, error: { code: "plugin_module_invalid", message: expect.stringMatching(/pinned by digest/) } });
  });
});
