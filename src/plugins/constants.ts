/** Names that are the interface (DESIGN.md, "Names that are the interface"). Keep them exact. */
import { CAPS } from "./caps.js";

export const NAMESPACE = "openfief";
export const SERVICE_ACCOUNT_PREFIX = "plugin-";
export const CORE_AUDIENCE = "openfief-core";
export const EGRESS_AUDIENCE = "openfief-egress";
export const INSTANCE_AUDIENCE_PREFIX = "openfief-plugin:";
export const CORE_TOKEN_PATH = "/var/run/secrets/openfief/token";
export const EGRESS_TOKEN_PATH = "/var/run/secrets/openfief-egress/token";
export const TOKEN_ROOT = "/var/run/secrets";
export const MANIFEST_LABEL = "io.openfief.plugin.manifest";
export const ALLOWLIST_CONFIGMAP = "openfief-egress-allowlist";
export const TRUSTED_SIGNERS_CONFIGMAP = "openfief-trusted-signers";
export const PROXY_PORT = 4750;
export const API_GROUP = "openfief.io";
export const API_VERSION = "v1alpha1";
/** The longest plugin name: `plugin-<name>` must still fit Kubernetes' 63. */
export const MAX_PLUGIN_NAME = CAPS.pluginName;
/** Projected tokens are valid for an hour and refreshed by the kubelet. */
export const TOKEN_EXPIRATION_SECONDS = 3600;

export const ENV = {
  coreAddress: "OPENFIEF_CORE_ADDRESS",
  listenPort: "OPENFIEF_LISTEN_PORT",
  config: "OPENFIEF_CONFIG",
  tokenFile: "OPENFIEF_TOKEN_FILE",
  egressTokenFile: "OPENFIEF_EGRESS_TOKEN_FILE",
  instance: "OPENFIEF_INSTANCE",
  coreSubject: "OPENFIEF_CORE_SUBJECT",
  saJwksDir: "OPENFIEF_SA_JWKS_DIR",
  httpsProxy: "HTTPS_PROXY",
  noProxy: "NO_PROXY",
} as const;

/** The audience of the token the core presents to one plugin instance (D-59). */
export function instanceAudience(instance: string): string {
  return INSTANCE_AUDIENCE_PREFIX + instance;
}
