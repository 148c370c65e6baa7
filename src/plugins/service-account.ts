/**
 * The map between a plugin's name and its Kubernetes identity: the ServiceAccount
 * `plugin-<name>` in `openfief`, whose tokens review as `system:serviceaccount:openfief:plugin-<name>`.
 */
import { ErrorCode, fail, fieldError, ok } from "./errors.js";
import type { Result } from "./errors.js";
import { NAMESPACE, SERVICE_ACCOUNT_PREFIX } from "./constants.js";
import { isValidPluginName } from "./names.js";

const USERNAME_PREFIX = `system:serviceaccount:${NAMESPACE}:${SERVICE_ACCOUNT_PREFIX}`;

/** The plugin's ServiceAccount name: `plugin-<name>`. */
export function serviceAccountName(plugin: string): string {
  return `${SERVICE_ACCOUNT_PREFIX}${plugin}`;
}

/** The Kubernetes username of the plugin's ServiceAccount: `system:serviceaccount:openfief:plugin-<name>`. */
export function serviceAccountUsername(plugin: string): string {
  return `${USERNAME_PREFIX}${plugin}`;
}

/**
 * The plugin a reviewed Kubernetes username belongs to. Only
 * `system:serviceaccount:openfief:plugin-<valid plugin name>` is a plugin: another namespace, a
 * prefix trick such as `openfief-x`, extra colons, the core's own ServiceAccount, or a name that is
 * not a valid plugin name is {@link ErrorCode.NotAPlugin}. The message never repeats the username.
 */
export function pluginForServiceAccount(username: string): Result<string> {
  const notAPlugin = fail<string>(
    fieldError(ErrorCode.NotAPlugin, "", `not a plugin: only system:serviceaccount:${NAMESPACE}:${SERVICE_ACCOUNT_PREFIX}<name> is`),
  );
  if (typeof username !== "string" || !username.startsWith(USERNAME_PREFIX)) return notAPlugin;
  const name = username.slice(USERNAME_PREFIX.length);
  return isValidPluginName(name) ? ok(name) : notAPlugin;
}
