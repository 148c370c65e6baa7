/**
 * Packs, signs and publishes a plugin image the way OpenFief reads one, for plugin authors and
 * for the demo (scripts/make-demo.ts builds its images with the same functions):
 *
 *   build    an image into an OCI image layout: a WebAssembly module (`--wasm`, the artifact's
 *            one layer) or a folder of files (`--files`, one layer), its manifest in the label
 *            `io.openfief.plugin.manifest`, a view's UI bundle named by digest (`--ui`); writes the
 *            Plugin resource whose `spec.manifest` equals the label (`--plugin-out`)
 *   sign     a Sigstore bundle over the image's digest, signed with a key (what `cosign sign --key`
 *            writes: DSSE, an in-toto statement), attached to the image as an OCI referrer
 *   attach   a view's UI bundle as an OCI artifact whose subject is the image (as `oras attach`)
 *   push     the image and everything attached to it to its registry
 *
 * Every output is deterministic but the signature. docs/plugin-authors.md walks through them.
 *
 *   npx tsx scripts/plugin-image.ts <command> --help
 */
import { createHash, createPrivateKey, createPublicKey, sign as cryptoSign } from "node:crypto";
import type { KeyObject } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleToJSON } from "@sigstore/bundle";
import { DSSEBundleBuilder } from "@sigstore/sign";
import type { Signer } from "@sigstore/sign";
import { Command } from "commander";
import { stringify as toYaml } from "yaml";
import { API_GROUP, API_VERSION, MANIFEST_LABEL, NAMESPACE } from "../src/plugins/constants.js";
import { parseImageRef } from "../src/plugins/image-ref.js";
import { parseManifestLabel } from "../src/plugins/manifest-label.js";
import { formatErrors } from "../src/plugins/errors.js";
import { MEDIA_TYPE } from "../src/trust/oci.js";
import type { Descriptor } from "../src/trust/oci.js";
import { writeBundleToLayout, writeImageToLayout } from "../src/trust/oci-layout.js";
import { RegistryClient, registryLocation } from "../src/trust/registry.js";

/** Every file in a layer carries this mtime (2026-01-01T00:00:00Z), so digests never move. */
export const FIXED_MTIME = 1_767_225_600;
const FIXED_CREATED = new Date(FIXED_MTIME * 1000).toISOString().replace(".000Z", "Z");
const LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip";
/** The media type of a WebAssembly module layer (the one layer of a WebAssembly plugin's artifact). */
export const WASM_LAYER_MEDIA_TYPE = "application/vnd.wasm.content.layer.v1+wasm";
/** The artifact type of a view's UI bundle attached to its image, and the media type of its one layer. */
export const UI_ARTIFACT_TYPE = "application/vnd.openfief.plugin.ui.v1";
export const UI_LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar";
const IN_TOTO_STATEMENT = "https://in-toto.io/Statement/v1";
const IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json";
const COSIGN_SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1";

export function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

function utf8(text: string): Buffer {
  return Buffer.from(text, "utf8");
}

// --- a deterministic tar, and gzip --------------------------------------------------------------

function octal(value: number, width: number): string {
  // width - 1 digits and a NUL, as ustar writes numeric fields.
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

/** One ustar file entry: header, content, padding to 512. Owner 0:0, mode 0644, fixed mtime. */
export function tarEntry(name: string, content: Buffer): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`${name}: a path in a layer is at most 100 bytes here`);
  const header = Buffer.alloc(512, 0);
  const put = (offset: number, text: string): void => void header.write(text, offset, "ascii");
  put(0, name);
  put(100, octal(0o644, 8));
  put(108, octal(0, 8));
  put(116, octal(0, 8));
  put(124, octal(content.length, 12));
  put(136, octal(FIXED_MTIME, 12));
  put(148, "        ");
  put(156, "0");
  put(257, "ustar\0");
  put(263, "00");
  put(265, "root");
  put(297, "root");
  let sum = 0;
  for (const b of header) sum += b;
  put(148, `${sum.toString(8).padStart(6, "0")}\0 `);
  const padding = Buffer.alloc((512 - (content.length % 512)) % 512, 0);
  return Buffer.concat([header, content, padding]);
}

