/**
 * The running WebAssembly plugins as the operator publishes them to the cluster's plugin host
 * (issue 13, "In a cluster"; ADR 0080), and as the host follows them.
 *
 * The ConfigMap `openfief-plugin-host` has one key per running WebAssembly plugin; its value is
 * that plugin's entry as JSON with its keys in a fixed order and nothing else:
 * `{"image":"<ref@sha256:…>","module":"<64 hex>","origins":["https://host[:port]",…]}`, the
 * origins sorted and unique (`https://host` for port 443, as URLs write an origin), then, only
 * when the plugin was granted any, `"secrets":[{"name":…,"role":…},…]`: the instance's Secrets by
 * name (sorted), each with the role the manifest reads it as when that differs (docs/adr/0198).
 * Everything the host needs and nothing secret (a Secret's name, never its value): the image (pinned by digest, so its signed manifest label is
 * fixed), the module it must find as the image's one layer, and the origins the plugin's calls
 * may reach (its effective egress hosts). The host serves only what it can read, so decoding is
 * strict: it accepts exactly what encoding produces, key by key.
 */
import { CAPS } from "./caps.js";
import { formatHostPort, hostnameProblem, isValidPort } from "./egress-host.js";
import { compareStrings, sortedUnique } from "./effective.js";
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import { parseImageRef } from "./image-ref.js";
import { isPlainObject } from "./json.js";
import { isValidPluginName, validateSecretName } from "./names.js";
import { parseStrictJson } from "./strict-json.js";
import type { EgressHost } from "./types.js";

/** The ConfigMap the operator publishes the running WebAssembly plugins in. */
export const PLUGIN_HOST_CONFIGMAP = "openfief-plugin-host";
/** The plugin host's Deployment, ServiceAccount and pods' name. */
export const PLUGIN_HOST_NAME = "openfief-plugin-host";
/**
 * The labels of the plugin host's pods (deploy/base/plugin-host.yaml): what every WebAssembly
 * plugin's Service selects. They never include the plugin label, so a plugin's own
 * NetworkPolicies can never take the host for the core or the proxy.
 */
export const PLUGIN_HOST_POD_LABELS: Readonly<Record<string, string>> = Object.freeze({ "app.kubernetes.io/name": PLUGIN_HOST_NAME });

/** What the host needs to run one plugin. */
export interface HostedPlugin {
  /** The image, `name@sha256:…`. */
  readonly image: string;
  /** The module's lowercase hex SHA-256: the image's one layer. */
  readonly module: string;
  /** The origins its calls may reach, sorted and unique. */
  readonly origins: readonly string[];
  /** The instance's Secrets its calls may read (the host's `secret` call), sorted by name; absent when none. */
  readonly secrets?: readonly HostedSecret[];
}

/** A Secret of the instance a hosted plugin may read: its name, and the role the manifest reads it as when that differs. */
export interface HostedSecret {
  readonly name: string;
  readonly role?: string;
}

/** What the operator publishes for one plugin: the origins come from its effective egress hosts. */
export interface HostedPluginInput {
  readonly image: string;
  readonly module: string;
  readonly egress: readonly EgressHost[];
  /** The Secrets of its effective permissions (none when absent). */
  readonly secrets?: readonly HostedSecret[];
}

/** The most plugins one ConfigMap lists (its 1 MiB holds far fewer entries of the longest kind). */
export const MAX_HOSTED_PLUGINS = 1024;
const MODULE_DIGEST = /^[0-9a-f]{64}$/;
const ORIGIN = /^https:\/\/([^:/]+)(?::([1-9][0-9]{0,4}))?$/;
// The longest value an entry can be: the longest image, the module, CAPS.listItems longest origins
// and as many Secrets, each with a role (a Secret's name is at most 253 characters).
const MAX_ENTRY_TEXT = 64 + CAPS.imageRef + 64 + CAPS.listItems * (CAPS.hostname + "\"https://:65535\",".length) + 16 + CAPS.listItems * (2 * 253 + "{\"name\":\"\",\"role\":\"\"},".length);

/** `https://host` for port 443, `https://host:port` otherwise. */
export function hostOrigin(h: EgressHost): string {
  return h.port === 443 ? `https://${h.host}` : `https://${h.host}:${h.port}`;
}

/** The secrets as an entry writes them: by name, each `{name}` or `{name, role}` (role only when it differs). */
function secretsText(secrets: readonly HostedSecret[]): HostedSecret[] {
  const byName = new Map<string, HostedSecret>();
  for (const s of secrets) byName.set(s.name, s.role === undefined || s.role === s.name ? { name: s.name } : { name: s.name, role: s.role });
  return [...byName.values()].sort((a, b) => compareStrings(a.name, b.name));
}

