/**
 * `openfief verify IMAGE@sha256:…`: the whole image check (seed 000, "Signatures, trusted signers
 * and the catalog") from a registry or an OCI layout directory, against the shipped trust root,
 * the shipped catalog, OpenFief's CI and the owner's signers. Exit 0 when the policy admits the
 * image (verified or unverified), 1 when it refuses it, 2 for bad usage. The verdict is worded as
 * what it means — who signed it, and whether the catalog pins it — with one line of help.
 */
import { createPublicKey } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { Command } from "commander";
import { CliError } from "../cli-error.js";
import { readAllResources } from "./apply.js";
import { catalogText, refusalText, verdictHelp, verdictText, verdictWord } from "../../app/index.js";
import { SHIPPED_CATALOG } from "../../compose/index.js";
import type { CatalogView } from "../../app/index.js";
import { usageExit } from "./verify-bundle.js";
import { formatErrors, newTrustPolicy, parseCatalog, parseImageRef } from "../../plugins/index.js";
import type { Catalog, ImageRef, Manifest, Signer } from "../../plugins/index.js";
import { checkImage, ImageSourceError, loadOwnerSignersFile, loadShippedTrustedRoot, loadTrustedRootFile, OciLayoutSource, OwnerSignersError, RegistryClient, registryLocation, TrustRootError } from "../../trust/index.js";
import type { ImageSource, ImageVerdict, LoadedTrustedRoot } from "../../trust/index.js";


interface Options {
  plugin?: string;
  ociLayout?: string;
  trustedSigners?: string;
  key?: string[];
  catalog?: string;
  trustedRoot?: string;
  json?: boolean;
}

function read(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new CliError(`cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`, 2);
  }
}

/** Reads the one Plugin of a file (YAML or JSON, as written for the cluster). */
async function readPlugin(path: string): Promise<{ name: string; image: string; manifest: Manifest }> {
  const plugins = (await readAllResources([path])).flatMap((r) => (r.kind === "Plugin" ? [r.plugin] : []));
  if (plugins.length !== 1 || plugins[0] === undefined) throw new CliError(`${path} must hold exactly one Plugin, not ${plugins.length}`, 2);
  return { name: plugins[0].name, image: plugins[0].spec.image, manifest: plugins[0].spec.manifest };
}

/** A catalog entry that lists the plugin (by name or repository) but does not match the image: said, never verified. */
function catalogMismatch(catalog: Catalog, image: ImageRef, plugin: { readonly name: string } | undefined, verdict: ImageVerdict): CatalogView | null {
  if (verdict.outcome === "verified") return null;
  const name = plugin?.name ?? image.repository.split("/").at(-1) ?? image.repository;
  const s = catalog.standing({ name, repository: image.name, digest: image.digest }, verdict.identities);
  if (s.kind === "other_digest") return { standing: "other_digest", entry: s.entry.name, publisher: s.entry.publisher.name, listed: s.entry.image.digest, digest: image.digest };
  if (s.kind === "other_publisher") return { standing: "other_publisher", entry: s.entry.name, publisher: s.entry.publisher.name, digest: image.digest };
  return null;
}

function ownerSigners(opts: Options): Signer[] {
  const signers: Signer[] = [];
  if (opts.trustedSigners !== undefined) {
    try {
      signers.push(...loadOwnerSignersFile(opts.trustedSigners));
    } catch (err) {
      throw new CliError(err instanceof OwnerSignersError ? err.message : String(err), 2);
    }
  }
  (opts.key ?? []).forEach((path, i) => {
    const publicKey = read(path, "key").toString("utf8");
    try {
      createPublicKey(publicKey);
    } catch {
      throw new CliError(`--key ${path} is not a PEM public key`, 2);
    }
    signers.push({ name: `key-${i + 1}:${basename(path)}`, kind: "owner", identity: { publicKey } });
  });
  return signers;
}

/** The verdict's line and its line of help. */
export function verdictLines(verdict: ImageVerdict, ownerSigners: number, catalog: CatalogView | null = null): [string, string] {
  const view = { outcome: verdict.outcome, reason: verdict.reason ?? null, signers: verdict.signers, catalog };
  const entry = verdict.catalogEntry === undefined ? "" : ` as entry ${verdict.catalogEntry}`;
  const mismatch = catalog === null ? "" : `; ${catalogText(catalog)}`;
  const first = `${verdictWord(verdict.outcome)}: ${verdict.image}: ${verdict.outcome === "refused" ? `${refusalText(view.reason)}${mismatch}` : `${verdictText(view)}${entry}`}`;
  if (verdict.outcome !== "refused") return [first, `  ${verdictHelp(verdict.outcome)}`];
  // Refused for want of a signer the owner trusts, and the owner named none: say how to name one.
  if (verdict.reason === "untrusted_signer" && ownerSigners === 0) return [first, "  No signer of yours was given: --trusted-signers FILE (or --key PEM) names the signers you trust."];
  return [first, `  ${verdict.message ?? verdictHelp("refused")}`];
}

