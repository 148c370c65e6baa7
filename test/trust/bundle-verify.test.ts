/** Key-signed bundles made in the test, and the checks the library leaves to us. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { emptyCatalog } from "../../src/plugins/catalog.js";
import { newTrustPolicy } from "../../src/plugins/trust.js";
import { verifyBundle, verifySignedBundle } from "../../src/trust/bundle-verify.js";
import { digestOf } from "../../src/trust/oci.js";
import { loadShippedTrustedRoot, loadTrustedRootFile } from "../../src/trust/trusted-root.js";
import { buildImage, generateKey, signDsse, signMessage } from "./signing.js";

const root = loadShippedTrustedRoot().root;
const owner = generateKey();
const other = generateKey();
const image = buildImage(undefined, "bundle-verify");
const CASES = fileURLToPath(new URL("../fixtures/sigstore/cases/", import.meta.url));

describe("key-signed bundles made in the test", () => {
  it("verify under the owner's key", async () => {
    const bundle = await signDsse(owner, image.digest);
    const verdict = verifyBundle({ bundle, digest: image.digest, trustedRoot: root, expected: { kind: "key", publicKey: owner.publicKey } });
    expect(verdict).toEqual({ ok: true, identity: { kind: "key", publicKey: owner.publicKey } });
  });

  it("fail under another key", async () => {
    const bundle = await signDsse(owner, image.digest);
    const verdict = verifyBundle({ bundle, digest: image.digest, trustedRoot: root, expected: { kind: "key", publicKey: other.publicKey } });
    expect(verdict).toMatchObject({ ok: false, reason: "key_mismatch" });
  });

  it("verify under the first of several keys that fits", async () => {
    const bundle = await signMessage(owner, image.manifest);
    const verdict = verifySignedBundle({ bundle, digest: image.digest, artifact: image.manifest, trustedRoot: root, publicKeys: [other.publicKey, owner.publicKey] });
    expect(verdict).toEqual({ ok: true, identity: { kind: "key", publicKey: owner.publicKey } });
  });

  it.each([
    ["a DSSE payload type other than in-toto", async () => signDsse(owner, image.digest, "application/json"), "payload_type_mismatch"],
    ["an in-toto subject for another digest", async () => signDsse(owner, buildImage(undefined, "x").digest), "subject_digest_mismatch"],
  ])("refuse %s", async (_what, make, reason) => {
    const verdict = verifyBundle({ bundle: await make(), digest: image.digest, trustedRoot: root, expected: { kind: "key", publicKey: owner.publicKey } });
    expect(verdict).toMatchObject({ ok: false, reason });
  });

  it("refuse a message signature without the signed bytes", async () => {
    const bundle = await signMessage(owner, image.manifest);
    const verdict = verifyBundle({ bundle, digest: image.digest, trustedRoot: root, expected: { kind: "key", publicKey: owner.publicKey } });
    expect(verdict).toMatchObject({ ok: false, reason: "artifact_required" });
  });

  it("refuse a message signature over other bytes than the digest names", async () => {
    const bundle = await signMessage(owner, image.manifest);
    const otherImage = buildImage(undefined, "other");
    const verdict = verifyBundle({ bundle, digest: otherImage.digest, artifact: otherImage.manifest, trustedRoot: root, expected: { kind: "key", publicKey: owner.publicKey } });
    expect(verdict).toMatchObject({ ok: false, reason: "message_digest_mismatch" });
  });

  it("refuse an artifact that does not hash to the digest", async () => {
    const bundle = await signMessage(owner, image.manifest);
    const verdict = verifySignedBundle({ bundle, digest: digestOf(Buffer.from("x")), artifact: image.manifest, trustedRoot: root, publicKeys: [owner.publicKey] });
    expect(verdict).toMatchObject({ ok: false, reason: "artifact_digest_mismatch" });
  });

  it("refuse a key bundle when a keyless identity is expected", async () => {
    const bundle = await signDsse(owner, image.digest);
    const verdict = verifyBundle({ bundle, digest: image.digest, trustedRoot: root, expected: { kind: "keyless", issuer: "https://x.example", subject: "s" } });
    expect(verdict).toMatchObject({ ok: false, reason: "certificate_required" });
  });
});

describe("anything the library throws", () => {
  it.each([
    ["a bundle that is a JSON array", "[]", "bundle_invalid"],
    ["a bundle with no content", JSON.stringify({ mediaType: "application/vnd.dev.sigstore.bundle.v0.3+json" }), "bundle_invalid"],
    ["a DSSE bundle whose signature list is empty", "EMPTY_SIGS", "bundle_invalid"],
    ["a malformed digest", "DIGEST", "digest_invalid"],
  ])("is a refusal: %s", async (_what, text, reason) => {
    let bundle: Uint8Array | string = text;
    let digest = image.digest;
    if (text === "EMPTY_SIGS") {
      const json = JSON.parse(Buffer.from(await signDsse(owner, image.digest)).toString()) as { dsseEnvelope: { signatures: unknown[] } };
      json.dsseEnvelope.signatures = [];
      bundle = JSON.stringify(json);
    }
    if (text === "DIGEST") {
      bundle = await signDsse(owner, image.digest);
      digest = "sha256:ABC";
    }
    const verdict = verifyBundle({ bundle, digest, trustedRoot: root, expected: { kind: "key", publicKey: owner.publicKey } });
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toBe(reason);
  });
});

describe("a keyless signer that verifies but is not trusted", () => {
  it("is refused by the policy as an untrusted signer", () => {
    const dir = `${CASES}happy-path-intoto-in-dsse-v3/`;
    const verdict = verifySignedBundle({
      bundle: readFileSync(`${dir}bundle.json`),
      digest: readFileSync(`${dir}digest`, "utf8").trim(),
      trustedRoot: loadTrustedRootFile(`${dir}trusted_root.json`).root,
    });
    expect(verdict.ok).toBe(true);
    if (!verdict.ok) return;
    const decision = newTrustPolicy(emptyCatalog(), []).decide({ digest: readFileSync(`${dir}digest`, "utf8").trim(), identities: [verdict.identity] });
    expect(decision).toMatchObject({ ok: false, errors: [{ code: "untrusted_signer" }] });
  });
});
