/**
 * The image check through a real registry (Debian's docker-registry on 127.0.0.1): images and
 * key-signed bundles pushed as OCI referrers, found through the `sha256-<hex>` tag fallback
 * (distribution 2.8 has no referrers API), verified through the HTTP API.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { register as registerVerify } from "../../src/cli/commands/verify.js";
import { emptyCatalog } from "../../src/plugins/catalog.js";
import { parseImageRef } from "../../src/plugins/image-ref.js";
import type { ImageRef } from "../../src/plugins/image-ref.js";
import type { Signer } from "../../src/plugins/signers.js";
import { newTrustPolicy } from "../../src/plugins/trust.js";
import type { Manifest } from "../../src/plugins/types.js";
import { checkImage } from "../../src/trust/image-check.js";
import type { ImageSource } from "../../src/trust/oci.js";
import { MEDIA_TYPE } from "../../src/trust/oci.js";
import { RegistryClient } from "../../src/trust/registry.js";
import { loadShippedTrustedRoot } from "../../src/trust/trusted-root.js";
import { startRegistry } from "../support/registry.js";
import type { TestRegistry } from "../support/registry.js";
import { runCli } from "./run-cli.js";
import { LABEL_MANIFEST, buildImage, generateKey, signDsse, signMessage } from "./signing.js";
import type { TestImage } from "./signing.js";

const FIXTURES = fileURLToPath(new URL("../fixtures/sigstore/", import.meta.url));
const SHARED_DIGEST = "sha256:50eafd998c0aacd1085847a21099b91478da88f9d98e689c894b45952e71a0f4";
const root = loadShippedTrustedRoot().root;
const owner = generateKey();
const stranger = generateKey();
const ownerSigner: Signer = { name: "owner-key", kind: "owner", identity: { publicKey: owner.publicKey } };
const policy = newTrustPolicy(emptyCatalog(), [ownerSigner]);

let registry: TestRegistry;
let client: RegistryClient;

async function push(repo: string, image: TestImage, bundles: Uint8Array[]): Promise<ImageRef> {
  await client.pushImage(repo, { manifest: image.manifest, blobs: image.blobs });
  for (const b of bundles) {
    await client.pushBundle(repo, { mediaType: MEDIA_TYPE.ociManifest, digest: image.digest, size: image.manifest.length }, b);
  }
  const ref = parseImageRef(`${registry.host}/${repo}@${image.digest}`);
  if (!ref.ok) throw new Error("bad ref");
  return ref.value;
}

/** Counts blob reads, to show a label is never read from an image no trusted signer signed. */
function counting(source: ImageSource): { source: ImageSource; blobs: string[] } {
  const blobs: string[] = [];
  return {
    blobs,
    source: {
      description: source.description,
      manifest: (r, d, m) => source.manifest(r, d, m),
      referrers: (r, d) => source.referrers(r, d),
      blob: (r, d, m) => {
        blobs.push(d);
        return source.blob(r, d, m);
      },
    },
  };
}

beforeAll(async () => {
  registry = await startRegistry();
  client = new RegistryClient({ registry: registry.host });
});

afterAll(async () => {
  await registry?.stop();
});

