import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { digestOf, MEDIA_TYPE } from "./oci.js";
import { OciLayoutSource, writeImageToLayout } from "./oci-layout.js";
import { readWasmModule, WASM_LAYER_MEDIA_TYPE } from "./wasm-module.js";

const MODULE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
const CONFIG = new TextEncoder().encode(JSON.stringify({ config: { Labels: { "io.openfief.plugin.manifest": "{}" } } }));
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

async function layout(layers: { mediaType: string; digest: string; size: number }[], blobs: Uint8Array[] = [MODULE]) {
  const dir = mkdtempSync(join(tmpdir(), "wasm-layout-"));
  dirs.push(dir);
  const manifest = enc({
    schemaVersion: 2, mediaType: MEDIA_TYPE.ociManifest,
    config: { mediaType: MEDIA_TYPE.ociConfig, digest: digestOf(CONFIG), size: CONFIG.length },
    layers,
  });
  const d = await writeImageToLayout(dir, { manifest, blobs: [CONFIG, ...blobs] });
  return { source: new OciLayoutSource(dir), digest: d.digest, dir };
}

const layer = { mediaType: WASM_LAYER_MEDIA_TYPE, digest: digestOf(MODULE), size: MODULE.length };

describe("readWasmModule", () => {
  it("reads the one layer and identifies the module by the hex SHA-256 of its bytes", async () => {
    const { source, digest } = await layout([layer]);
    const m = await readWasmModule(source, "any", digest);
    expect(m.digest).toBe(digestOf(MODULE).slice(7));
    expect(m.digest).toMatch(/^[0-9a-f]{64}$/);
    expect([...m.bytes]).toEqual([...MODULE]);
    expect(m.config.digest).toBe(digestOf(CONFIG));
  });

  it.each([
    ["two layers", [layer, layer], "malformed", /exactly one layer/],
    ["no layer", [], "malformed", /exactly one layer/],
    ["another media type", [{ ...layer, mediaType: "application/vnd.oci.image.layer.v1.tar+gzip" }], "malformed", /media type/],
    ["a module over the cap", [{ ...layer, size: 64 }], "too_large", /cap of 16/],
  ])("refuses an artifact with %s", async (_name, layers, code, message) => {
    const { source, digest } = await layout(layers);
    await expect(readWasmModule(source, "any", digest, 16)).rejects.toMatchObject({ code, message: expect.stringMatching(message) });
  });

  it("refuses a layer whose declared size is smaller than its blob", async () => {
    const { source, digest } = await layout([{ ...layer, size: 4 }]);
    await expect(readWasmModule(source, "any", digest)).rejects.toMatchObject({ code: "too_large" });
  });

  it("refuses a blob that no longer matches its digest", async () => {
    const { source, digest, dir } = await layout([layer]);
    writeFileSync(join(dir, "blobs", "sha256", digestOf(MODULE).slice(7)), new Uint8Array([0, 0x61, 0x73, 0x6d, 2, 0, 0, 0]));
    await expect(readWasmModule(source, "any", digest)).rejects.toMatchObject({ code: "digest_mismatch" });
  });
});
