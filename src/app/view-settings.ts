/**
 * The views part's settings and the few constants the faces need, apart from `views.ts` so that
 * reading them loads neither the views room nor the Connect stack (ADR 0008).
 */
import type { PolicyRule } from "../plugins/index.js";
import type { UserRoles } from "../views/index.js";

/** The key ring's file in a data folder (private: whoever reads it can mint any PluginToken). */
export const VIEW_KEYS_FILE = "view-keys.json";

/** Where the JWKS is published on the gateway's origin. */
export const JWKS_PATH = "/.well-known/jwks.json";

/**
 * The defaults, on one machine: three origins, and the console's and the plugin proxy's are
 * different sites (`127.0.0.1` and `localhost`, docs/adr/0073).
 */
export const VIEW_DEFAULTS = {
  clusterId: "embedded",
  consoleOrigin: "http://127.0.0.1:4780",
  pluginProxyOrigin: "http://localhost:4781",
  gatewayOrigin: "http://localhost:4782",
} as const;

/** How long a signing key signs before a fresh one takes over (the old one stays published a day). */
export const KEY_MAX_AGE_SECONDS = 30 * 24 * 3600;

/**
 * What a console user may read through a view, whatever their role: the control plane's own
 * resources, read-only — what the console shows every user. A PluginToken does not say which
 * session minted it, so the gateway grants every user the rules of the least role (docs/adr/0074).
 */
export const CONSOLE_USER_RULES: readonly PolicyRule[] = [
  { apiGroups: ["openfief.io"], resources: ["*"], verbs: ["get", "list", "watch"], resourceNames: [], nonResourceURLs: [] },
];

/** The console users' roles as the views part reads them: every user, the rules of {@link CONSOLE_USER_RULES}. */
export function consoleUserRoles(): UserRoles {
  return { rulesFor: async () => CONSOLE_USER_RULES };
}

/** The settings of the views part (saved with the others). */
export interface ViewSettings {
  readonly clusterId: string;
  /** The console's origin; absent: the console's own URL when it runs, else the default. */
  readonly consoleOrigin?: string;
  readonly pluginProxyOrigin: string;
  readonly gatewayOrigin: string;
}

