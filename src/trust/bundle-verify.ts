/**
 * Offline verification of one Sigstore bundle over one digest, and the checks the library leaves
 * to us. `@sigstore/verify` checks the signature, the certificate chain, the transparency-log
 * entries and the timestamps against a trust root; it does not check the in-toto subject of a
 * DSSE bundle, its subject policy is an unanchored JavaScript regular expression, and some
 * malformed bundles make it throw a raw `TypeError`. So: every thrown error is a refusal with a
 * reason code, the SAN is compared here (exactly or by a whole RE2 match), and the payload is
 * tied to the digest here.
 */
import { createPublicKey } from "node:crypto";
import type { KeyObject } from "node:crypto";
import { bundleFromJSON, ValidationError } from "@sigstore/bundle";
import type { Bundle } from "@sigstore/bundle";
import { HashAlgorithm } from "@sigstore/protobuf-specs";
import type { TrustedRoot } from "@sigstore/protobuf-specs";
import { toSignedEntity, toTrustMaterial, PolicyError, VerificationError, Verifier } from "@sigstore/verify";
import { compilePattern } from "../plugins/index.js";
import type { VerifiedIdentity } from "../plugins/index.js";
import { digestOf, isDigest } from "./oci.js";

export type { VerifiedIdentity } from "../plugins/index.js";

/** Stable reason codes for a refused bundle. Never rename: they are printed, stored and tested. */
export const Reason = {
  BundleInvalid: "bundle_invalid",
  DigestInvalid: "digest_invalid",
  SignatureInvalid: "signature_invalid",
  TlogInvalid: "tlog_invalid",
  CertificateInvalid: "certificate_invalid",
  TimestampInvalid: "timestamp_invalid",
  TrustRootInvalid: "trust_root_invalid",
  IssuerMismatch: "issuer_mismatch",
  SubjectMismatch: "subject_mismatch",
  PayloadTypeMismatch: "payload_type_mismatch",
  SubjectDigestMismatch: "subject_digest_mismatch",
  MessageDigestMismatch: "message_digest_mismatch",
  ArtifactDigestMismatch: "artifact_digest_mismatch",
  ArtifactRequired: "artifact_required",
  KeyRequired: "key_required",
  CertificateRequired: "certificate_required",
  KeyInvalid: "key_invalid",
  KeyMismatch: "key_mismatch",
  VerifyError: "verify_error",
} as const;

/** One of {@link Reason}'s values. */
export type ReasonCode = (typeof Reason)[keyof typeof Reason];

/** A bundle that verified, and whose identity it carries; or why it was refused. */
export type BundleVerdict =
  | { readonly ok: true; readonly identity: VerifiedIdentity }
  | { readonly ok: false; readonly reason: ReasonCode; readonly message: string };

/** The identity a bundle must carry: keyless with an exact subject or an RE2 pattern, or one PEM key. */
export type ExpectedIdentity =
  | { readonly kind: "keyless"; readonly issuer: string; readonly subject: string }
  | { readonly kind: "keyless"; readonly issuer: string; readonly subjectPattern: string }
  | { readonly kind: "key"; readonly publicKey: string };

/** What one verification needs. `bundle` is the bundle's JSON text, bytes, or parsed value. */
export interface BundleInput {
  readonly bundle: string | Uint8Array | unknown;
  /** `sha256:<hex>` of what was signed: the image manifest, or the artifact. */
  readonly digest: string;
  /** The signed bytes; required for a message-signature bundle, checked against `digest`. */
  readonly artifact?: Uint8Array;
  readonly trustedRoot: TrustedRoot;
}

/** DSSE payloads we accept: an in-toto statement. */
export const IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json";

function refuse(reason: ReasonCode, message: string): BundleVerdict {
  return { ok: false, reason, message };
}

/** Maps anything thrown by the libraries to a reason code; nothing thrown ever passes. */
export function reasonForError(err: unknown, keyMode: boolean): { reason: ReasonCode; message: string } {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof VerificationError) {
    switch (err.code) {
      case "TLOG_ERROR":
      case "TLOG_INCLUSION_PROOF_ERROR":
      case "TLOG_INCLUSION_PROMISE_ERROR":
      case "TLOG_MISSING_INCLUSION_ERROR":
      case "TLOG_BODY_ERROR":
        return { reason: Reason.TlogInvalid, message };
      case "CERTIFICATE_ERROR":
        return { reason: Reason.CertificateInvalid, message };
      case "TIMESTAMP_ERROR":
        return { reason: Reason.TimestampInvalid, message };
      case "PUBLIC_KEY_ERROR":
        return { reason: Reason.KeyMismatch, message };
      case "SIGNATURE_ERROR":
        return { reason: keyMode ? Reason.KeyMismatch : Reason.SignatureInvalid, message };
      default:
        return { reason: Reason.VerifyError, message };
    }
  }
  if (err instanceof PolicyError) return { reason: Reason.SubjectMismatch, message };
  if (err instanceof ValidationError) return { reason: Reason.BundleInvalid, message };
  return { reason: Reason.VerifyError, message: `verification failed: ${message}` };
}

