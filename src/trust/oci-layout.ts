/**
 * An OCI image-layout directory (`oci-layout`, `index.json`, `blobs/sha256/<hex>`) as an
 * {@link ImageSource}, so an image can be verified without a registry; and a writer that builds
 * one (an image plus bundles attached as referrers) for tests and the demo. Referrers are the
 * manifests listed in `index.json` whose `subject` is the image.
 */
import { mkdir, open, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Descriptor, FetchedManifest, ImageSource, Limits } from "./oci.js";
import { DEFAULT_LIMITS, ImageSourceError, MEDIA_TYPE, checkDigest, digestOf, isDigest, parseImageIndex, parseImageManifest } from "./oci.js";
import { buildBundleReferrer } from "./bundle-referrer.js";

const LAYOUT_FILE = JSON.stringify({ imageLayoutVersion: "1.0.0" });

/** Reads images from an OCI image-layout directory. The repository name is ignored: a layout holds one store. */
export class OciLayoutSource implements ImageSource {
  readonly description: string;
  readonly limits: Limits;

  constructor(
    readonly dir: string,
    limits: Partial<Limits> = {},
  ) {
    this.description = `OCI layout ${dir}`;
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  async #read(path: string, limit: number, what: string): Promise<Uint8Array> {
    let handle;
    try {
      handle = await open(path, "r");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") throw new ImageSourceError("not_found", `${what} is not in ${this.description}`);
      throw new ImageSourceError("unreachable", `cannot read ${what} from ${this.description}: ${code ?? "error"}`);
    }
    try {
      const { size } = await handle.stat();
      if (size > limit) throw new ImageSourceError("too_large", `${what} is larger than ${limit} bytes`);
      const buf = Buffer.alloc(size);
      const { bytesRead } = await handle.read(buf, 0, size, 0);
      return buf.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }

  #blobPath(digest: string): string {
    return join(this.dir, "blobs", "sha256", digest.slice("sha256:".length));
  }

  /** {@inheritDoc ImageSource.blob} */
  async blob(_repository: string, digest: string, maxBytes: number): Promise<Uint8Array> {
    if (!isDigest(digest)) throw new ImageSourceError("malformed", "a blob is read only by sha256 digest");
    const bytes = await this.#read(this.#blobPath(digest), maxBytes, `blob ${digest}`);
    checkDigest(bytes, digest, `blob ${digest}`);
    return bytes;
  }

  /** {@inheritDoc ImageSource.manifest} */
  async manifest(repository: string, digest: string, maxBytes: number = this.limits.manifest): Promise<FetchedManifest> {
    const bytes = await this.blob(repository, digest, maxBytes);
    let mediaType = "";
    try {
      const parsed = JSON.parse(Buffer.from(bytes).toString("utf8")) as { mediaType?: unknown };
      if (typeof parsed.mediaType === "string") mediaType = parsed.mediaType;
    } catch {
      // parseImageManifest reports it as malformed.
    }
    return { bytes, mediaType };
  }

  /** The manifests `index.json` lists. */
  async index(): Promise<readonly Descriptor[]> {
    const bytes = await this.#read(join(this.dir, "index.json"), this.limits.index, "index.json");
    return parseImageIndex(bytes, this.limits.referrers).manifests;
  }

  /** {@inheritDoc ImageSource.referrers} */
  async referrers(repository: string, digest: string): Promise<readonly Descriptor[]> {
    const out: Descriptor[] = [];
    for (const d of await this.index()) {
      if (d.mediaType !== MEDIA_TYPE.ociManifest || d.digest === digest) continue;
      const fetched = await this.manifest(repository, d.digest);
      const m = parseImageManifest(fetched.bytes, fetched.mediaType);
      if (m.subject?.digest !== digest) continue;
      const artifactType = m.artifactType ?? m.config.mediaType;
      out.push({ mediaType: d.mediaType, digest: d.digest, size: d.size, artifactType });
    }
    return out;
  }
}

async function putBlob(dir: string, bytes: Uint8Array): Promise<string> {
  const digest = digestOf(bytes);
  const path = join(dir, "blobs", "sha256", digest.slice("sha256:".length));
  try {
    await stat(path);
  } catch {
    await writeFile(path, bytes);
  }
  return digest;
}

async function readIndex(dir: string): Promise<Descriptor[]> {
  try {
    const text = await readFile(join(dir, "index.json"));
    return [...parseImageIndex(text, Number.MAX_SAFE_INTEGER).manifests];
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

async function writeIndex(dir: string, manifests: readonly Descriptor[]): Promise<void> {
  await writeFile(join(dir, "index.json"), JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_TYPE.ociIndex, manifests }));
}

async function ensureLayout(dir: string): Promise<void> {
  await mkdir(join(dir, "blobs", "sha256"), { recursive: true });
  await writeFile(join(dir, "oci-layout"), LAYOUT_FILE);
}

/**
 * Writes an image (manifest bytes and its blobs) into a layout directory, creating it when
 * missing, and lists it in `index.json` (with `org.opencontainers.image.ref.name` when a tag is
 * given). Returns the image's descriptor.
 */
export async function writeImageToLayout(dir: string, image: { manifest: Uint8Array; blobs: readonly Uint8Array[]; tag?: string }): Promise<Descriptor> {
  await ensureLayout(dir);
  for (const blob of image.blobs) await putBlob(dir, blob);
  const digest = await putBlob(dir, image.manifest);
  const descriptor: Descriptor = {
    mediaType: MEDIA_TYPE.ociManifest,
    digest,
    size: image.manifest.length,
    ...(image.tag === undefined ? {} : { annotations: { "org.opencontainers.image.ref.name": image.tag } }),
  };
  const manifests = (await readIndex(dir)).filter((m) => m.digest !== digest);
  await writeIndex(dir, [...manifests, descriptor]);
  return descriptor;
}

/** Attaches a Sigstore bundle to an image in a layout directory, as a referrer listed in `index.json`. */
export async function writeBundleToLayout(dir: string, subject: Descriptor, bundle: Uint8Array): Promise<Descriptor> {
  await ensureLayout(dir);
  const referrer = buildBundleReferrer(subject, bundle);
  for (const blob of referrer.blobs) await putBlob(dir, blob);
  await putBlob(dir, referrer.manifest);
  const manifests = (await readIndex(dir)).filter((m) => m.digest !== referrer.descriptor.digest);
  await writeIndex(dir, [...manifests, referrer.descriptor]);
  return referrer.descriptor;
}
