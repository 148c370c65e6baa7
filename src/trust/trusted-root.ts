/**
 * The Sigstore trust root: which transparency logs, certificate authorities, CT logs and timestamp
 * authorities a signature may chain to. It ships with the product (data/), is pinned by SHA-256,
 * and is never fetched: verification is offline (D-56).
 *
 * `@sigstore/verify` treats a log key without `validFor.start` as valid since the beginning of
 * time, which lets a root with a missing start accept anything that log ever signed. We validate
 * the root ourselves, strictly, before the library sees it.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { TrustedRoot } from "@sigstore/protobuf-specs";
import { shippedFile } from "./project-root.js";

/** SHA-256 of `data/trusted_root.public-good.json`, the Sigstore public-good root we ship. */
export const SHIPPED_TRUSTED_ROOT_SHA256 = "6494e21ea73fa7ee769f85f57d5a3e6a08725eae1e38c755fc3517c9e6bc0b66";

/** Where the shipped root lives, relative to this module (works from a clone and from the CLI). */
export const SHIPPED_TRUSTED_ROOT_PATH = shippedFile("data", "trusted_root.public-good.json");

const MEDIA_TYPES = new Set([
  "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
  "application/vnd.dev.sigstore.trustedroot.v0.1+json",
  "application/vnd.dev.sigstore.trustedroot.v0.2+json",
]);

/** A trust root that could not be read or is not strictly valid. Its code is always `trust_root_invalid`. */
export class TrustRootError extends Error {
  readonly code = "trust_root_invalid" as const;
  constructor(message: string) {
    super(message);
    this.name = "TrustRootError";
  }
}

/** A validated trust root and the SHA-256 of the bytes it came from (recorded with every verdict). */
export interface LoadedTrustedRoot {
  readonly root: TrustedRoot;
  readonly sha256: string;
}

/** Hex SHA-256 of some bytes. */
export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function isDate(d: unknown): d is Date {
  return d instanceof Date && !Number.isNaN(d.getTime());
}

function checkRange(path: string, range: { start: Date | undefined; end?: Date | undefined } | undefined): string[] {
  if (range === undefined || !isDate(range.start)) return [`${path}.validFor.start is missing`];
  if (range.end !== undefined && (!isDate(range.end) || range.end.getTime() < range.start.getTime())) {
    return [`${path}.validFor.end is before its start`];
  }
  return [];
}

/** Every problem with a decoded root; empty when it is strictly valid. */
export function trustedRootProblems(root: TrustedRoot): string[] {
  const problems: string[] = [];
  if (!MEDIA_TYPES.has(root.mediaType)) problems.push(`mediaType ${JSON.stringify(root.mediaType)} is not a trusted root`);
  const logs = (name: "tlogs" | "ctlogs") => {
    root[name].forEach((log, i) => {
      const path = `${name}[${i}]`;
      if (log.publicKey === undefined || log.publicKey.rawBytes === undefined || log.publicKey.rawBytes.length === 0) {
        problems.push(`${path}.publicKey.rawBytes is missing`);
      } else {
        problems.push(...checkRange(`${path}.publicKey`, log.publicKey.validFor));
      }
      if (log.logId === undefined || log.logId.keyId.length === 0) problems.push(`${path}.logId is missing`);
    });
  };
  const authorities = (name: "certificateAuthorities" | "timestampAuthorities") => {
    root[name].forEach((ca, i) => {
      const path = `${name}[${i}]`;
      if (ca.certChain === undefined || ca.certChain.certificates.length === 0) problems.push(`${path}.certChain is empty`);
      problems.push(...checkRange(path, ca.validFor));
    });
  };
  logs("tlogs");
  logs("ctlogs");
  authorities("certificateAuthorities");
  authorities("timestampAuthorities");
  if (root.tlogs.length === 0 && root.certificateAuthorities.length === 0 && root.timestampAuthorities.length === 0) {
    problems.push("the root trusts nothing");
  }
  return problems;
}

/** Decodes and strictly validates a trust root. Throws {@link TrustRootError} naming every problem. */
export function parseTrustedRoot(bytes: Uint8Array | string): LoadedTrustedRoot {
  const text = typeof bytes === "string" ? bytes : Buffer.from(bytes).toString("utf8");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new TrustRootError("trusted root is not JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new TrustRootError("trusted root is not a JSON object");
  let root: TrustedRoot;
  try {
    root = TrustedRoot.fromJSON(json);
  } catch (err) {
    throw new TrustRootError(`trusted root does not decode: ${err instanceof Error ? err.message : String(err)}`);
  }
  const problems = trustedRootProblems(root);
  if (problems.length > 0) throw new TrustRootError(`trusted root is invalid: ${problems.join("; ")}`);
  return { root, sha256: sha256Hex(bytes) };
}

/** Reads and validates a trust root file given by the user (not pinned: the user chose it). */
export function loadTrustedRootFile(path: string): LoadedTrustedRoot {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new TrustRootError(`cannot read trusted root ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
  }
  return parseTrustedRoot(bytes);
}

/**
 * Loads the root that ships with the product and refuses it unless its bytes hash to the pinned
 * value, so an edited or swapped file never widens what we trust.
 */
export function loadShippedTrustedRoot(path: string = SHIPPED_TRUSTED_ROOT_PATH, pinned: string = SHIPPED_TRUSTED_ROOT_SHA256): LoadedTrustedRoot {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new TrustRootError(`cannot read the shipped trusted root ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
  }
  const actual = sha256Hex(bytes);
  if (actual !== pinned) throw new TrustRootError(`the shipped trusted root has sha256 ${actual}, expected ${pinned}`);
  return parseTrustedRoot(bytes);
}
