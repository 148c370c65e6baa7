/**
 * How cosign attaches a Sigstore bundle to an image (OCI 1.1): an artifact manifest with
 * `artifactType` the bundle media type, the empty config, one layer holding the bundle, and a
 * `subject` pointing at the image. Used by the writers (tests, the demo) and, in reverse, by
 * {@link readBundles} to find an image's bundles.
 */
import type { Descriptor, ImageManifest, ImageSource, Limits } from "./oci.js";
import { DEFAULT_LIMITS, EMPTY_CONFIG, EMPTY_CONFIG_DIGEST, ImageSourceError, MEDIA_TYPE, digestOf, parseImageManifest } from "./oci.js";

/** A bundle referrer ready to store: its blobs and its manifest. */
export interface BundleReferrer {
  readonly manifest: Uint8Array;
  readonly descriptor: Descriptor;
  readonly blobs: readonly Uint8Array[];
}

/** Builds the referrer manifest that attaches `bundle` to the image described by `subject`. */
export function buildBundleReferrer(subject: Descriptor, bundle: Uint8Array): BundleReferrer {
  const manifest = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPE.ociManifest,
    artifactType: MEDIA_TYPE.sigstoreBundle,
    config: { mediaType: MEDIA_TYPE.ociEmpty, digest: EMPTY_CONFIG_DIGEST, size: EMPTY_CONFIG.length },
    layers: [{ mediaType: MEDIA_TYPE.sigstoreBundle, digest: digestOf(bundle), size: bundle.length }],
    subject: { mediaType: subject.mediaType, digest: subject.digest, size: subject.size },
  };
  const bytes = new TextEncoder().encode(JSON.stringify(manifest));
  return {
    manifest: bytes,
    descriptor: { mediaType: MEDIA_TYPE.ociManifest, digest: digestOf(bytes), size: bytes.length, artifactType: MEDIA_TYPE.sigstoreBundle },
    blobs: [EMPTY_CONFIG, bundle],
  };
}

/** True when a referrer manifest carries a Sigstore bundle about `digest`. */
export function isBundleReferrer(manifest: ImageManifest, digest: string): boolean {
  const type = manifest.artifactType ?? manifest.config.mediaType;
  return type === MEDIA_TYPE.sigstoreBundle && manifest.subject?.digest === digest;
}

/**
 * Every Sigstore bundle attached to the image `digest`: the referrers listed, each read by digest,
 * kept only when its own `subject` is the image (a tag-fallback index anyone can push to lists
 * nothing we take on trust), and its bundle layer read by digest within the size limit.
 */
export async function readBundles(source: ImageSource, repository: string, digest: string, limits: Limits = DEFAULT_LIMITS): Promise<Uint8Array[]> {
  const listed = await source.referrers(repository, digest);
  if (listed.length > limits.referrers) {
    throw new ImageSourceError("too_large", `the image has ${listed.length} referrers, more than ${limits.referrers}`);
  }
  const bundles: Uint8Array[] = [];
  const seen = new Set<string>();
  for (const d of listed) {
    if (d.artifactType !== undefined && d.artifactType !== MEDIA_TYPE.sigstoreBundle) continue;
    if (d.mediaType !== MEDIA_TYPE.ociManifest || seen.has(d.digest)) continue;
    seen.add(d.digest);
    const fetched = await source.manifest(repository, d.digest, limits.manifest);
    const manifest = parseImageManifest(fetched.bytes, fetched.mediaType);
    if (!isBundleReferrer(manifest, digest)) continue;
    for (const layer of manifest.layers) {
      if (layer.mediaType !== MEDIA_TYPE.sigstoreBundle) continue;
      if (layer.size > limits.bundle) throw new ImageSourceError("too_large", `bundle ${layer.digest} is larger than ${limits.bundle} bytes`);
      bundles.push(await source.blob(repository, layer.digest, limits.bundle));
    }
  }
  return bundles;
}
