/**
 * Names that become Kubernetes object names or keys: plugin names, Secret names and data tiers.
 * Each check returns every problem as a {@link FieldError} and never throws.
 */
import { ErrorCode, fieldError } from "./errors.js";
import type { FieldError } from "./errors.js";
import { CAPS } from "./caps.js";
import { MAX_PLUGIN_NAME } from "./constants.js";

/** Kubernetes' longest DNS subdomain (a Secret's name). */
export const MAX_SECRET_NAME = CAPS.secretName;
/** The longest data tier name. */
export const MAX_DATA_TIER = CAPS.dataTier;

// A DNS label (RFC 1123) that starts with a letter: `plugin-<name>` must also be a valid label,
// and names such as `1password` would be read as numbers by some tools.
const PLUGIN_NAME = /^[a-z](?:[a-z0-9-]*[a-z0-9])?$/;
// Kubernetes' IsDNS1123Subdomain: dot-separated labels of lower-case alphanumerics and '-',
// each starting and ending alphanumeric.
const DNS1123_LABEL = "[a-z0-9](?:[-a-z0-9]*[a-z0-9])?";
const SECRET_NAME = new RegExp(`^${DNS1123_LABEL}(?:\\.${DNS1123_LABEL})*$`);
const DATA_TIER = /^[A-Za-z0-9_-]+$/;

/** True when `name` is a valid plugin name (see {@link validatePluginName}). */
export function isValidPluginName(name: unknown): name is string {
  return typeof name === "string" && name.length <= MAX_PLUGIN_NAME && PLUGIN_NAME.test(name);
}

/**
 * Checks a plugin name: a DNS label (lower-case a-z, 0-9 and '-', no leading or trailing '-')
 * that starts with a letter and is 1 to {@link MAX_PLUGIN_NAME} characters long, so that
 * `plugin-<name>` still fits Kubernetes' 63.
 */
export function validatePluginName(name: unknown, path: string): FieldError[] {
  if (name === undefined) return [fieldError(ErrorCode.Required, path, "a plugin name is required")];
  if (typeof name !== "string") return [fieldError(ErrorCode.InvalidType, path, "a plugin name must be a string")];
  const errors: FieldError[] = [];
  if (name.length === 0) {
    errors.push(fieldError(ErrorCode.InvalidName, path, "a plugin name must not be empty"));
    return errors;
  }
  // The length first: the pattern's backtracking is quadratic in a long enough string.
  if (name.length > MAX_PLUGIN_NAME) {
    errors.push(
      fieldError(ErrorCode.InvalidName, path, `a plugin name is at most ${MAX_PLUGIN_NAME} characters, not ${name.length}`),
    );
    return errors;
  }
  if (!PLUGIN_NAME.test(name)) {
    errors.push(
      fieldError(
        ErrorCode.InvalidName,
        path,
        "a plugin name must be a DNS label that starts with a letter: lower-case a-z, 0-9 and '-', not ending in '-'",
      ),
    );
  }
  return errors;
}

/**
 * Checks a Kubernetes Secret name: a DNS subdomain as Kubernetes defines it (at most 253
 * characters; dot-separated labels of lower-case alphanumerics and '-', each starting and ending
 * with an alphanumeric).
 */
export function validateSecretName(name: unknown, path: string): FieldError[] {
  if (name === undefined) return [fieldError(ErrorCode.Required, path, "a Secret name is required")];
  if (typeof name !== "string") return [fieldError(ErrorCode.InvalidType, path, "a Secret name must be a string")];
  const errors: FieldError[] = [];
  // The length first: the pattern's backtracking is quadratic in a long enough string.
  if (name.length > MAX_SECRET_NAME) {
    errors.push(
      fieldError(ErrorCode.InvalidSecretName, path, `a Secret name is at most ${MAX_SECRET_NAME} characters, not ${name.length}`),
    );
    return errors;
  }
  if (!SECRET_NAME.test(name)) {
    errors.push(
      fieldError(
        ErrorCode.InvalidSecretName,
        path,
        "a Secret name must be a DNS subdomain: lower-case alphanumerics, '-' and '.', each part starting and ending alphanumeric",
      ),
    );
  }
  return errors;
}

/** Checks a data tier: 1 to {@link MAX_DATA_TIER} letters, digits, '-' or '_'. */
export function validateDataTier(tier: unknown, path: string): FieldError[] {
  if (tier === undefined) return [fieldError(ErrorCode.Required, path, "a data tier is required")];
  if (typeof tier !== "string") return [fieldError(ErrorCode.InvalidType, path, "a data tier must be a string")];
  if (tier.length === 0 || tier.length > MAX_DATA_TIER || !DATA_TIER.test(tier)) {
    return [
      fieldError(ErrorCode.InvalidDataTier, path, `a data tier is 1 to ${MAX_DATA_TIER} letters, digits, '-' or '_'`),
    ];
  }
  return [];
}
