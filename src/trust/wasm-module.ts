/**
 * Reading a WebAssembly plugin's module from its OCI artifact (issue 13): the image manifest,
 * read by digest through any {@link ImageSource}, has exactly one layer, of media type
 * `application/vnd.wasm.content.layer.v1+wasm`; the module is that layer's blob, size-capped
 * before it is read, and the module is identified by the lowercase hex SHA-256 of its bytes,
 * which the layer digest must be (`sha256:` + that hex). The config (with the signed manifest
 * label) is read and verified by the ordinary image check, as for any plugin image.
 */
import { digestOf, ImageSourceError, parseImageManifest, type Descriptor, type ImageSource } from "./oci.js";

/** The media type of a WebAssembly module layer. */
export const WASM_LAYER_MEDIA_TYPE = "application/vnd.wasm.content.layer.v1+wasm";

/** The default cap on a module's size, the host's default (32 MiB). */
export const DEFAULT_WASM_MODULE_BYTES = 32 * 1024 * 1024;

/** A module read from its artifact. */
export interface WasmModuleArtifact {
  /** Lowercase hex SHA-256 of the module: what the plugin host knows it by. */
  readonly digest: string;
  readonly bytes: Uint8Array;
  /** The artifact's config descriptor (its blob carries the manifest label). */
  readonly config: Descriptor;
}

/**
 * Reads the module of the artifact whose manifest has `manifestDigest`. Throws
 * {@link ImageSourceError}: `malformed` when the artifact is not a WebAssembly plugin,
 * `too_large` above `maxBytes`, `digest_mismatch` when the bytes are not the layer's.
 */
export async function readWasmModule(source: ImageSource, repository: string, manifestDigest: string, maxBytes: number = DEFAULT_WASM_MODULE_BYTES): Promise<WasmModuleArtifact> {
  const fetched = await source.manifest(repository, manifestDigest);
  const manifest = parseImageManifest(fetched.bytes, fetched.mediaType);
  if (manifest.layers.length !== 1) {
    throw new ImageSourceError("malformed", `a WebAssembly plugin's image has exactly one layer, not ${manifest.layers.length}`);
  }
  const layer = manifest.layers[0] as Descriptor;
  if (layer.mediaType !== WASM_LAYER_MEDIA_TYPE) {
    throw new ImageSourceError("malformed", `the layer's media type is ${JSON.stringify(layer.mediaType)}, not ${WASM_LAYER_MEDIA_TYPE}`);
  }
  if (layer.size > maxBytes) throw new ImageSourceError("too_large", `the module is ${layer.size} bytes, more than the cap of ${maxBytes}`);
  const bytes = await source.blob(repository, layer.digest, layer.size);
  // The source checked the digest; the module's own identity is checked here again, with its size.
  if (bytes.length !== layer.size || digestOf(bytes) !== layer.digest) {
    throw new ImageSourceError("digest_mismatch", "the module's bytes are not the layer's");
  }
  return { digest: layer.digest.slice("sha256:".length), bytes, config: manifest.config };
}