function entryText(image: string, module: string, origins: readonly string[], secrets: readonly HostedSecret[] = []): string {
  // Keys in sorted order, no spaces: the same text RFC 8785 gives for these strings.
  return secrets.length === 0 ? JSON.stringify({ image, module, origins }) : JSON.stringify({ image, module, origins, secrets: secretsText(secrets) });
}

/**
 * The ConfigMap data for the running WebAssembly plugins. Its inputs are what the model already
 * checked (a running version's image, module and effective egress); {@link decodeHostedPlugins}
 * refuses any entry that is not valid.
 */
export function encodeHostedPlugins(plugins: ReadonlyMap<string, HostedPluginInput>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, p] of [...plugins].sort(([a], [b]) => compareStrings(a, b))) {
    Object.defineProperty(out, name, {
      value: entryText(p.image, p.module, sortedUnique(p.egress.map(hostOrigin)), p.secrets ?? []),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** What {@link decodeHostedPlugins} read: the entries it could, and the problem with each it could not. */
export interface DecodedHostedPlugins {
  readonly plugins: ReadonlyMap<string, HostedPlugin>;
  /** {@link ErrorCode.InvalidHostedPlugin} (or TooLarge) at `<plugin>` or `<plugin>.<field>`; empty when all were read. */
  readonly errors: readonly FieldError[];
}

function originProblem(origin: unknown): string | undefined {
  if (typeof origin !== "string") return "must be a string";
  const m = ORIGIN.exec(origin);
  if (m === null) return "must be https://host or https://host:port";
  const host = m[1] ?? "";
  const problem = hostnameProblem(host);
  if (problem !== undefined) return `host ${problem}`;
  if (m[2] !== undefined && (!isValidPort(Number(m[2])) || Number(m[2]) === 443)) return "the port must be 1 to 65535 and is not written when it is 443";
  return undefined;
}

function fieldProblems(name: string, v: Record<string, unknown>, bad: (path: string, message: string) => undefined): void {
  const image = v["image"];
  const ref = typeof image === "string" ? parseImageRef(image) : null;
  if (ref === null || !ref.ok) bad(join(name, "image"), "must be an image reference pinned by digest");
  const module = v["module"];
  if (typeof module !== "string" || !MODULE_DIGEST.test(module)) bad(join(name, "module"), "must be the module's lowercase hex SHA-256");
  const origins = v["origins"];
  if (!Array.isArray(origins) || origins.length > CAPS.listItems) {
    bad(join(name, "origins"), `must be a list of at most ${CAPS.listItems} origins`);
    return;
  }
  origins.forEach((o, i) => {
    const problem = originProblem(o);
    if (problem !== undefined) bad(join(join(name, "origins"), i), problem);
  });
  if (!Object.hasOwn(v, "secrets")) return;
  const secrets = v["secrets"];
  if (!Array.isArray(secrets) || secrets.length === 0 || secrets.length > CAPS.listItems) {
    bad(join(name, "secrets"), `must be a list of 1 to ${CAPS.listItems} Secrets`);
    return;
  }
  secrets.forEach((s, i) => {
    const at = join(join(name, "secrets"), i);
    if (!isPlainObject(s)) return void bad(at, "must be {name} or {name, role}");
    if (validateSecretName(s["name"], join(at, "name")).length > 0) bad(join(at, "name"), "must be a Secret name");
    if (s["role"] !== undefined && validateSecretName(s["role"], join(at, "role")).length > 0) bad(join(at, "role"), "must be a Secret name");
  });
}

function decodeEntry(name: string, text: unknown, errors: FieldError[]): HostedPlugin | undefined {
  const bad = (path: string, message: string): undefined => {
    errors.push(fieldError(ErrorCode.InvalidHostedPlugin, path, message));
    return undefined;
  };
  if (!isValidPluginName(name)) return bad(name, "the key is not a valid plugin name");
  if (typeof text !== "string") return bad(name, "the value must be a string");
  if (text.length > MAX_ENTRY_TEXT) {
    errors.push(fieldError(ErrorCode.TooLarge, name, `the value is longer than an entry of ${CAPS.listItems} origins can be`));
    return undefined;
  }
  const parsed = parseStrictJson(text, name, ErrorCode.InvalidHostedPlugin);
  if (!parsed.ok) {
    errors.push(...parsed.errors.map((e) => fieldError(ErrorCode.InvalidHostedPlugin, e.path, e.message)));
    return undefined;
  }
  const v = parsed.value;
  if (!isPlainObject(v)) return bad(name, "the value must be a JSON object {image, module, origins}");
  const before = errors.length;
  fieldProblems(name, v, bad);
  if (errors.length > before) return undefined;
  const secrets = ((v["secrets"] ?? []) as unknown as HostedSecret[]).map((s) => (s.role === undefined ? { name: s.name } : { name: s.name, role: s.role }));
  const entry = { image: v["image"] as string, module: v["module"] as string, origins: v["origins"] as string[], secrets };
  // Exactly what encoding writes (no other key, the keys in order, the origins sorted and unique):
  // the text was parsed into `entry`, so encoding it again must give the same text.
  if (entryText(entry.image, entry.module, sortedUnique(entry.origins), entry.secrets) !== text) {
    return bad(name, "the value is not as the operator writes it (keys image, module, origins[, secrets] in that order; origins sorted, unique; secrets by name)");
  }
  return { image: entry.image, module: entry.module, origins: [...entry.origins], ...(secrets.length === 0 ? {} : { secrets }) };
}

/**
 * Decodes the ConfigMap's data key by key: an entry that cannot be read is left out (its plugin
 * is not served: fail closed) and named in `errors`; the others are served. Anything but a map
 * of strings reads as no plugins at all. Never throws.
 */
export function decodeHostedPlugins(data: unknown): DecodedHostedPlugins {
  const plugins = new Map<string, HostedPlugin>();
  const errors: FieldError[] = [];
  try {
    if (data === undefined || data === null) return { plugins, errors };
    if (!isPlainObject(data)) return { plugins, errors: [fieldError(ErrorCode.InvalidHostedPlugin, "", "the ConfigMap data must be a map of plugin names to entries")] };
    const keys = Object.keys(data);
    if (keys.length > MAX_HOSTED_PLUGINS) {
      return { plugins, errors: [fieldError(ErrorCode.TooLarge, "", `the plugin host runs at most ${MAX_HOSTED_PLUGINS} plugins, not ${keys.length}`)] };
    }
    for (const key of keys.sort()) {
      const entry = decodeEntry(key, data[key], errors);
      if (entry !== undefined) plugins.set(key, entry);
    }
    return { plugins, errors };
  } catch {
    return { plugins: new Map(), errors: [fieldError(ErrorCode.InvalidHostedPlugin, "", "the ConfigMap data could not be read")] };
  }
}

/** The egress host of a decoded origin (the inverse of {@link hostOrigin}); undefined for anything else. */
export function originHost(origin: string): EgressHost | undefined {
  if (originProblem(origin) !== undefined) return undefined;
  const m = ORIGIN.exec(origin) as RegExpExecArray;
  return { host: m[1] as string, port: m[2] === undefined ? 443 : Number(m[2]) };
}

/** `host:port` of an origin, as the allow-lists write it; undefined for anything else. */
export function originHostPort(origin: string): string | undefined {
  const h = originHost(origin);
  return h === undefined ? undefined : formatHostPort(h);
}

/** The Role that lets the plugin host mint its plugins' egress tokens; the operator keeps its names. */
export const PLUGIN_HOST_TOKEN_ROLE = "openfief-plugin-host-tokens";

/** The Role {@link PLUGIN_HOST_TOKEN_ROLE}'s rules, as plain JSON. */
export interface TokenRole {
  readonly apiVersion: "rbac.authorization.k8s.io/v1";
  readonly kind: "Role";
  readonly metadata: { readonly name: string; readonly namespace: string; readonly labels: Readonly<Record<string, string>> };
  readonly rules: ReadonlyArray<{ readonly apiGroups: readonly string[]; readonly resources: readonly string[]; readonly verbs: readonly string[]; readonly resourceNames: readonly string[] }>;
}

/**
 * The plugin host's Role for TokenRequests: `create` on `serviceaccounts/token` for exactly the
 * ServiceAccounts of the plugins it runs. RBAC has no `plugin-*`, and a rule without
 * resourceNames would cover every ServiceAccount (the operator's among them), so with no plugin
 * the Role has no rule at all. Sorted; byte-stable.
 */
export function pluginHostTokenRole(plugins: readonly string[], namespace: string, serviceAccountPrefix: string): TokenRole {
  const names = sortedUnique(plugins.filter(isValidPluginName).map((p) => serviceAccountPrefix + p));
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: PLUGIN_HOST_TOKEN_ROLE, namespace, labels: { "app.kubernetes.io/managed-by": "openfief" } },
    rules: names.length === 0 ? [] : [{ apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"], resourceNames: names }],
  };
}

/** The Role that lets the plugin host read its plugins' instance Secrets; the operator keeps its names (docs/adr/0198). */
export const PLUGIN_HOST_SECRET_ROLE = "openfief-plugin-host-secrets";

/**
 * The plugin host's Role for Secrets: `get` on exactly the instance Secrets the running
 * WebAssembly plugins were granted. A rule without resourceNames would cover every Secret in the
 * namespace, so with none granted the Role has no rule at all. Sorted; byte-stable.
 */
export function pluginHostSecretRole(plugins: ReadonlyMap<string, HostedPlugin>, namespace: string): TokenRole {
  const names = sortedUnique([...plugins.values()].flatMap((p) => (p.secrets ?? []).map((s) => s.name)));
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: PLUGIN_HOST_SECRET_ROLE, namespace, labels: { "app.kubernetes.io/managed-by": "openfief" } },
    rules: names.length === 0 ? [] : [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: names }],
  };
}
