/**
 * Fields a caller controls (a request's path, its selectors, a name in it) are kept in events only
 * up to a cap; a value cut to its cap is recorded with the `sha256:` of its whole, so the event
 * still tells two long values apart and matches the value in another record (docs/adr/0091).
 */
import { createHash } from "node:crypto";

/** The longest caller-controlled text an event keeps, in UTF-16 code units. */
export const CALLER_FIELD_MAX = 256;

/** A value as an event keeps it: at most `max` long, with the digest of the whole when it was cut. */
export interface Capped {
  readonly value: string;
  /** `sha256:<hex>` of the whole value (UTF-8); null when nothing was cut. */
  readonly digest: string | null;
}

/** `sha256:<hex>` of a text's UTF-8 bytes. */
export function textDigest(text: string): string {
  return `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;
}

/** `value` cut to `max` code units (never between the halves of a surrogate pair), with the digest of the whole when cut. */
export function capField(value: string, max = CALLER_FIELD_MAX): Capped {
  if (value.length <= max) return { value, digest: null };
  let end = max;
  const last = value.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return { value: value.slice(0, end), digest: textDigest(value) };
}