function printVerdict(verdict: ImageVerdict, json: boolean, ownerSigners: number, catalog: CatalogView | null): void {
  if (json) process.stdout.write(`${JSON.stringify(catalog === null ? verdict : { ...verdict, catalog })}\n`);
  else process.stdout.write(`${verdictLines(verdict, ownerSigners, catalog).join("\n")}\n`);
  process.exitCode = verdict.outcome === "refused" ? 1 : 0;
}

async function run(imageArg: string | undefined, opts: Options): Promise<void> {
  const plugin = opts.plugin === undefined ? undefined : await readPlugin(opts.plugin);
  const ref = imageArg ?? plugin?.image;
  if (ref === undefined) throw new CliError("give IMAGE@sha256:<hex> or --plugin FILE", 2);
  const parsed = parseImageRef(ref);
  if (!parsed.ok) throw new CliError(formatErrors(parsed.errors), 2);
  const image = parsed.value;
  if (plugin !== undefined && !plugin.image.endsWith(`@${image.digest}`)) {
    throw new CliError(`the plugin runs ${plugin.image}, not ${image.digest}`, 2);
  }

  const catalogText = read(opts.catalog ?? SHIPPED_CATALOG, "catalog").toString("utf8");
  const catalog = parseCatalog(catalogText);
  if (!catalog.ok) throw new CliError(`invalid catalog: ${formatErrors(catalog.errors)}`, 2);
  let root: LoadedTrustedRoot;
  try {
    root = opts.trustedRoot === undefined ? loadShippedTrustedRoot() : loadTrustedRootFile(opts.trustedRoot);
  } catch (err) {
    throw new CliError(err instanceof TrustRootError ? err.message : String(err), 2);
  }
  const owners = ownerSigners(opts);
  const policy = newTrustPolicy(catalog.value, owners);

  let source: ImageSource;
  let repository = image.repository;
  if (opts.ociLayout !== undefined) {
    if (!existsSync(join(opts.ociLayout, "oci-layout"))) throw new CliError(`--oci-layout ${opts.ociLayout} is not an OCI image layout (no oci-layout file)`, 2);
    source = new OciLayoutSource(opts.ociLayout);
  }
  else {
    const location = registryLocation(image);
    source = new RegistryClient({ registry: location.registry });
    repository = location.repository;
  }
  let verdict: ImageVerdict;
  try {
    verdict = await checkImage({
      image,
      source,
      repository,
      trustedRoot: root.root,
      policy,
      ...(plugin === undefined ? {} : { declared: plugin.manifest }),
    });
  } catch (err) {
    verdict = {
      image: image.toString(),
      digest: image.digest,
      outcome: "refused",
      reason: err instanceof ImageSourceError ? "unreachable" : "verify_error",
      message: err instanceof Error ? err.message : String(err),
      signers: [],
      identities: [],
      rejectedBundles: [],
    };
  }
  printVerdict(verdict, opts.json === true, owners.length, catalogMismatch(catalog.value, image, plugin, verdict));
}

/** Registers `verify`. */
export function register(program: Command): void {
  program
    .command("verify")
    .description("verify an image's signatures offline and decide with the trust policy (exit 0 admitted, 1 refused, 2 usage)")
    .argument("[image]", "the image, pinned by digest: [registry/]repository@sha256:<hex>")
    .option("--plugin <file>", "a Plugin (JSON or YAML): its image's signed label must equal its manifest")
    .option("--oci-layout <dir>", "read the image from an OCI image-layout directory instead of its registry")
    .option("--trusted-signers <file>", "the owner's trusted signers (the openfief-trusted-signers content)")
    .option("--key <pemfile>", "trust one more owner key (repeatable)", (v: string, prev: string[] = []) => [...prev, v])
    .option("--catalog <file>", "the catalog (default: the one released with the product)")
    .option("--trusted-root <file>", "a Sigstore trusted root (default: the pinned public-good root shipped with the product)")
    .option("--json", "print the verdict as JSON")
    .exitOverride(usageExit)
    .action(async (image: string | undefined, opts: Options) => run(image, opts));
}
