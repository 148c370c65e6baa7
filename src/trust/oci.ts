/**
 * The OCI shapes the image check reads (manifests, indexes, descriptors), parsed strictly enough
 * that a malformed answer is a refusal and never a crash, and the port every image source
 * implements: a registry over HTTP ({@link RegistryClient}) or an OCI image-layout directory.
 * Every manifest and blob a source returns has been size-limited and checked against its digest.
 */
import { createHash } from "node:crypto";

export const MEDIA_TYPE = {
  ociManifest: "application/vnd.oci.image.manifest.v1+json",
  ociIndex: "application/vnd.oci.image.index.v1+json",
  ociConfig: "application/vnd.oci.image.config.v1+json",
  ociEmpty: "application/vnd.oci.empty.v1+json",
  dockerManifest: "application/vnd.docker.distribution.manifest.v2+json",
  dockerList: "application/vnd.docker.distribution.manifest.list.v2+json",
  dockerConfig: "application/vnd.docker.container.image.v1+json",
  sigstoreBundle: "application/vnd.dev.sigstore.bundle.v0.3+json",
} as const;

/** The empty config blob `{}` of an artifact manifest, and its digest. */
export const EMPTY_CONFIG = new TextEncoder().encode("{}");
export const EMPTY_CONFIG_DIGEST = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

/** Size limits on every read, in bytes, and on how many referrers one image may have. */
export interface Limits {
  readonly manifest: number;
  readonly index: number;
  readonly config: number;
  readonly bundle: number;
  readonly referrers: number;
}

export const DEFAULT_LIMITS: Limits = {
  manifest: 4 * 1024 * 1024,
  index: 4 * 1024 * 1024,
  config: 4 * 1024 * 1024,
  bundle: 1024 * 1024,
  referrers: 256,
};

/** Why reading an image failed. `unreachable` alone means "try again later"; every other code is a refusal. */
export type ImageSourceErrorCode =
  | "unreachable"
  | "not_found"
  | "digest_mismatch"
  | "too_large"
  | "malformed"
  | "auth_failed"
  | "http_error";

/** A failed read from a registry or a layout. Messages never carry a token or a credential. */
export class ImageSourceError extends Error {
  constructor(
    readonly code: ImageSourceErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ImageSourceError";
  }
}

/** An OCI content descriptor. */
export interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly artifactType?: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** An image (or artifact) manifest: config, layers, and the image it refers to, if any. */
export interface ImageManifest {
  readonly mediaType: string;
  readonly artifactType?: string;
  readonly config: Descriptor;
  readonly layers: readonly Descriptor[];
  readonly subject?: Descriptor;
}

/** An image index: a list of manifests (also the shape of a referrers answer). */
export interface ImageIndex {
  readonly mediaType: string;
  readonly manifests: readonly Descriptor[];
}

/** A manifest as read: its verified bytes and the media type it declares. */
export interface FetchedManifest {
  readonly bytes: Uint8Array;
  readonly mediaType: string;
}

/**
 * Where images come from. Each method checks sizes and digests before returning, and throws
 * {@link ImageSourceError} otherwise.
 */