describe("the image check against a real registry", () => {
  it("finds a pushed bundle through the sha256-<hex> tag fallback", async () => {
    const image = buildImage(JSON.stringify(LABEL_MANIFEST), "fallback");
    await push("plugins/fallback", image, [await signDsse(owner, image.digest)]);
    const res = await fetch(`${registry.url}/v2/plugins/fallback/referrers/${image.digest}`);
    expect(res.status).toBe(404);
    const listed = await client.referrers("plugins/fallback", image.digest);
    expect(listed).toHaveLength(1);
    expect(listed[0]?.artifactType).toBe(MEDIA_TYPE.sigstoreBundle);
  });

  it("admits an image signed with the owner's key whose label equals the declared manifest", async () => {
    const image = buildImage(JSON.stringify(LABEL_MANIFEST), "good");
    const ref = await push("plugins/good", image, [await signDsse(owner, image.digest)]);
    const verdict = await checkImage({ image: ref, source: client, trustedRoot: root, policy, declared: LABEL_MANIFEST as Manifest });
    expect(verdict).toMatchObject({ outcome: "unverified", signers: [{ name: "owner-key", kind: "owner" }] });
    expect(verdict.identities).toEqual([{ kind: "key", publicKey: owner.publicKey }]);
    expect(verdict.manifest).toEqual(LABEL_MANIFEST);
  });

  it("admits a message-signature bundle over the manifest bytes", async () => {
    const image = buildImage(JSON.stringify(LABEL_MANIFEST), "message");
    const ref = await push("plugins/message", image, [await signMessage(owner, image.manifest)]);
    const verdict = await checkImage({ image: ref, source: client, trustedRoot: root, policy });
    expect(verdict.outcome).toBe("unverified");
  });

  it("refuses a manifest that differs from the signed label", async () => {
    const image = buildImage(JSON.stringify(LABEL_MANIFEST), "mismatch");
    const ref = await push("plugins/mismatch", image, [await signDsse(owner, image.digest)]);
    const declared = { ...LABEL_MANIFEST, egress: [{ host: "evil.example.com", port: 443 }] } as Manifest;
    const verdict = await checkImage({ image: ref, source: client, trustedRoot: root, policy, declared });
    expect(verdict).toMatchObject({ outcome: "refused", reason: "manifest_mismatch" });
  });

  it("refuses an unsigned image without reading its label", async () => {
    const image = buildImage(JSON.stringify(LABEL_MANIFEST), "unsigned");
    const ref = await push("plugins/unsigned", image, []);
    const spy = counting(client);
    const verdict = await checkImage({ image: ref, source: spy.source, trustedRoot: root, policy, declared: LABEL_MANIFEST as Manifest });
    expect(verdict).toMatchObject({ outcome: "refused", reason: "unsigned" });
    expect(spy.blobs).toEqual([]);
  });

  it("refuses an image signed only by an untrusted key as untrusted_signer, without reading its label", async () => {
    const image = buildImage(JSON.stringify(LABEL_MANIFEST), "stranger");
    const ref = await push("plugins/stranger", image, [await signDsse(stranger, image.digest)]);
    const spy = counting(client);
    const verdict = await checkImage({ image: ref, source: spy.source, trustedRoot: root, policy });
    // Signed, by a key no trusted signer holds: not "unsigned".
    expect(verdict).toMatchObject({ outcome: "refused", reason: "untrusted_signer" });
    expect(verdict.rejectedBundles).toEqual(["key_mismatch"]);
    const configDigest = (JSON.parse(Buffer.from(image.manifest).toString()) as { config: { digest: string } }).config.digest;
    expect(spy.blobs).not.toContain(configDigest);
  });

  it("refuses a bundle whose in-toto subject is another image", async () => {
    const image = buildImage(JSON.stringify(LABEL_MANIFEST), "other-subject");
    const other = buildImage(JSON.stringify(LABEL_MANIFEST), "something else");
    const ref = await push("plugins/other-subject", image, [await signDsse(owner, other.digest)]);
    const verdict = await checkImage({ image: ref, source: client, trustedRoot: root, policy });
    expect(verdict).toMatchObject({ outcome: "refused", reason: "unsigned", rejectedBundles: ["subject_digest_mismatch"] });
  });

  it("verifies the shared test image with its key-signed bundles, and refuses its label as a manifest", async () => {
    const dir = `${FIXTURES}image/`;
    const image: TestImage = {
      manifest: readFileSync(`${dir}manifest.json`),
      config: readFileSync(`${dir}config.json`),
      layer: readFileSync(`${dir}layer.tar.gz`),
      digest: SHARED_DIGEST,
      blobs: [readFileSync(`${dir}config.json`), readFileSync(`${dir}layer.tar.gz`)],
    };
    const caseDir = `${FIXTURES}cases/`;
    const ref = await push("openfief/hello", image, [
      readFileSync(`${caseDir}local-key-dsse-digest/bundle.json`),
      readFileSync(`${caseDir}local-key-msg-artifact/bundle.json`),
    ]);
    expect(ref.digest).toBe(SHARED_DIGEST);
    const key = readFileSync(`${caseDir}local-key-dsse-digest/key.pub`, "utf8");
    const sharedPolicy = newTrustPolicy(emptyCatalog(), [{ name: "fixture-key", kind: "owner", identity: { publicKey: key } }]);
    const verdict = await checkImage({ image: ref, source: client, trustedRoot: root, policy: sharedPolicy });
    expect(verdict).toMatchObject({ outcome: "unverified", signers: [{ name: "fixture-key", kind: "owner" }], rejectedBundles: [] });
    expect(verdict.identities).toHaveLength(1);
    // Its label is not a plugin manifest, so a Plugin declaring any manifest is refused.
    const declared = await checkImage({ image: ref, source: client, trustedRoot: root, policy: sharedPolicy, declared: LABEL_MANIFEST as Manifest });
    expect(declared).toMatchObject({ outcome: "refused", reason: "manifest_mismatch" });

    const run = await runCli(["verify", ref.toString(), "--key", `${caseDir}local-key-dsse-digest/key.pub`, "--json"], [registerVerify]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ outcome: "unverified", digest: SHARED_DIGEST });
    // Without the key, its key-signed bundles verify under no signer of the owner's: signed, but untrusted — and told how to trust one.
    const refusedRun = await runCli(["verify", ref.toString()], [registerVerify]);
    expect(refusedRun.code).toBe(1);
    expect(refusedRun.stdout).toMatch(/^refused: .*: it is signed, but by no signer you trust \(untrusted_signer\)\n {2}No signer of yours was given: --trusted-signers FILE \(or --key PEM\)/);
  });
});
