/**
 * How a plugin learns who the core is (D-59): the operator mounts the ConfigMap `openfief-sa-jwks`
 * (the cluster's ServiceAccount issuer and public keys) and names the core's ServiceAccount
 * username in OPENFIEF_CORE_SUBJECT, so the SDK can verify the core's token offline.
 */
import { NAMESPACE, TOKEN_ROOT } from "./constants.js";
import { ErrorCode, fieldError } from "./errors.js";
import type { FieldError } from "./errors.js";
import { pluginForServiceAccount } from "./service-account.js";

/** The ConfigMap in `openfief` holding the cluster's ServiceAccount issuer and public keys. */
export const SA_JWKS_CONFIGMAP = "openfief-sa-jwks";
/** The pod volume that mounts {@link SA_JWKS_CONFIGMAP}. */
export const SA_JWKS_VOLUME = "openfief-sa-jwks";
/** Where it is mounted, given to the plugin in OPENFIEF_SA_JWKS_DIR (the SDK's default too). */
export const SA_JWKS_DIR = `${TOKEN_ROOT}/openfief-sa-jwks`;
/** The key (and file) holding the cluster's public keys as a JSON Web Key Set. */
export const SA_JWKS_FILE = "jwks.json";
/** The key (and file) holding the issuer the core's tokens must name. */
export const SA_ISSUER_FILE = "issuer";
/** Both files, sorted: the only keys of the ConfigMap a plugin sees. */
export const SA_JWKS_ITEMS: readonly string[] = [SA_ISSUER_FILE, SA_JWKS_FILE];

const SA_USERNAME_PREFIX = "system:serviceaccount:";
const DNS1123_LABEL = "[a-z0-9](?:[-a-z0-9]*[a-z0-9])?";
const NAMESPACE_NAME = new RegExp(`^${DNS1123_LABEL}$`);
const SA_NAME = new RegExp(`^${DNS1123_LABEL}(?:\\.${DNS1123_LABEL})*$`);

/**
 * Checks the core's subject: a ServiceAccount username `system:serviceaccount:<namespace>:<name>`
 * with a DNS-label namespace and a DNS-subdomain name. A plugin's own username
 * (`system:serviceaccount:openfief:plugin-<name>`) is refused: every plugin holds such a token, so
 * naming one as the core would let a plugin call another. Messages never repeat the value.
 */
export function coreSubjectProblems(value: unknown, path: string): FieldError[] {
  const invalid = (why: string): FieldError[] => [fieldError(ErrorCode.InvalidTopology, path, why)];
  if (typeof value !== "string") return invalid("must be the core's ServiceAccount username, system:serviceaccount:<namespace>:<name>");
  const parts = value.startsWith(SA_USERNAME_PREFIX) ? value.slice(SA_USERNAME_PREFIX.length).split(":") : [];
  const [ns, name] = parts;
  if (parts.length !== 2 || ns === undefined || name === undefined) {
    return invalid("must be a ServiceAccount username, system:serviceaccount:<namespace>:<name>");
  }
  const errors: FieldError[] = [];
  if (ns.length > 63 || !NAMESPACE_NAME.test(ns)) errors.push(...invalid("names a namespace that is not a DNS label"));
  if (name.length > 253 || !SA_NAME.test(name)) errors.push(...invalid("names a ServiceAccount that is not a DNS subdomain"));
  if (errors.length === 0 && pluginForServiceAccount(value).ok) {
    errors.push(...invalid(`must not be a plugin's ServiceAccount (system:serviceaccount:${NAMESPACE}:plugin-<name>)`));
  }
  return errors;
}
