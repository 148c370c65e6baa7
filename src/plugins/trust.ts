/**
 * Whether a signed image may run (seed 000, "The policy"; D-44, D-45, D-57). A pure function over
 * what the signature adapter found: the identities whose signatures over the digest verified and
 * the manifest from the signed label. There is deliberately no option, flag or override that
 * admits an unsigned image or one signed only by an untrusted identity.
 */
import { ErrorCode, fail, fieldError, ok } from "./errors.js";
import type { Result } from "./errors.js";
import type { Catalog, CatalogEntry } from "./catalog.js";
import { manifestEqual } from "./manifest-equal.js";
import { identityMatches, openFiefCI } from "./signers.js";
import type { Signer, VerifiedIdentity } from "./signers.js";
import type { Manifest } from "./types.js";

/** What the adapter found for one image: its digest, the verified signers, the signed label. */
export interface SignedImage {
  /** `sha256:<64 lower-case hex>`: the image manifest digest the signatures cover. */
  readonly digest: string;
  /** The identity of every signature over `digest` that verified. */
  readonly identities: readonly VerifiedIdentity[];
  /** The manifest from the image's signed label, when it has one that parsed. */
  readonly manifest?: Manifest;
}

/**
 * The policy's answer for an image it admits. `verified`: a catalog entry pins this digest and
 * its publisher signed it; `unverified`: only some other trusted signer did.
 */
export interface TrustDecision {
  readonly status: "verified" | "unverified";
  /** The trusted signers whose identity matched a verified signature, sorted by name. */
  readonly signers: Signer[];
  /** The name of the catalog entry that made the image verified. */
  readonly catalogEntry?: string;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

// Set in the class's static block: the module's only way to call the private constructor.
let construct: (catalog: Catalog, owner: readonly Signer[]) => TrustPolicy;

/** The trusted signers of D-45 and the catalog. Built only by {@link newTrustPolicy}. */
export class TrustPolicy {
  readonly #catalog: Catalog;
  readonly #signers: readonly Signer[];

  private constructor(catalog: Catalog, owner: readonly Signer[]) {
    this.#catalog = catalog;
    const all = [openFiefCI(), ...catalog.entries.map((e) => e.publisher), ...owner];
    this.#signers = Object.freeze(uniqueSigners(all));
  }

  static {
    construct = (catalog, owner) => new TrustPolicy(catalog, owner);
  }

  /** Every trusted signer, sorted by name: OpenFief's CI, catalog publishers, owner signers. */
  get signers(): readonly Signer[] {
    return this.#signers;
  }

  /**
   * Decides whether `image` may run. {@link ErrorCode.Unsigned} without verified signatures;
   * {@link ErrorCode.UntrustedSigner} when none is by a trusted signer; otherwise verified or
   * unverified. With a `declared` manifest (the Plugin's copy), {@link ErrorCode.ManifestMismatch}
   * unless the signed label's manifest exists and equals it.
   */
  decide(image: SignedImage, declared?: Manifest): Result<TrustDecision> {
    if (image.identities.length === 0) {
      return fail(fieldError(ErrorCode.Unsigned, "image", "the image has no verified signature"));
    }
    if (typeof image.digest !== "string" || !DIGEST.test(image.digest)) {
      return fail(fieldError(ErrorCode.InvalidImageRef, "image.digest", "the digest must be sha256:<64 lower-case hex>"));
    }
    const matched = this.#signers.filter((s) => image.identities.some((id) => identityMatches(s.identity, id)));
    if (matched.length === 0) {
      return fail(fieldError(ErrorCode.UntrustedSigner, "image", "no signature is by a trusted signer"));
    }
    const entry = this.#catalog
      .entriesForDigest(image.digest)
      .find((e: CatalogEntry) => image.identities.some((id) => identityMatches(e.publisher.identity, id)));
    if (declared !== undefined && (image.manifest === undefined || !manifestEqual(declared, image.manifest))) {
      return fail(
        fieldError(
          ErrorCode.ManifestMismatch,
          "manifest",
          image.manifest === undefined
            ? "the image has no signed manifest label to compare the declared manifest with"
            : "the declared manifest differs from the image's signed label",
        ),
      );
    }
    const signers = [...matched];
    return ok(
      entry === undefined
        ? { status: "unverified", signers }
        : { status: "verified", signers, catalogEntry: entry.name },
    );
  }
}

/** A policy trusting OpenFief's CI, every catalog publisher and every owner signer (D-45). */
export function newTrustPolicy(catalog: Catalog, owner: readonly Signer[]): TrustPolicy {
  return construct(catalog, owner);
}

/** Drops exact repeats (one publisher listed for several entries) and sorts by name, then kind. */
function uniqueSigners(signers: readonly Signer[]): Signer[] {
  const byKey = new Map<string, Signer>();
  for (const s of signers) {
    const key = JSON.stringify([s.name, s.kind, identityKey(s)]);
    if (!byKey.has(key)) byKey.set(key, s);
  }
  return [...byKey.entries()]
    .sort(([ka, a], [kb, b]) => compare(a.name, b.name) || compare(a.kind, b.kind) || compare(ka, kb))
    .map(([, s]) => s);
}

function identityKey(s: Signer): string[] {
  const id = s.identity as unknown as Record<string, unknown>;
  return ["issuer", "subject", "subjectPattern", "publicKey"].map((k) => String(id[k] ?? ""));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
