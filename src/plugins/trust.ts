/**
 * Whether a signed image may run (seed 000, "The policy"; D-44, D-45, D-57). A pure function over
 * what the signature adapter found: the identities whose signatures over the digest verified and
 * the manifest from the signed label. There is deliberately no option, flag or override that
 * admits an unsigned image or one signed only by an untrusted identity.
 */
import { CAPS } from "./caps.js";
import { ErrorCode, fail, fieldError, ok } from "./errors.js";
import type { Result } from "./errors.js";
import { Catalog, emptyCatalog } from "./catalog.js";
import { manifestEqual } from "./manifest-equal.js";
import { isManifestShaped } from "./shapes.js";
import { PatternEngineNotLoaded } from "./re2-engine.js";
import { identityProblems, openFiefCI, signerMatcher } from "./signers.js";
import type { Signer, SignerKind, VerifiedIdentity } from "./signers.js";
import type { Manifest } from "./types.js";
import { SIGNATURE_RULES } from "./verdict-rules.js";

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
  // Each signer's identity checked and its pattern compiled once, not once per signature.
  readonly #matchers: readonly ((verified: VerifiedIdentity) => boolean)[];

  private constructor(catalog: Catalog, owner: readonly Signer[]) {
    // What is not a catalog or a signer trusts nobody (fail closed).
    this.#catalog = catalog instanceof Catalog ? catalog : emptyCatalog();
    const owners = Array.isArray(owner) ? owner.filter(isSigner) : [];
    const all = [openFiefCI(), ...this.#catalog.entries.map((e) => e.publisher), ...owners];
    this.#signers = Object.freeze(uniqueSigners(all));
    this.#matchers = Object.freeze(this.#signers.map((s) => signerMatcher(s.identity)));
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
   * unless the signed label's manifest exists and equals it. What the adapter passes is checked
   * first: anything but an object with a list of at most {@link CAPS.verifiedIdentities} identities
   * is refused ({@link ErrorCode.InvalidType}, {@link ErrorCode.TooLarge}), a malformed identity
   * matches no signer, a manifest not shaped as one matches nothing. Never throws.
   */
  decide(image: SignedImage, declared?: Manifest): Result<TrustDecision> {
    try {
      return this.#decide(image, declared);
    } catch (e) {
      if (e instanceof PatternEngineNotLoaded) throw e;
      return fail(fieldError(ErrorCode.InvalidType, "image", "what was found for the image could not be read"));
    }
  }

  #decide(image: SignedImage, declared: Manifest | undefined): Result<TrustDecision> {
    const read = readSignedImage(image);
    if (!read.ok) return read;
    const ids = read.value;
    const matched = this.#signers.filter((_s, i) => ids.some((id) => this.#matchers[i]?.(id) === true));
    if (matched.length === 0) {
      return fail(fieldError(ErrorCode.UntrustedSigner, "image", "no signature is by a trusted signer"));
    }
    // Today's signature rules decide the catalog's part (docs/adr/0191); the verdict names their version.
    const entry = SIGNATURE_RULES.today.decide(this.#catalog, image.digest, ids).entry;
    if (declared !== undefined && !isManifestShaped(declared)) {
      return fail(fieldError(ErrorCode.InvalidType, "manifest", "the declared manifest is not shaped as a manifest"));
    }
    const signed = isManifestShaped(image.manifest) ? image.manifest : undefined;
    if (declared !== undefined && (signed === undefined || !manifestEqual(declared, signed))) {
      return fail(
        fieldError(
          ErrorCode.ManifestMismatch,
          "manifest",
          signed === undefined
            ? "the image has no signed manifest label to compare the declared manifest with"
            : "the declared manifest differs from the image's signed label",
        ),
      );
    }
    const signers = [...matched];
    return ok(
      entry === null
        ? { status: "unverified", signers }
        : { status: "verified", signers, catalogEntry: entry.name },
    );
  }
}

/** The verified identities of what the adapter found, once it is shaped as a signed image with a digest. */
function readSignedImage(image: SignedImage): Result<readonly VerifiedIdentity[]> {
  if (typeof image !== "object" || image === null) {
    return fail(fieldError(ErrorCode.InvalidType, "image", "a signed image must be an object"));
  }
  const identities: unknown = image.identities;
  if (!Array.isArray(identities)) {
    return fail(fieldError(ErrorCode.InvalidType, "image.identities", "the verified identities must be a list"));
  }
  if (identities.length === 0) {
    return fail(fieldError(ErrorCode.Unsigned, "image", "the image has no verified signature"));
  }
  if (identities.length > CAPS.verifiedIdentities) {
    return fail(
      fieldError(ErrorCode.TooLarge, "image.identities", `the image has ${identities.length} verified signatures; at most ${CAPS.verifiedIdentities} are looked at`),
    );
  }
  if (typeof image.digest !== "string" || !DIGEST.test(image.digest)) {
    return fail(fieldError(ErrorCode.InvalidImageRef, "image.digest", "the digest must be sha256:<64 lower-case hex>"));
  }
  // Each identity only ever reaches a matcher, which fails closed on a malformed one.
  return ok(identities as readonly VerifiedIdentity[]);
}

/**
 * A policy trusting OpenFief's CI, every catalog publisher and every owner signer (D-45). What is
 * not a Catalog, and every owner signer that is not a valid one, is left out (fail closed). Never throws.
 */
export function newTrustPolicy(catalog: Catalog, owner: readonly Signer[]): TrustPolicy {
  try {
    return construct(catalog, owner);
  } catch (e) {
    if (e instanceof PatternEngineNotLoaded) throw e;
    // A signer whose reading throws halfway: trust only what is always trusted.
    return construct(emptyCatalog(), []);
  }
}

const SIGNER_KINDS: readonly SignerKind[] = ["openfief-ci", "publisher", "owner"];

/** A signer as parseOwnerSigners makes one: a string name, a known kind, a valid identity. */
function isSigner(s: unknown): s is Signer {
  try {
    if (typeof s !== "object" || s === null) return false;
    const { name, kind, identity } = s as Record<string, unknown>;
    return (
      typeof name === "string" &&
      typeof kind === "string" &&
      (SIGNER_KINDS as readonly string[]).includes(kind) &&
      typeof identity === "object" &&
      identity !== null &&
      identityProblems(identity as Signer["identity"], "").length === 0
    );
  } catch (e) {
    if (e instanceof PatternEngineNotLoaded) throw e;
    return false;
  }
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
