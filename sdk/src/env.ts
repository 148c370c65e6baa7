import { readFile } from "node:fs/promises";
import { SdkError } from "./errors.js";

/** Environment variable names, exactly as the operator sets them (seed 000, "The Go SDK"). */
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

/** Where the kubelet projects the `openfief-core` token. */
export const DEFAULT_TOKEN_FILE = "/var/run/secrets/openfief/token";
/** Where the kubelet projects the `openfief-egress` token (D-63). */
export const DEFAULT_EGRESS_TOKEN_FILE = "/var/run/secrets/openfief-egress/token";
/** Where the operator mounts the cluster's service-account JWKS and issuer (D-59). */
export const DEFAULT_SA_JWKS_DIR = "/var/run/secrets/openfief-sa-jwks";
/** The port a connector listens on when OPENFIEF_LISTEN_PORT is not set. */
export const DEFAULT_LISTEN_PORT = 8080;
/** The audience prefix of the token the core presents to a plugin instance. */
export const INSTANCE_AUDIENCE_PREFIX = "openfief-plugin:";

/** The audience of the core's token for one plugin instance: `openfief-plugin:<instance>`. */
export function instanceAudience(instance: string): string {
  return INSTANCE_AUDIENCE_PREFIX + instance;
}

/** An environment to read from; `process.env` unless a test passes its own. */
export type Environment = Readonly<Record<string, string | undefined>>;

function value(env: Environment, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

/**
 * The core's base URL from OPENFIEF_CORE_ADDRESS: a ClusterIP and port (plugins have no DNS),
 * written `10.0.0.1:8080`, `[fd00::1]:8080` or with an explicit `http(s)://`.
 */
export function coreUrl(env: Environment = process.env): URL {
  const raw = value(env, ENV.coreAddress);
  if (raw === undefined) throw new SdkError("env_invalid", `${ENV.coreAddress} is not set`);
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch (cause) {
    throw new SdkError("env_invalid", `${ENV.coreAddress} is not a host:port`, { cause });
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "") {
    throw new SdkError("env_invalid", `${ENV.coreAddress} must be a host:port`);
  }
  return url;
}

/** The port to listen on, from OPENFIEF_LISTEN_PORT (8080 when unset). */
export function listenPort(env: Environment = process.env): number {
  const raw = value(env, ENV.listenPort);
  if (raw === undefined) return DEFAULT_LISTEN_PORT;
  if (!/^\d{1,5}$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535) {
    throw new SdkError("env_invalid", `${ENV.listenPort} must be a port number from 1 to 65535`);
  }
  return Number(raw);
}

/**
 * The plugin's config from OPENFIEF_CONFIG, parsed as JSON. The variable holds either the JSON
 * itself (starting with `{` or `[`) or the path of a file that holds it. Undefined when unset.
 */
export async function loadConfig(env: Environment = process.env): Promise<unknown> {
  const raw = value(env, ENV.config);
  if (raw === undefined) return undefined;
  let text = raw;
  if (!raw.startsWith("{") && !raw.startsWith("[")) {
    try {
      text = await readFile(raw, "utf8");
    } catch (cause) {
      throw new SdkError("config_invalid", `${ENV.config} names a file that cannot be read`, { cause });
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw new SdkError("config_invalid", `${ENV.config} is not valid JSON`, { cause });
  }
}

/** Every setting the operator passes to a plugin, with the SDK's defaults applied. */
export interface PluginEnvironment {
  readonly coreAddress?: string;
  readonly listenPort: number;
  readonly config?: string;
  readonly tokenFile: string;
  readonly egressTokenFile: string;
  readonly instance?: string;
  readonly coreSubject?: string;
  readonly saJwksDir: string;
  readonly httpsProxy?: string;
  readonly noProxy?: string;
}

/** Reads the whole environment at once; throws SdkError("env_invalid") on a malformed port. */
export function readEnvironment(env: Environment = process.env): PluginEnvironment {
  const optional = (name: string, key: string): Record<string, string> => {
    const v = value(env, name);
    return v === undefined ? {} : { [key]: v };
  };
  return {
    ...optional(ENV.coreAddress, "coreAddress"),
    listenPort: listenPort(env),
    ...optional(ENV.config, "config"),
    tokenFile: value(env, ENV.tokenFile) ?? DEFAULT_TOKEN_FILE,
    egressTokenFile: value(env, ENV.egressTokenFile) ?? DEFAULT_EGRESS_TOKEN_FILE,
    ...optional(ENV.instance, "instance"),
    ...optional(ENV.coreSubject, "coreSubject"),
    saJwksDir: value(env, ENV.saJwksDir) ?? DEFAULT_SA_JWKS_DIR,
    ...optional(ENV.httpsProxy, "httpsProxy"),
    ...optional(ENV.noProxy, "noProxy"),
  };
}
