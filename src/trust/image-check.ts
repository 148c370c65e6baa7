/**
 * The image check as a whole (seed 000, "Signatures, trusted signers and the catalog"): resolve
 * the image by digest, verify every Sigstore bundle attached to it offline, hand the verified
 * identities to the pure trust policy, and only when a trusted signer signed it read the manifest
 * label from its config and require it to equal the Plugin's manifest. A label on an image no
 * trusted signer signed is never read.
 */
import type { ImageRef, Manifest, Signer, SignerKind, TrustPolicy, VerifiedIdentity } from "../plugins/index.js";
import { formatErrors, isKeyIdentity, MANIFEST_LABEL, parseManifestLabel, parseStrictJson } from "../plugins/index.js";
import type { TrustedRoot } from "@sigstore/protobuf-specs";
import { verifySignedBundle } from "./bundle-verify.js";
import { readBundles } from "./bundle-referrer.js";
import type { ImageManifest, ImageSource, Limits } from "./oci.js";
import { wasmModuleLayer } from "./wasm-module.js";
import { DEFAULT_LIMITS, ImageSourceError, checkDigest, parseImageManifest } from "./oci.js";

/**
 * Every reason a verdict refuses an image with: the trust policy's codes, the image source's, a
 * check that threw, and a registry never reached for an image never checked. The faces word each.
 */
export const REFUSAL_REASONS = [
  "unsigned", "untrusted_signer", "manifest_mismatch", "invalid_type", "too_large", "invalid_image_ref",
  "image_not_found", "digest_mismatch", "malformed_image", "auth_failed", "registry_error", "verify_error", "unreachable",
] as const;

/** One of {@link REFUSAL_REASONS}. */
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/**
 * Bundles that did not verify for want of a trusted key: signed with a public key, but no trusted
 * signer's (none given, or none that verifies it). The image is signed, by no signer the owner
 * trusts — `untrusted_signer`, not `unsigned` (docs/adr/0109).
 */
const UNTRUSTED_KEY_BUNDLES: ReadonlySet<string> = new Set(["certificate_required", "key_mismatch"]);

/** What one image check concluded. `refused` carries a stable reason code. */
export interface ImageVerdict {
  readonly image: string;
  readonly digest: string;
  readonly outcome: "verified" | "unverified" | "refused";
  readonly reason?: string;
  readonly message?: string;
  /** The trusted signers that signed it (empty when refused). */
  readonly signers: readonly { readonly name: string; readonly kind: SignerKind }[];
  /** The identity of every bundle that verified, trusted or not. */
  readonly identities: readonly VerifiedIdentity[];
  /** The catalog entry that made it verified. */
  readonly catalogEntry?: string;
  /** The manifest from the signed label, when it has one that parsed. */
  readonly manifest?: Manifest;
  /** Why each attached bundle that did not verify was refused, in the order found. */
  readonly rejectedBundles: readonly string[];
  /**
   * For a WebAssembly plugin (an artifact whose one layer is a module): the module's lowercase
   * hex SHA-256 and size, read from the signed manifest. Absent for a container image.
   */
  readonly module?: { readonly digest: string; readonly size: number };
}

/** Everything one check needs; the source is a registry or an OCI layout. */
export interface ImageCheckInput {
  readonly image: ImageRef;
  readonly source: ImageSource;
  readonly trustedRoot: TrustedRoot;
  readonly policy: TrustPolicy;
  /** The Plugin's declared manifest; when given, the signed label must equal it. */
  readonly declared?: Manifest;
  readonly limits?: Partial<Limits>;
  /** The repository path at the source, when it differs from the reference's (Docker Hub's `library/`). */
  readonly repository?: string;
}

/** Maps a source failure (other than unreachable) to a refusal reason code. */
export function sourceReason(code: ImageSourceError["code"]): string {
  switch (code) {
    case "not_found":
      return "image_not_found";
    case "digest_mismatch":
      return "digest_mismatch";
    case "too_large":
      return "too_large";
    case "malformed":
      return "malformed_image";
    case "auth_failed":
      return "auth_failed";
    default:
      return "registry_error";
  }
}

/** The PEM keys of the policy's key signers: the only keys a public-key bundle may verify under. */
export function trustedKeys(signers: readonly Signer[]): string[] {
  return signers.flatMap((s) => (isKeyIdentity(s.identity) ? [s.identity.publicKey] : []));
}

function identityKey(id: VerifiedIdentity): string {
  return id.kind === "key" ? `key\n${id.publicKey}` : `keyless\n${id.issuer}\n${id.subject}`;
}

/**
 * Checks one image. Throws {@link ImageSourceError} with code `unreachable` only (so a caller can
 * keep its last verdict and retry); every other failure is a `refused` verdict.
 */
