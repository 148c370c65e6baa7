/**
 * Test helpers: key-signed Sigstore bundles made offline with `@sigstore/sign` (a custom signer
 * over a generated EC P-256 key, no Fulcio, Rekor or timestamp witnesses), cosign-v3 style: a DSSE
 * in-toto statement whose subject is the image manifest digest. And small OCI images with a label.
 */
import { createHash, generateKeyPairSync, sign as cryptoSign } from "node:crypto";
import type { KeyObject } from "node:crypto";
import { bundleToJSON } from "@sigstore/bundle";
import { DSSEBundleBuilder, MessageSignatureBundleBuilder } from "@sigstore/sign";
import type { Signer } from "@sigstore/sign";
import { MANIFEST_LABEL } from "../../src/plugins/constants.js";
import { MEDIA_TYPE } from "../../src/trust/oci.js";

export interface TestKey {
  readonly publicKey: string;
  readonly privateKey: KeyObject;
}

export function generateKey(): TestKey {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(), privateKey };
}

function signer(key: TestKey): Signer {
  return {
    sign: async (data: Buffer) => ({
      signature: cryptoSign("sha256", data, key.privateKey),
      key: { $case: "publicKey", publicKey: key.publicKey, hint: "" },
    }),
  };
}

/** A DSSE bundle over an in-toto statement naming `digest` (hex after sha256:). */
export async function signDsse(key: TestKey, digest: string, payloadType = "application/vnd.in-toto+json"): Promise<Uint8Array> {
  const statement = {
    _type: "https://in-toto.io/Statement/v1",
    subject: [{ name: "image", digest: { sha256: digest.replace(/^sha256:/, "") } }],
    predicateType: "https://sigstore.dev/cosign/sign/v1",
    predicate: {},
  };
  const builder = new DSSEBundleBuilder({ signer: signer(key), witnesses: [] });
  const bundle = await builder.create({ data: Buffer.from(JSON.stringify(statement)), type: payloadType });
  return Buffer.from(JSON.stringify(bundleToJSON(bundle)));
}

/** A message-signature bundle over `data` (an image manifest). */
export async function signMessage(key: TestKey, data: Uint8Array): Promise<Uint8Array> {
  const builder = new MessageSignatureBundleBuilder({ signer: signer(key), witnesses: [] });
  const bundle = await builder.create({ data: Buffer.from(data) });
  return Buffer.from(JSON.stringify(bundleToJSON(bundle)));
}

export interface TestImage {
  readonly manifest: Uint8Array;
  readonly config: Uint8Array;
  readonly layer: Uint8Array;
  readonly digest: string;
  readonly blobs: readonly Uint8Array[];
}

function sha(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** A tiny image whose config carries `label` (JSON text) as the manifest label, or no label. */
export function buildImage(label: string | undefined, seed = "layer"): TestImage {
  const layer = Buffer.from(`not really a tarball: ${seed}`);
  const config = Buffer.from(
    JSON.stringify({
      architecture: "amd64",
      os: "linux",
      config: label === undefined ? {} : { Labels: { [MANIFEST_LABEL]: label } },
      rootfs: { type: "layers", diff_ids: [sha(layer)] },
    }),
  );
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_TYPE.ociManifest,
      config: { mediaType: MEDIA_TYPE.ociConfig, digest: sha(config), size: config.length },
      layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: sha(layer), size: layer.length }],
    }),
  );
  return { manifest, config, layer, digest: sha(manifest), blobs: [config, layer] };
}

/** A valid manifest label and the same manifest as a Plugin declares it. */
export const LABEL_MANIFEST = {
  capabilities: ["connector"],
  egress: [{ host: "api.example.com", port: 443 }],
  secrets: [],
  dataTiers: [],
};