/** Files (in the order given) in one uncompressed ustar archive, ended by two zero blocks. */
export function tarOf(files: readonly (readonly [string, Buffer])[]): Buffer {
  return Buffer.concat([...files.map(([name, content]) => tarEntry(name, content)), Buffer.alloc(1024, 0)]);
}

/** Every file under `dir`, by path relative to it, sorted; dot files left out. */
export function filesOf(dir: string): [string, Buffer][] {
  const out: [string, Buffer][] = [];
  const walk = (at: string): void => {
    for (const name of readdirSync(at).filter((n) => !n.startsWith(".")).sort()) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.push([relative(dir, path).split("\\").join("/"), readFileSync(path)]);
    }
  };
  walk(dir);
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const CRC_TABLE = ((): Uint32Array => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = (CRC_TABLE[(c ^ b) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * gzip with stored (uncompressed) deflate blocks: every byte is fixed by the input alone, so the
 * digest cannot change with the zlib that happens to be installed.
 */
export function gzipStored(data: Buffer): Buffer {
  const parts: Buffer[] = [Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03])];
  for (let offset = 0; offset === 0 || offset < data.length; offset += 0xffff) {
    const chunk = data.subarray(offset, offset + 0xffff);
    const last = offset + 0xffff >= data.length;
    const head = Buffer.alloc(5);
    head[0] = last ? 1 : 0;
    head.writeUInt16LE(chunk.length, 1);
    head.writeUInt16LE(~chunk.length & 0xffff, 3);
    parts.push(head, chunk);
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc32(data), 0);
  trailer.writeUInt32LE(data.length >>> 0, 4);
  parts.push(trailer);
  return Buffer.concat(parts);
}

// --- images ------------------------------------------------------------------------------------

/** An image ready to write: its label, manifest bytes, blobs, digest and reference. */
export interface BuiltImage {
  readonly label: string;
  readonly manifest: Buffer;
  readonly blobs: readonly Buffer[];
  readonly digest: string;
  readonly reference: string;
}

/** What an image is made of, besides its layer. */
export interface ImageInput {
  /** The repository (`[registry/]path`) the image is named under. */
  readonly repository: string;
  /** A title and a version, for people (OCI annotations). */
  readonly title: string;
  readonly version: string;
  /** The manifest, exactly as the label carries it (compact JSON of this value). */
  readonly manifest: unknown;
}

function imageManifest(config: Buffer, layers: readonly object[], input: ImageInput): Buffer {
  return utf8(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_TYPE.ociManifest,
      config: { mediaType: MEDIA_TYPE.ociConfig, digest: sha256(config), size: config.length },
      layers,
      annotations: { "org.opencontainers.image.title": input.title, "org.opencontainers.image.version": input.version },
    }),
  );
}

/**
 * A container image of one layer holding `files`, its config carrying the label and a numeric
 * user (a pod that runs as non-root refuses a user given by name). Pure and deterministic.
 */
export function buildContainerImage(input: ImageInput, files: readonly (readonly [string, Buffer])[]): BuiltImage {
  const label = JSON.stringify(input.manifest);
  const tar = tarOf(files);
  const layer = gzipStored(tar);
  const config = utf8(
    JSON.stringify({
      created: FIXED_CREATED,
      architecture: "amd64",
      os: "linux",
      config: { User: "65532:65532", Labels: { [MANIFEST_LABEL]: label } },
      rootfs: { type: "layers", diff_ids: [sha256(tar)] },
    }),
  );
  const manifest = imageManifest(config, [{ mediaType: LAYER_MEDIA_TYPE, digest: sha256(layer), size: layer.length }], input);
  const digest = sha256(manifest);
  return { label, manifest, blobs: [config, layer], digest, reference: `${input.repository}@${digest}` };
}

/**
 * A WebAssembly plugin's artifact: an image config carrying the label (so the image check reads
 * and verifies it like any plugin's) and one layer, the module, whose digest is `sha256:` and the
 * module's SHA-256. Pure and deterministic.
 */
