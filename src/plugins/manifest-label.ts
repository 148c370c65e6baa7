/**
 * The manifest label `io.openfief.plugin.manifest` on the image config (D-42). The signature
 * covers it, so it is read strictly: a label that `JSON.parse` would accept with a repeated key
 * (keeping whichever value came last) or trailing data is refused, as is any unknown field.
 */
import { CAPS, tooLarge, utf8Length } from "./caps.js";
import { ErrorCode, fail, join } from "./errors.js";
import type { FieldError, Result } from "./errors.js";
import { isJsonObject, own, parseStrictJson, unknownFields } from "./strict-json.js";
import type { Manifest } from "./types.js";
import { parseManifest } from "./validate.js";

const MANIFEST_FIELDS = ["capabilities", "egress", "secrets", "dataTiers", "configSchema", "rbac", "ui"] as const;
const EGRESS_FIELDS = ["host", "port"] as const;
const SECRET_FIELDS = ["name", "mountPath"] as const;

/**
 * Reads a manifest label's value (JSON text) as the same fields as `spec.manifest`, refusing
 * invalid JSON, trailing data, repeated keys and unknown fields, then validates the manifest.
 * Every problem is reported at once, under `path`. A label over {@link CAPS.manifestLabelBytes}
 * UTF-8 bytes is {@link ErrorCode.TooLarge} before it is parsed. Never throws.
 */
export function parseManifestLabel(label: string, path = "label"): Result<Manifest> {
  if (typeof label !== "string") {
    return fail({ code: ErrorCode.InvalidManifestLabel, path, message: "the manifest label must be a string" });
  }
  // The size first: nothing parses a label larger than any manifest within the caps can be.
  if (utf8Length(label, CAPS.manifestLabelBytes) > CAPS.manifestLabelBytes) {
    return fail(tooLarge(path, `the manifest label is larger than ${CAPS.manifestLabelBytes} bytes`));
  }
  const parsed = parseStrictJson(label, path, ErrorCode.InvalidManifestLabel);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  const unknown: FieldError[] = [];
  if (isJsonObject(value)) {
    unknown.push(...unknownFields(value, path, MANIFEST_FIELDS));
    nested(own(value, "egress"), join(path, "egress"), EGRESS_FIELDS, unknown);
    nested(own(value, "secrets"), join(path, "secrets"), SECRET_FIELDS, unknown);
  }
  const manifest = parseManifest(value, path);
  if (unknown.length === 0) return manifest;
  // parseManifest may report the same unknown fields: list each problem once.
  const seen = new Set(unknown.map(key));
  const rest = manifest.ok ? [] : manifest.errors.filter((e) => !seen.has(key(e)));
  return fail([...unknown, ...rest]);
}

function nested(list: unknown, path: string, allowed: readonly string[], out: FieldError[]): void {
  if (!Array.isArray(list)) return;
  list.forEach((item, i) => {
    if (isJsonObject(item)) out.push(...unknownFields(item, join(path, i), allowed));
  });
}

function key(e: FieldError): string {
  return `${e.code}\u0000${e.path}`;
}