export interface ImageSource {
  /** For messages: where this source reads from (never with credentials). */
  readonly description: string;
  /** The manifest stored under `digest`, whose bytes hash to it. */
  manifest(repository: string, digest: string, maxBytes?: number): Promise<FetchedManifest>;
  /** The blob stored under `digest`, whose bytes hash to it, at most `maxBytes` long. */
  blob(repository: string, digest: string, maxBytes: number): Promise<Uint8Array>;
  /** Descriptors of the manifests whose subject is `digest` (unverified: read each by digest). */
  referrers(repository: string, digest: string): Promise<readonly Descriptor[]>;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** True for `sha256:<64 lower-case hex>`, the only digest form we read. */
export function isDigest(value: unknown): value is string {
  return typeof value === "string" && DIGEST.test(value);
}

/** `sha256:<hex>` of some bytes. */
export function digestOf(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** Throws `digest_mismatch` unless `bytes` hash to `digest`. */
export function checkDigest(bytes: Uint8Array, digest: string, what: string): void {
  if (digestOf(bytes) !== digest) throw new ImageSourceError("digest_mismatch", `${what} does not match its digest ${digest}`);
}

function malformed(message: string): ImageSourceError {
  return new ImageSourceError("malformed", message);
}

function parseJsonObject(bytes: Uint8Array, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch {
    throw malformed(`${what} is not JSON`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw malformed(`${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

/** Parses a descriptor, refusing one without a sha256 digest or a sane size. */
export function parseDescriptor(value: unknown, what: string): Descriptor {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw malformed(`${what} is not a descriptor`);
  const d = value as Record<string, unknown>;
  if (typeof d.mediaType !== "string" || d.mediaType === "") throw malformed(`${what} has no mediaType`);
  if (!isDigest(d.digest)) throw malformed(`${what} has no sha256 digest`);
  if (typeof d.size !== "number" || !Number.isSafeInteger(d.size) || d.size < 0) throw malformed(`${what} has no valid size`);
  const out: { -readonly [K in keyof Descriptor]: Descriptor[K] } = { mediaType: d.mediaType, digest: d.digest, size: d.size };
  if (d.artifactType !== undefined) {
    if (typeof d.artifactType !== "string") throw malformed(`${what}.artifactType is not a string`);
    out.artifactType = d.artifactType;
  }
  if (d.annotations !== undefined) {
    if (typeof d.annotations !== "object" || d.annotations === null || Array.isArray(d.annotations)) {
      throw malformed(`${what}.annotations is not an object`);
    }
    const annotations: Record<string, string> = {};
    for (const [k, v] of Object.entries(d.annotations)) {
      if (typeof v !== "string") throw malformed(`${what}.annotations.${k} is not a string`);
      annotations[k] = v;
    }
    out.annotations = annotations;
  }
  return out;
}

/** Parses an image manifest (OCI or Docker v2). An index is refused: it has no config to read. */
export function parseImageManifest(bytes: Uint8Array, declaredMediaType = ""): ImageManifest {
  const m = parseJsonObject(bytes, "manifest");
  if (m.schemaVersion !== 2) throw malformed("manifest schemaVersion is not 2");
  const mediaType = typeof m.mediaType === "string" ? m.mediaType : declaredMediaType;
  if (mediaType === MEDIA_TYPE.ociIndex || mediaType === MEDIA_TYPE.dockerList || Array.isArray(m.manifests)) {
    throw malformed("the digest names an image index; give the digest of one platform's manifest");
  }
  if (mediaType !== MEDIA_TYPE.ociManifest && mediaType !== MEDIA_TYPE.dockerManifest) {
    throw malformed(`manifest media type ${JSON.stringify(mediaType)} is not an image manifest`);
  }
  if (!Array.isArray(m.layers)) throw malformed("manifest has no layers list");
  const out: { -readonly [K in keyof ImageManifest]: ImageManifest[K] } = {
    mediaType,
    config: parseDescriptor(m.config, "manifest.config"),
    layers: m.layers.map((l, i) => parseDescriptor(l, `manifest.layers[${i}]`)),
  };
  if (m.artifactType !== undefined) {
    if (typeof m.artifactType !== "string") throw malformed("manifest.artifactType is not a string");
    out.artifactType = m.artifactType;
  }
  if (m.subject !== undefined) out.subject = parseDescriptor(m.subject, "manifest.subject");
  return out;
}

/** Parses an image index (a referrers answer or the `sha256-<hex>` fallback tag), at most `maxEntries` long. */
export function parseImageIndex(bytes: Uint8Array, maxEntries: number): ImageIndex {
  const m = parseJsonObject(bytes, "index");
  if (m.schemaVersion !== 2) throw malformed("index schemaVersion is not 2");
  const mediaType = typeof m.mediaType === "string" ? m.mediaType : MEDIA_TYPE.ociIndex;
  if (mediaType !== MEDIA_TYPE.ociIndex) throw malformed(`index media type ${JSON.stringify(mediaType)} is not an OCI index`);
  if (!Array.isArray(m.manifests)) throw malformed("index has no manifests list");
  if (m.manifests.length > maxEntries) {
    throw new ImageSourceError("too_large", `index lists ${m.manifests.length} manifests, more than ${maxEntries}`);
  }
  return { mediaType, manifests: m.manifests.map((d, i) => parseDescriptor(d, `index.manifests[${i}]`)) };
}

/** Reads at most `limit` bytes of a stream of chunks, refusing more with `too_large`. */
export async function readLimited(body: AsyncIterable<Uint8Array> | null, limit: number, what: string): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (body !== null) {
    for await (const chunk of body) {
      total += chunk.length;
      if (total > limit) throw new ImageSourceError("too_large", `${what} is larger than ${limit} bytes`);
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks, total);
}