export function buildWasmImage(input: ImageInput, module: Buffer): BuiltImage {
  const label = JSON.stringify(input.manifest);
  const config = utf8(
    JSON.stringify({
      created: FIXED_CREATED,
      // The platform runwasi and Docker's WebAssembly images use for WASI preview 1 modules.
      architecture: "wasm",
      os: "wasip1",
      config: { Labels: { [MANIFEST_LABEL]: label } },
      rootfs: { type: "layers", diff_ids: [sha256(module)] },
    }),
  );
  const layer = { mediaType: WASM_LAYER_MEDIA_TYPE, digest: sha256(module), size: module.length, annotations: { "org.opencontainers.image.title": `${input.title}.wasm` } };
  const manifest = imageManifest(config, [layer], input);
  const digest = sha256(manifest);
  return { label, manifest, blobs: [config, module], digest, reference: `${input.repository}@${digest}` };
}

/**
 * A view's UI bundle as an OCI artifact attached to its image (as `oras attach` makes one): the
 * empty config, one layer that is the bundle's tar, and the image as its subject. The plugin proxy
 * reads only the layer's blob, by the digest the signed manifest names.
 */
export function buildUiArtifact(image: { readonly digest: string; readonly manifest: Buffer }, bundle: Buffer, title: string): { manifest: Buffer; blobs: Buffer[] } {
  const empty = utf8("{}");
  const manifest = utf8(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_TYPE.ociManifest,
      artifactType: UI_ARTIFACT_TYPE,
      config: { mediaType: MEDIA_TYPE.ociEmpty, digest: sha256(empty), size: empty.length },
      layers: [{ mediaType: UI_LAYER_MEDIA_TYPE, digest: sha256(bundle), size: bundle.length, annotations: { "org.opencontainers.image.title": title } }],
      subject: { mediaType: MEDIA_TYPE.ociManifest, digest: image.digest, size: image.manifest.length },
    }),
  );
  return { manifest, blobs: [empty, bundle] };
}

// --- signing -----------------------------------------------------------------------------------

function keySigner(privateKey: KeyObject): Signer {
  const publicKey = createPublicKey(privateKey).export({ type: "spki", format: "pem" }).toString();
  return {
    sign: async (data: Buffer) => ({
      signature: cryptoSign("sha256", data, privateKey),
      key: { $case: "publicKey", publicKey, hint: "" },
    }),
  };
}

/** What cosign signs for an image: a DSSE envelope over an in-toto statement naming its digest, as a Sigstore bundle. */
export async function signImage(privateKey: KeyObject, repository: string, digest: string): Promise<Buffer> {
  const statement = {
    _type: IN_TOTO_STATEMENT,
    subject: [{ name: repository, digest: { sha256: digest.slice("sha256:".length) } }],
    predicateType: COSIGN_SIGN_PREDICATE,
    predicate: {},
  };
  // No witnesses: a key-signed bundle, verified offline against the signer's public key alone.
  const builder = new DSSEBundleBuilder({ signer: keySigner(privateKey), witnesses: [] });
  const bundle = await builder.create({ data: utf8(JSON.stringify(statement)), type: IN_TOTO_PAYLOAD_TYPE });
  const json = bundleToJSON(bundle);
  if (json.mediaType !== MEDIA_TYPE.sigstoreBundle) throw new Error(`unexpected bundle media type ${json.mediaType}`);
  return utf8(JSON.stringify(json));
}

// --- an OCI image layout, read back -------------------------------------------------------------

interface LayoutEntry extends Descriptor {
  readonly artifactType?: string;
}

async function layoutIndex(layout: string): Promise<LayoutEntry[]> {
  return (JSON.parse(await readFile(join(layout, "index.json"), "utf8")) as { manifests: LayoutEntry[] }).manifests;
}

async function layoutBlob(layout: string, digest: string): Promise<Buffer> {
  return readFile(join(layout, "blobs", "sha256", digest.slice("sha256:".length)));
}

interface StoredManifest {
  readonly config: Descriptor;
  readonly layers: readonly Descriptor[];
  readonly subject?: Descriptor;
  readonly artifactType?: string;
}

/** The image's manifest bytes and what they say. */
async function readLayoutImage(layout: string, digest: string): Promise<{ bytes: Buffer; parsed: StoredManifest }> {
  const bytes = await layoutBlob(layout, digest);
  return { bytes, parsed: JSON.parse(bytes.toString("utf8")) as StoredManifest };
}