/** Parses bundle JSON (text, bytes or a parsed value) into a validated bundle, or a refusal. */
export function parseBundle(input: string | Uint8Array | unknown): { ok: true; bundle: Bundle } | { ok: false; reason: ReasonCode; message: string } {
  let json: unknown = input;
  if (typeof input === "string" || input instanceof Uint8Array) {
    try {
      json = JSON.parse(typeof input === "string" ? input : Buffer.from(input).toString("utf8"));
    } catch {
      return { ok: false, reason: Reason.BundleInvalid, message: "bundle is not JSON" };
    }
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return { ok: false, reason: Reason.BundleInvalid, message: "bundle is not a JSON object" };
  }
  try {
    return { ok: true, bundle: bundleFromJSON(json) };
  } catch (err) {
    return { ok: false, reason: Reason.BundleInvalid, message: `bundle is invalid: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** Checks that the signed content is about `digest` (hex, no prefix). */
function checkContent(bundle: Bundle, hex: string): BundleVerdict | undefined {
  const content = bundle.content;
  if (content.$case === "dsseEnvelope") {
    const env = content.dsseEnvelope;
    if (env.payloadType !== IN_TOTO_PAYLOAD_TYPE) {
      return refuse(Reason.PayloadTypeMismatch, `DSSE payload type is ${JSON.stringify(env.payloadType)}, not ${IN_TOTO_PAYLOAD_TYPE}`);
    }
    let statement: unknown;
    try {
      statement = JSON.parse(Buffer.from(env.payload).toString("utf8"));
    } catch {
      return refuse(Reason.SubjectDigestMismatch, "DSSE payload is not an in-toto statement");
    }
    const subjects = (statement as { subject?: unknown } | null)?.subject;
    if (!Array.isArray(subjects)) return refuse(Reason.SubjectDigestMismatch, "in-toto statement has no subject list");
    const found = subjects.some((s: unknown) => {
      const d = (s as { digest?: unknown } | null)?.digest;
      return typeof d === "object" && d !== null && (d as { sha256?: unknown }).sha256 === hex;
    });
    if (!found) return refuse(Reason.SubjectDigestMismatch, `no in-toto subject has sha256 ${hex}`);
    return undefined;
  }
  const md = content.messageSignature.messageDigest;
  if (md === undefined) return refuse(Reason.MessageDigestMismatch, "message signature carries no message digest");
  if (md.algorithm !== HashAlgorithm.SHA2_256) return refuse(Reason.MessageDigestMismatch, "message digest is not SHA-256");
  if (Buffer.from(md.digest).toString("hex") !== hex) {
    return refuse(Reason.MessageDigestMismatch, `the bundle's message digest is not sha256:${hex}`);
  }
  return undefined;
}

function keyObject(pem: string): KeyObject | undefined {
  try {
    const key = createPublicKey({ key: pem, format: "pem" });
    return key.type === "public" ? key : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Verifies a bundle over a digest and returns the identity it proves: for a certificate, its
 * issuer extension and SAN; for a public-key bundle, the first of `publicKeys` (PEM) under which
 * it verifies. Compares the identity with nothing: {@link verifyBundle} and the trust policy do.
 */
export function verifySignedBundle(input: BundleInput & { readonly publicKeys?: readonly string[] }): BundleVerdict {
  try {
    return verifySignedBundleUnsafe(input);
  } catch (err) {
    const { reason, message } = reasonForError(err, false);
    return refuse(reason, message);
  }
}

function verifySignedBundleUnsafe(input: BundleInput & { readonly publicKeys?: readonly string[] }): BundleVerdict {
  if (!isDigest(input.digest)) {
    return refuse(Reason.DigestInvalid, "digest must be sha256:<64 lowercase hex>");
  }
  const hex = input.digest.slice("sha256:".length);
  if (input.artifact !== undefined && digestOf(input.artifact) !== input.digest) {
    return refuse(Reason.ArtifactDigestMismatch, `the artifact does not hash to ${input.digest}`);
  }
  const parsed = parseBundle(input.bundle);
  if (!parsed.ok) return refuse(parsed.reason, parsed.message);
  const bundle = parsed.bundle;
  if (bundle.content.$case === "messageSignature" && input.artifact === undefined) {
    // Node's crypto cannot verify ECDSA over a bare digest: the signed bytes are needed.
    return refuse(Reason.ArtifactRequired, "a message-signature bundle needs the signed bytes, not only their digest");
  }
  const artifact = input.artifact === undefined ? undefined : Buffer.from(input.artifact);
  const material = bundle.verificationMaterial.content;
  // What was signed must be about this digest; checked first, so the reason names it.
  const content = checkContent(bundle, hex);
  if (content !== undefined) return content;

  if (material.$case === "publicKey") {
    const keys = input.publicKeys ?? [];
    if (keys.length === 0) return refuse(Reason.CertificateRequired, "the bundle is signed with a key, and no trusted key was given");
    let last: BundleVerdict = refuse(Reason.KeyMismatch, "the bundle does not verify under any trusted key");
    for (const pem of keys) {
      const publicKey = keyObject(pem);
      if (publicKey === undefined) {
        last = refuse(Reason.KeyInvalid, "a trusted key is not a PEM public key");
        continue;
      }
      try {
        const trust = toTrustMaterial(input.trustedRoot, () => ({ publicKey, validFor: () => true }));
        const verifier = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
        verifier.verify(toSignedEntity(bundle, artifact));
      } catch (err) {
        const { reason, message } = reasonForError(err, true);
        last = refuse(reason, message);
        continue;
      }
      return { ok: true, identity: { kind: "key", publicKey: pem } };
    }
    return last;
  }

  const trust = toTrustMaterial(input.trustedRoot);
  const signer = new Verifier(trust).verify(toSignedEntity(bundle, artifact));
  const issuer = signer.identity?.extensions?.issuer;
  const subject = signer.identity?.subjectAlternativeName;
  if (typeof issuer !== "string" || issuer === "" || typeof subject !== "string" || subject === "") {
    return refuse(Reason.CertificateInvalid, "the signing certificate has no issuer or no subject");
  }
  return { ok: true, identity: { kind: "keyless", issuer, subject } };
}

/**
 * Verifies a bundle and requires the expected identity: the issuer exactly, the subject exactly
 * or wholly matched by an RE2 pattern; or, for a key identity, public-key material that verifies
 * under that one key.
 */
export function verifyBundle(input: BundleInput & { readonly expected: ExpectedIdentity }): BundleVerdict {
  try {
    const expected = input.expected;
    if (expected.kind === "key") {
      const parsed = parseBundle(input.bundle);
      if (!parsed.ok) return refuse(parsed.reason, parsed.message);
      if (parsed.bundle.verificationMaterial.content.$case !== "publicKey") {
        return refuse(Reason.KeyRequired, "a key identity needs a bundle signed with a public key, not a certificate");
      }
      if (keyObject(expected.publicKey) === undefined) return refuse(Reason.KeyInvalid, "the trusted key is not a PEM public key");
      return verifySignedBundle({ ...input, publicKeys: [expected.publicKey] });
    }
    const pattern = "subjectPattern" in expected ? compilePattern(expected.subjectPattern) : undefined;
    if ("subjectPattern" in expected && pattern === undefined) {
      return refuse(Reason.SubjectMismatch, "the subject pattern is not a valid RE2 pattern");
    }
    const verdict = verifySignedBundle({ ...input, publicKeys: [] });
    if (!verdict.ok) return verdict;
    const identity = verdict.identity;
    if (identity.kind !== "keyless") return refuse(Reason.CertificateRequired, "a keyless identity needs a certificate");
    if (identity.issuer !== expected.issuer) {
      return refuse(Reason.IssuerMismatch, `issuer ${JSON.stringify(identity.issuer)} is not ${JSON.stringify(expected.issuer)}`);
    }
    const subjectOk = pattern !== undefined ? pattern.matches(identity.subject) : "subject" in expected && identity.subject === expected.subject;
    if (!subjectOk) return refuse(Reason.SubjectMismatch, `subject ${JSON.stringify(identity.subject)} is not the expected one`);
    return verdict;
  } catch (err) {
    const { reason, message } = reasonForError(err, input.expected.kind === "key");
    return refuse(reason, message);
  }
}
