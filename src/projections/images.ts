/**
 * Reading images out of recorded facts: the image an observed spec asks for and the digest of an
 * image reference. The decider, the audit queries and the folds read them the same way.
 */
import { parseImageRef } from "../plugins/index.js";
import type { JsonValue } from "../plugins/index.js";

/** The image an observed Plugin spec asks for; null when the spec names none (or is not an object). */
export function specImage(spec: JsonValue | null): string | null {
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) return null;
  return typeof spec.image === "string" ? spec.image : null;
}

/** The digest an image reference pins; null for none or a reference that does not parse. */
export function imageDigest(image: string | null | undefined): string | null {
  if (image === null || image === undefined) return null;
  const ref = parseImageRef(image);
  return ref.ok ? ref.value.digest : null;
}