/** The manifest an image's label carries, read from the layout. */
async function labelOf(layout: string, digest: string): Promise<Record<string, unknown>> {
  const { parsed } = await readLayoutImage(layout, digest);
  const config = JSON.parse((await layoutBlob(layout, parsed.config.digest)).toString("utf8")) as { config?: { Labels?: Record<string, string> } };
  const label = config.config?.Labels?.[MANIFEST_LABEL];
  if (label === undefined) throw new Error(`${digest} carries no ${MANIFEST_LABEL} label`);
  return JSON.parse(label) as Record<string, unknown>;
}

// --- the command --------------------------------------------------------------------------------

function digestOfRef(ref: string): { repository: string; digest: string } {
  const parsed = parseImageRef(ref);
  if (!parsed.ok) throw new Error(`${ref}: ${formatErrors(parsed.errors)}`);
  return { repository: ref.slice(0, ref.lastIndexOf("@")), digest: parsed.value.digest };
}

function pluginResource(name: string, image: string, manifest: unknown, config: unknown): Record<string, unknown> {
  return {
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: "Plugin",
    metadata: { name, namespace: NAMESPACE },
    // The manifest must equal the signed label: it is the same value the label was written from.
    spec: { image, manifest, ...(config === undefined ? {} : { config }) },
  };
}

interface BuildOptions {
  manifest: string;
  repository: string;
  name: string;
  version: string;
  wasm?: string;
  files?: string;
  ui?: string;
  layout: string;
  tag?: string;
  config?: string;
  pluginOut?: string;
}

async function build(o: BuildOptions): Promise<void> {
  if ((o.wasm === undefined) === (o.files === undefined)) throw new Error("give exactly one of --wasm FILE and --files DIR");
  const manifest = JSON.parse(readFileSync(o.manifest, "utf8")) as Record<string, unknown>;
  if (o.ui !== undefined) {
    // The label names the bundle by digest, so the signature over the image covers the UI too.
    const ui = (manifest["ui"] ?? {}) as Record<string, unknown>;
    manifest["ui"] = { bundle: sha256(readFileSync(o.ui)), entry: ui["entry"] ?? "index.html" };
  }
  const checked = parseManifestLabel(JSON.stringify(manifest));
  if (!checked.ok) throw new Error(`the manifest is not valid: ${formatErrors(checked.errors)}`);
  const input: ImageInput = { repository: o.repository, title: o.name, version: o.version, manifest };
  const image = o.wasm !== undefined ? buildWasmImage(input, readFileSync(o.wasm)) : buildContainerImage(input, filesOf(o.files as string));
  await writeImageToLayout(o.layout, { manifest: image.manifest, blobs: image.blobs, tag: o.tag ?? `${o.name}-${o.version}` });
  if (o.pluginOut !== undefined) {
    const config = o.config === undefined ? undefined : (JSON.parse(readFileSync(o.config, "utf8")) as unknown);
    await mkdir(dirname(resolve(o.pluginOut)), { recursive: true });
    await writeFile(o.pluginOut, toYaml(pluginResource(o.name, image.reference, manifest, config), { lineWidth: 0 }));
  }
  console.log(image.reference);
}

async function sign(o: { layout: string; image: string; key: string }): Promise<void> {
  const { repository, digest } = digestOfRef(o.image);
  const { bytes } = await readLayoutImage(o.layout, digest);
  const bundle = await signImage(createPrivateKey(readFileSync(o.key)), repository, digest);
  const referrer = await writeBundleToLayout(o.layout, { mediaType: MEDIA_TYPE.ociManifest, digest, size: bytes.length }, bundle);
  console.log(`signed ${o.image} (bundle ${referrer.digest})`);
}

async function attach(o: { layout: string; image: string; ui: string }): Promise<void> {
  const { digest } = digestOfRef(o.image);
  const bundle = readFileSync(o.ui);
  const named = (await labelOf(o.layout, digest))["ui"] as { bundle?: string } | undefined;
  if (named?.bundle !== sha256(bundle)) throw new Error(`${o.ui} is ${sha256(bundle)}, but the image's signed manifest names ${named?.bundle ?? "no UI bundle"}`);
  const { bytes } = await readLayoutImage(o.layout, digest);
  const artifact = buildUiArtifact({ digest, manifest: bytes }, bundle, "ui.tar");
  const written = await writeImageToLayout(o.layout, artifact);
  console.log(`attached ${o.ui} to ${o.image} (artifact ${written.digest})`);
}

