/**
 * Installing a plugin's WebAssembly module in a plugin host: the one use case both hosts call —
 * the one `openfief up` runs (fed what the log says runs) and the cluster's `openfief plugin-host`
 * (fed the operator's ConfigMap). The module is read from its image by digest and installed only
 * when every check holds:
 *
 * - the image is pinned by digest (a tag could name other bytes tomorrow);
 * - the image's one layer is the module that was published for it (the digest the rollout decided
 *   on, or the operator wrote), so a registry cannot hand over another module under the image;
 * - the module comes with its signed manifest: the one the rollout decided on when given, else the
 *   image's signed label (a config too large to read, or a label missing or unreadable, refuses).
 *
 * A refusal is recorded as a refused call of the plugin (method `install`), so `why`, the log and
 * the host's metrics say why it cannot run, and is also returned.
 */
import { parseImageRef, parseManifestLabel, formatErrors } from "../plugins/index.js";
import type { ImageRef, Manifest } from "../plugins/index.js";
import { hostError, HostErrorCode } from "../host/index.js";
import type { HostError, PluginHost } from "../host/index.js";
import { readLabel, readWasmModule } from "../trust/index.js";
import type { ImageSource } from "../trust/index.js";

/** The largest image config read for its label. */
export const MAX_MODULE_CONFIG_BYTES = 1024 * 1024;

/** Where an image's blobs are read from. */
export type ModuleSourceFor = (image: ImageRef) => Promise<{ readonly source: ImageSource; readonly repository: string }>;

/** The module to install, as the log (or the operator) names it. */
export interface ModuleToInstall {
  /** The plugin it runs (refusals are recorded under it). */
  readonly plugin: string;
  /** Its image, pinned by digest. */
  readonly image: string;
  /** The hex SHA-256 of the module that was published for the image: the image's one layer must be it. */
  readonly module: string;
  /** The signed manifest the rollout decided on; absent or null: the image's signed label. */
  readonly manifest?: Manifest | null;
  /** Who the install event names (the host's own actor when absent). */
  readonly actor?: string;
}

/** An installed module, or the refusal recorded for it. */
export type ModuleInstalled = { readonly ok: true; readonly digest: string } | { readonly ok: false; readonly error: HostError };

/**
 * Reads `m`'s module from its image and installs it in `host` when every check holds; otherwise
 * records the refusal and returns it. An image that cannot be read (a registry down) throws, so
 * the caller retries later; nothing is recorded for it.
 */
export async function installModule(host: PluginHost, sourceFor: ModuleSourceFor, m: ModuleToInstall): Promise<ModuleInstalled> {
  const refuse = async (error: HostError): Promise<ModuleInstalled> => {
    await host.refuse(m.plugin, m.module, "install", error);
    return { ok: false, error };
  };
  const ref = parseImageRef(m.image);
  if (!ref.ok) return refuse(hostError(HostErrorCode.ModuleInvalid, "the published image is not pinned by digest"));
  const { source, repository } = await sourceFor(ref.value);
  const artifact = await readWasmModule(source, repository, ref.value.digest, host.caps.moduleBytes);
  if (artifact.digest !== m.module) return refuse(hostError(HostErrorCode.ModuleInvalid, "the image's module is not the module that was published for it"));
  let manifest = m.manifest ?? null;
  if (manifest === null) {
    if (artifact.config.size > MAX_MODULE_CONFIG_BYTES) return refuse(hostError(HostErrorCode.ManifestInvalid, "the image's config is too large to read its label"));
    const label = readLabel(await source.blob(repository, artifact.config.digest, artifact.config.size));
    const parsed = label === undefined ? null : parseManifestLabel(label, "label");
    if (parsed === null || !parsed.ok) return refuse(hostError(HostErrorCode.ManifestInvalid, `the image carries no readable signed manifest label${parsed === null ? "" : `: ${formatErrors(parsed.errors)}`}`));
    manifest = parsed.value;
  }
  const r = await host.install(artifact.bytes, { manifest, ...(m.actor === undefined ? {} : { actor: m.actor }) });
  if (!r.ok) return refuse(r.error);
  return { ok: true, digest: artifact.digest };
}
