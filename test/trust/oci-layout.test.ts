/** Verifying a local image from an OCI image-layout directory, through the API and `openfief verify --oci-layout`. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { register as registerVerify } from "../../src/cli/commands/verify.js";
import { emptyCatalog } from "../../src/plugins/catalog.js";
import { parseImageRef } from "../../src/plugins/image-ref.js";
import { newTrustPolicy } from "../../src/plugins/trust.js";
import type { Manifest } from "../../src/plugins/types.js";
import { checkImage } from "../../src/trust/image-check.js";
import { MEDIA_TYPE } from "../../src/trust/oci.js";
import { OciLayoutSource, writeBundleToLayout, writeImageToLayout } from "../../src/trust/oci-layout.js";
import { loadShippedTrustedRoot } from "../../src/trust/trusted-root.js";
import { runCli } from "./run-cli.js";
import { LABEL_MANIFEST, buildImage, generateKey, signDsse } from "./signing.js";

const owner = generateKey();
const root = loadShippedTrustedRoot().root;

async function layout(signed: boolean) {
  const dir = mkdtempSync(join(tmpdir(), "openfief-layout-"));
  const image = buildImage(JSON.stringify(LABEL_MANIFEST), `layout-${signed}`);
  const descriptor = await writeImageToLayout(dir, { manifest: image.manifest, blobs: image.blobs, tag: "demo" });
  if (signed) await writeBundleToLayout(dir, descriptor, await signDsse(owner, image.digest));
  const keyFile = join(dir, "owner.pub");
  writeFileSync(keyFile, owner.publicKey);
  return { dir, image, keyFile };
}

describe("an OCI image layout", () => {
  it("lists the bundle as a referrer of the image", async () => {
    const { dir, image } = await layout(true);
    const listed = await new OciLayoutSource(dir).referrers("any", image.digest);
    expect(listed).toHaveLength(1);
    expect(listed[0]?.artifactType).toBe(MEDIA_TYPE.sigstoreBundle);
  });

  it("verifies a signed local image", async () => {
    const { dir, image } = await layout(true);
    const ref = parseImageRef(`example.com/demo@${image.digest}`);
    if (!ref.ok) throw new Error("bad ref");
    const policy = newTrustPolicy(emptyCatalog(), [{ name: "me", kind: "owner", identity: { publicKey: owner.publicKey } }]);
    const verdict = await checkImage({ image: ref.value, source: new OciLayoutSource(dir), trustedRoot: root, policy, declared: LABEL_MANIFEST as Manifest });
    expect(verdict).toMatchObject({ outcome: "unverified", signers: [{ name: "me", kind: "owner" }] });
  });

  it("passes `openfief verify --oci-layout --plugin` for a matching Plugin and fails for another manifest", async () => {
    const { dir, image, keyFile } = await layout(true);
    const pluginFile = join(dir, "plugin.yaml");
    const plugin = (manifest: object) =>
      JSON.stringify({ apiVersion: "openfief.io/v1alpha1", kind: "Plugin", metadata: { name: "demo" }, spec: { image: `example.com/demo@${image.digest}`, manifest } });
    writeFileSync(pluginFile, plugin(LABEL_MANIFEST));
    const ok = await runCli(["verify", "--plugin", pluginFile, "--oci-layout", dir, "--key", keyFile], [registerVerify]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^trusted: example\.com\/demo@sha256:[0-9a-f]{64}: signed by key-1:\S+, a signer you trust; not in the catalog\n {2}Signed by a signer you trust, so it may run; .*\n$/);

    writeFileSync(pluginFile, plugin({ ...LABEL_MANIFEST, capabilities: ["view"] }));
    const bad = await runCli(["verify", "--plugin", pluginFile, "--oci-layout", dir, "--key", keyFile, "--json"], [registerVerify]);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ outcome: "refused", reason: "manifest_mismatch" });
  });

  it("refuses an unsigned local image", async () => {
    const { dir, image, keyFile } = await layout(false);
    const run = await runCli(["verify", `example.com/demo@${image.digest}`, "--oci-layout", dir, "--key", keyFile, "--json"], [registerVerify]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ outcome: "refused", reason: "unsigned" });
  });

  it.each([
    ["a tag instead of a digest", ["verify", "example.com/demo:latest", "--oci-layout", "/nonexistent"]],
    ["no image at all", ["verify"]],
  ])("exits 2 for %s", async (_what, argv) => {
    expect((await runCli(argv, [registerVerify])).code).toBe(2);
  });
});