async function push(o: { layout: string; image: string; insecure?: boolean }): Promise<void> {
  const ref = parseImageRef(o.image);
  if (!ref.ok) throw new Error(`${o.image}: ${formatErrors(ref.errors)}`);
  const { registry, repository } = registryLocation(ref.value);
  const client = new RegistryClient({ registry, ...(o.insecure === true ? { scheme: "http" as const } : {}) });
  const digest = ref.value.digest;
  const image = await readLayoutImage(o.layout, digest);
  const blobs = await Promise.all([image.parsed.config, ...image.parsed.layers].map((d) => layoutBlob(o.layout, d.digest)));
  await client.pushImage(repository, { manifest: image.bytes, blobs });
  const subject: Descriptor = { mediaType: MEDIA_TYPE.ociManifest, digest, size: image.bytes.length };
  let attached = 0;
  for (const entry of await layoutIndex(o.layout)) {
    const referrer = await readLayoutImage(o.layout, entry.digest);
    if (referrer.parsed.subject?.digest !== digest) continue;
    const layers = await Promise.all(referrer.parsed.layers.map((d) => layoutBlob(o.layout, d.digest)));
    if (referrer.parsed.artifactType === MEDIA_TYPE.sigstoreBundle && layers[0] !== undefined) await client.pushBundle(repository, subject, layers[0]);
    else await client.pushImage(repository, { manifest: referrer.bytes, blobs: [await layoutBlob(o.layout, referrer.parsed.config.digest), ...layers] });
    attached++;
  }
  console.log(`pushed ${o.image} and ${attached} attached artifact(s) to ${registry}`);
}

export function program(): Command {
  const p = new Command("plugin-image").description("pack, sign and publish an OpenFief plugin image").showHelpAfterError(false);
  p.command("build")
    .description("build a plugin image into an OCI image layout, its manifest in the io.openfief.plugin.manifest label; prints its reference")
    .requiredOption("--manifest <file>", "the manifest (JSON)")
    .requiredOption("--repository <repo>", "the repository the image is named under, such as 127.0.0.1:5000/acme/hello-fx")
    .requiredOption("--name <name>", "the plugin's name (the Plugin resource's, and the image's title)")
    .requiredOption("--version <version>", "the version, for people")
    .option("--wasm <file>", "a WebAssembly plugin: its module, the artifact's one layer")
    .option("--files <dir>", "a container plugin: the folder whose files make its one layer")
    .option("--ui <tar>", "a view's UI bundle (a tar): its digest goes into the manifest's ui.bundle")
    .requiredOption("--layout <dir>", "the OCI image layout to write into (created when missing)")
    .option("--tag <tag>", "the tag in the layout's index (default: NAME-VERSION)")
    .option("--config <file>", "the plugin's config (JSON), for --plugin-out")
    .option("--plugin-out <file>", "write the Plugin resource (YAML) that installs this image")
    .action((o: BuildOptions) => build(o));
  p.command("sign")
    .description("sign an image of a layout with a key (a Sigstore bundle, as cosign sign --key), attached as an OCI referrer")
    .requiredOption("--layout <dir>", "the OCI image layout")
    .requiredOption("--image <ref>", "the image, repository@sha256:…")
    .requiredOption("--key <file>", "the private key (PEM: EC P-256)")
    .action((o: { layout: string; image: string; key: string }) => sign(o));
  p.command("attach")
    .description("attach a view's UI bundle to its image, as an OCI artifact (as oras attach)")
    .requiredOption("--layout <dir>", "the OCI image layout")
    .requiredOption("--image <ref>", "the image, repository@sha256:…")
    .requiredOption("--ui <tar>", "the UI bundle the image's signed manifest names")
    .action((o: { layout: string; image: string; ui: string }) => attach(o));
  p.command("push")
    .description("push an image of a layout, and everything attached to it, to the registry its reference names")
    .requiredOption("--layout <dir>", "the OCI image layout")
    .requiredOption("--image <ref>", "the image, registry/repository@sha256:…")
    .option("--insecure", "reach the registry over plain HTTP (a registry on this machine)")
    .action((o: { layout: string; image: string; insecure?: boolean }) => push(o));
  return p;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  try {
    await program().parseAsync(process.argv);
  } catch (err) {
    console.error(`plugin-image: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  }
}