export async function checkImage(input: ImageCheckInput): Promise<ImageVerdict> {
  const limits: Limits = { ...DEFAULT_LIMITS, ...input.limits };
  const { image, source, policy } = input;
  const digest = image.digest;
  const repository = input.repository ?? image.repository;
  const base = { image: image.toString(), digest };
  const refused = (reason: string, message: string, identities: readonly VerifiedIdentity[] = [], rejectedBundles: readonly string[] = []): ImageVerdict => ({
    ...base,
    outcome: "refused",
    reason,
    message,
    signers: [],
    identities,
    rejectedBundles,
  });
  try {
    const fetched = await source.manifest(repository, digest, limits.manifest);
    // Every source checks this already; a signature over the wrong bytes must never count.
    checkDigest(fetched.bytes, digest, `manifest ${digest}`);
    const manifest = parseImageManifest(fetched.bytes, fetched.mediaType);
    const bundles = await readBundles(source, repository, digest, limits);

    const identities: VerifiedIdentity[] = [];
    const seen = new Set<string>();
    const rejected: string[] = [];
    const keys = trustedKeys(policy.signers);
    for (const bundle of bundles) {
      const verdict = verifySignedBundle({ bundle, digest, artifact: fetched.bytes, trustedRoot: input.trustedRoot, publicKeys: keys });
      if (!verdict.ok) {
        rejected.push(verdict.reason);
        continue;
      }
      const key = identityKey(verdict.identity);
      if (!seen.has(key)) {
        seen.add(key);
        identities.push(verdict.identity);
      }
    }

    // Decide first without the label: an image no trusted signer signed is refused unread.
    const first = policy.decide({ digest, identities });
    if (!first.ok) {
      const e = first.errors[0];
      const keyed = rejected.filter((r) => UNTRUSTED_KEY_BUNDLES.has(r)).length;
      if (e?.code === "unsigned" && keyed > 0) {
        return refused("untrusted_signer", `image: ${keyed === 1 ? "its signature is" : `${keyed} of its signatures are`} made with a public key no trusted signer holds (untrusted_signer)`, identities, rejected);
      }
      return refused(e?.code ?? "untrusted_signer", formatErrors(first.errors), identities, rejected);
    }

    const configBytes = await source.blob(repository, manifest.config.digest, limits.config);
    let labelManifest: Manifest | undefined;
    let labelProblem: string | undefined;
    const label = readLabel(configBytes);
    if (label === undefined) labelProblem = `the image config has no ${MANIFEST_LABEL} label`;
    else {
      const parsed = parseManifestLabel(label);
      if (parsed.ok) labelManifest = parsed.value;
      else labelProblem = formatErrors(parsed.errors);
    }
    const decision = policy.decide(
      labelManifest === undefined ? { digest, identities } : { digest, identities, manifest: labelManifest },
      input.declared,
    );
    if (!decision.ok) {
      const e = decision.errors[0];
      const message = formatErrors(decision.errors) + (labelProblem === undefined ? "" : `; ${labelProblem}`);
      return refused(e?.code ?? "manifest_mismatch", message, identities, rejected);
    }
    const d = decision.value;
    const runtime = moduleOf(manifest);
    if (typeof runtime === "string") return refused("malformed_image", runtime, identities, rejected);
    return {
      ...base,
      ...(runtime === null ? {} : { module: runtime }),
      outcome: d.status,
      signers: d.signers.map((s) => ({ name: s.name, kind: s.kind })),
      identities,
      ...(d.catalogEntry === undefined ? {} : { catalogEntry: d.catalogEntry }),
      ...(labelManifest === undefined ? {} : { manifest: labelManifest }),
      ...(labelProblem === undefined ? {} : { message: labelProblem }),
      rejectedBundles: rejected,
    };
  } catch (err) {
    if (err instanceof ImageSourceError) {
      if (err.code === "unreachable") throw err;
      return refused(sourceReason(err.code), err.message);
    }
    return refused("verify_error", err instanceof Error ? err.message : String(err));
  }
}

/** The module a WebAssembly plugin's manifest names, null for a container image, or why not a WebAssembly plugin. */
function moduleOf(manifest: ImageManifest): { digest: string; size: number } | null | string {
  const m = wasmModuleLayer(manifest);
  return m === null || typeof m === "string" ? m : { digest: m.digest, size: m.layer.size };
}

/** The manifest label's value from a config blob, or undefined when it has none. */
export function readLabel(config: Uint8Array): string | undefined {
  // Strict: a config repeating the label key must not let the last copy win silently.
  const result = parseStrictJson(Buffer.from(config).toString("utf8"), "config");
  if (!result.ok) return undefined;
  const parsed: unknown = result.value;
  const labels = (parsed as { config?: { Labels?: unknown } } | null)?.config?.Labels;
  if (typeof labels !== "object" || labels === null) return undefined;
  const value = (labels as Record<string, unknown>)[MANIFEST_LABEL];
  return typeof value === "string" ? value : undefined;
}
