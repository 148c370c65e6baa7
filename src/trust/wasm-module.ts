/**
 * Reading a WebAssembly plugin's module from its OCI artifact (issue 13): the image manifest,
 * read by digest through any {@link ImageSource}, has exactly one layer, of media type
 * `application/vnd.wasm.content.layer.v1+wasm`; the module is that layer's blob, size-capped
 * before it is read, and the module is identified by the lowercase hex SHA-256 of its bytes,
 * which the layer digest must be (`sha256:` + that hex). The config (with the signed manifest
 * label) is read and verified by the ordinary image check, as for any plugin image.
 */
import { digestOf, ImageSourceError, parseImageManifest, type Descriptor, type ImageManifest, type ImageSource } from "./oci.js";

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
  const module = wasmModuleLayer(manifest);
  if (module === null) {
    const why = manifest.layers.length === 1
      ? `the layer's media type is ${JSON.stringify(manifest.layers[0]?.mediaType)}, not ${WASM_LAYER_MEDIA_TYPE}`
      : `a WebAssembly plugin's image has exactly one layer, not ${manifest.layers.length}`;
    throw new ImageSourceError("malformed", why);
  }
  if (typeof module === "string") throw new ImageSourceError("malformed", module);
  const { layer } = module;
  if (layer.size > maxBytes) throw new ImageSourceError("too_large", `the module is ${layer.size} bytes, more than the cap of ${maxBytes}`);
  const bytes = await source.blob(repository, layer.digest, layer.size);
  // The source checked the digest; the module's own identity is checked here again, with its size.
  if (bytes.length !== layer.size || digestOf(bytes) !== layer.digest) {
    throw new ImageSourceError("digest_mismatch", "the module's bytes are not the layer's");
  }
  return { digest: module.digest, bytes, config: manifest.config };
}

/**
 * The module layer of a WebAssembly plugin's manifest (its one layer, of the wasm media type, a
 * SHA-256 digest) with the module's digest as lowercase hex; null when no layer is a module (a
 * container image); or why an artifact with a module layer is not a WebAssembly plugin.
 */
export function wasmModuleLayer(manifest: ImageManifest): { readonly digest: string; readonly layer: Descriptor } | null | string {
  const wasm = manifest.layers.filter((l) => l.mediaType === WASM_LAYER_MEDIA_TYPE);
  if (wasm.length === 0) return null;
  if (manifest.layers.length !== 1) return `a WebAssembly plugin's image has exactly one layer, not ${manifest.layers.length}`;
  const layer = wasm[0] as Descriptor;
  const hex = /^sha256:([0-9a-f]{64})$/.exec(layer.digest)?.[1];
  if (hex === undefined) return `the module layer's digest ${layer.digest} is not a SHA-256 digest`;
  return { digest: hex, layer };
}
