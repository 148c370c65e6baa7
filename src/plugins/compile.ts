/**
 * Compiling (D-11): from a plugin, its effective permissions and the cluster's topology to the
 * workload the operator creates. Deterministic: every list is sorted, so the same input always
 * gives the same Workload, whatever order its lists came in.
 */
import ipaddr from "ipaddr.js";
import { canonicalizeEx } from "json-canonicalize";
import {
  CORE_AUDIENCE,
  CORE_TOKEN_PATH,
  EGRESS_AUDIENCE,
  EGRESS_TOKEN_PATH,
  ENV,
  MAX_PLUGIN_NAME,
  NAMESPACE,
  PROXY_PORT,
  SERVICE_ACCOUNT_PREFIX,
  TOKEN_EXPIRATION_SECONDS,
  TOKEN_ROOT,
} from "./constants.js";
import { CONFIG_LIMITS, jsonLimitProblem } from "./caps.js";
import { EffectivePermissions, compareStrings } from "./effective.js";
import { ErrorCode, fail, fieldError, join, ok } from "./errors.js";
import type { FieldError, Result } from "./errors.js";
import { ImageRef } from "./image-ref.js";
import type { PolicyRule } from "./rbac.js";
import { SA_JWKS_CONFIGMAP, SA_JWKS_DIR, SA_JWKS_ITEMS, SA_JWKS_VOLUME, coreSubjectProblems } from "./jwks.js";
import { MountTable, checkSecretMount } from "./mount-path.js";
import type { Capability, EgressHost, JsonValue, SecretMount } from "./types.js";

/** The DNS port. No rule, Service or listener of a plugin may ever use it (D-32). */
export const DNS_PORT = 53;
/** Where the config ConfigMap is mounted: inside TOKEN_ROOT, which no manifest Secret may touch. */
export const CONFIG_DIR = `${TOKEN_ROOT}/openfief-config`;
/** The config file's key in the ConfigMap and its name in {@link CONFIG_DIR}. */
export const CONFIG_FILE = "config.json";
/** The full path of the mounted config file, given to the plugin in OPENFIEF_CONFIG. */
export const CONFIG_PATH = `${CONFIG_DIR}/${CONFIG_FILE}`;
/** The label every plugin pod carries with its instance name; core and proxy pods never carry it. */
export const PLUGIN_LABEL = "openfief.io/plugin";
/** The transport protocol of every rule. */
export const PROTOCOL = "TCP";

/** Pods of one cluster component, reached at a ClusterIP Service and allowed by pod labels. */
export interface ComponentTopology {
  /** The Service's ClusterIP, an IPv4 or IPv6 literal (plugins have no DNS). */
  readonly clusterIP: string;
  /** The Service port. */
  readonly port: number;
  /** The pods' container port: NetworkPolicy is enforced after the Service translates the address. */
  readonly podPort: number;
  /** Labels that select the component's pods in the openfief namespace; never empty. */
  readonly podLabels: Readonly<Record<string, string>>;
}

/**
 * Where the core and the egress proxy are, as addresses, the port a plugin listens on, and who
 * the core is, so a plugin can tell the core's token from any other.
 */
export interface Topology {
  readonly core: ComponentTopology;
  /**
   * The core's ServiceAccount username, `system:serviceaccount:<namespace>:<name>` (such as
   * `system:serviceaccount:openfief:openfief-core`): the subject its tokens carry, given to the
   * plugin in OPENFIEF_CORE_SUBJECT. Never a plugin's own ServiceAccount.
   */
  readonly coreSubject: string;
  /** The egress proxy; its Service port defaults to 4750. */
  readonly proxy: Omit<ComponentTopology, "port"> & { readonly port?: number };
  /** The port the plugin serves its contract on. */
  readonly pluginPort: number;
}

/** A projected ServiceAccount token: one audience, one file, refreshed by the kubelet. */
export interface ProjectedToken {
  /** The pod volume's name. */
  readonly volumeName: string;
  readonly audience: string;
  readonly expirationSeconds: number;
  /** The token file's full path. */
  readonly path: string;
  /** The directory the volume is mounted at. */
  readonly mountDir: string;
  /** The file's name inside the volume. */
  readonly fileName: string;
}

/**
 * A granted Secret, mounted read-only where the manifest asks: the instance's own Secret
 * (`secretName`) for the manifest's role (`role`, the same as `secretName` for a grant written
 * before roles; docs/adr/0160).
 */
export interface SecretVolume {
  readonly volumeName: string;
  readonly secretName: string;
  readonly role: string;
  readonly mountPath: string;
  readonly readOnly: true;
}

/** The plugin's config, as canonical JSON in a ConfigMap mounted read-only. */
export interface ConfigFile {
  readonly configMapName: string;
  readonly volumeName: string;
  /** RFC 8785 canonical JSON; `{}` when the plugin has no config. */
  readonly json: string;
  readonly mountDir: string;
  readonly fileName: string;
  readonly path: string;
}

/**
 * The cluster's ServiceAccount issuer and public keys: the ConfigMap `openfief-sa-jwks`, mounted
 * read-only as a whole directory (never subPath) so the kubelet's updates reach a rotated key.
 */
export interface JwksMount {
  readonly configMapName: string;
  readonly volumeName: string;
  /** Given to the plugin in OPENFIEF_SA_JWKS_DIR. */
  readonly mountDir: string;
  /** The ConfigMap keys mounted, each as a file of the same name; sorted. */
  readonly items: readonly string[];
  readonly readOnly: true;
}

export interface EnvVar {
  readonly name: string;
  readonly value: string;
}

/** One NetworkPolicy rule: pods with these labels (and no plugin label), one TCP port. */
export interface NetworkRule {
  /** Sorted by key. */
  readonly podLabels: Readonly<Record<string, string>>;
  readonly port: number;
  readonly protocol: typeof PROTOCOL;
}

interface WorkloadData {
  name: string;
  image: ImageRef;
  labels: Record<string, string>;
  listenPort: number;
  tokens: ProjectedToken[];
  secrets: SecretVolume[];
  config: ConfigFile;
  coreSubject: string;
  jwks: JwksMount;
  env: EnvVar[];
  ingress: NetworkRule[];
  egress: NetworkRule[];
  allowList: EgressHost[];
  capabilities: Capability[];
  dataTiers: string[];
  rbac: PolicyRule[];
}

let construct: (d: WorkloadData) => Workload;

const copyRule = (r: NetworkRule): NetworkRule => ({ podLabels: { ...r.podLabels }, port: r.port, protocol: r.protocol });

/**
 * Everything the operator creates for one plugin instance. Built only by {@link compile}; its
 * accessors return copies, and every list is sorted.
 */
export class Workload {
  readonly #d: WorkloadData;

  private constructor(d: WorkloadData) {
    this.#d = d;
  }

  static {
    construct = (d) => new Workload(d);
  }

  /** The plugin instance's name. */
  get name(): string {
    return this.#d.name;
  }
  /** The instance name given to the plugin in OPENFIEF_INSTANCE (the same as {@link name}). */
  get instance(): string {
    return this.#d.name;
  }
  get namespace(): string {
    return NAMESPACE;
  }
  /** `plugin-<name>`: the plugin's identity. It has no Role: plugins never talk to the Kubernetes API. */
  get serviceAccountName(): string {
    return SERVICE_ACCOUNT_PREFIX + this.#d.name;
  }
  /** Always false: only the projected, audience-bound tokens are mounted. */
  get automountServiceAccountToken(): false {
    return false;
  }
  /** The image to run, pinned by digest. */
  get image(): ImageRef {
    return this.#d.image;
  }
  /** The labels of every object and of the pod, sorted by key. */
  get labels(): Record<string, string> {
    return { ...this.#d.labels };
  }
  /** The port the plugin listens on. */
  get listenPort(): number {
    return this.#d.listenPort;
  }
  /** The core token, and the egress token only when some egress host is granted; sorted by path. */
  get tokens(): ProjectedToken[] {
    return this.#d.tokens.map((t) => ({ ...t }));
  }
  /** The egress token, or undefined when no egress host is granted. */
  get egressToken(): ProjectedToken | undefined {
    const t = this.#d.tokens.find((x) => x.audience === EGRESS_AUDIENCE);
    return t === undefined ? undefined : { ...t };
  }
  /** Granted Secrets, read-only, sorted by Secret name then mount path. */
  get secrets(): SecretVolume[] {
    return this.#d.secrets.map((s) => ({ ...s }));
  }
  get config(): ConfigFile {
    return { ...this.#d.config };
  }
  /** The core's ServiceAccount username, given to the plugin in OPENFIEF_CORE_SUBJECT. */
  get coreSubject(): string {
    return this.#d.coreSubject;
  }
  /** The mounted `openfief-sa-jwks` ConfigMap the SDK verifies the core's token with (D-59). */
  get jwks(): JwksMount {
    return { ...this.#d.jwks, items: [...this.#d.jwks.items] };
  }
  /** The container's environment, sorted by name. */
  get env(): EnvVar[] {
    return this.#d.env.map((e) => ({ ...e }));
  }
  /** Who may connect to the plugin: the core's pods, on the plugin port. */
  get ingress(): NetworkRule[] {
    return this.#d.ingress.map(copyRule);
  }
  /** Where the plugin may connect: the core's pods, and the proxy's pods only with egress. Never DNS. */
  get egress(): NetworkRule[] {
    return this.#d.egress.map(copyRule);
  }
  /** The plugin's egress allow-list: exactly its effective egress hosts, sorted. */
  get allowList(): EgressHost[] {
    return this.#d.allowList.map((h) => ({ host: h.host, port: h.port }));
  }
  /** Whether some egress host is granted. */
  get hasEgress(): boolean {
    return this.#d.allowList.length > 0;
  }
  /** Granted capabilities, sorted. */
  get capabilities(): Capability[] {
    return [...this.#d.capabilities];
  }
  /** Granted data tiers, sorted; carried but enforced nowhere yet (P-33). */
  get dataTiers(): string[] {
    return [...this.#d.dataTiers];
  }
  /** The effective PolicyRules, sorted: the ClusterRole `plugin-<name>-scope` holds them (none: no ClusterRole). */
  get rbac(): PolicyRule[] {
    return this.#d.rbac.map((r) => ({ ...r }));
  }

  /** Plain JSON form, with the image as its reference string; byte-stable for equal workloads. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      namespace: this.namespace,
      serviceAccountName: this.serviceAccountName,
      automountServiceAccountToken: false,
      image: this.image.toString(),
      labels: this.labels,
      listenPort: this.listenPort,
      tokens: this.tokens,
      secrets: this.secrets,
      config: this.config,
      coreSubject: this.coreSubject,
      jwks: this.jwks,
      env: this.env,
      ingress: this.ingress,
      egress: this.egress,
      allowList: this.allowList,
      capabilities: this.capabilities,
      dataTiers: this.dataTiers,
      ...(this.#d.rbac.length > 0 ? { rbac: this.rbac } : {}),
    };
  }
}

const PLUGIN_NAME = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function isIPv4(s: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(s);
}

function isIPv6(s: string): boolean {
  // No zone (`%eth0`): it names an interface of one node, not a cluster address.
  return /^[0-9A-Fa-f:.]+$/.test(s) && ipaddr.IPv6.isValid(s);
}

/** `host:port`, with an IPv6 host in brackets. */
export function hostPort(ip: string, port: number): string {
  return isIPv6(ip) ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function checkAddress(value: unknown, path: string, errors: FieldError[]): void {
  if (typeof value !== "string" || !(isIPv4(value) || isIPv6(value))) {
    errors.push(fieldError(ErrorCode.InvalidTopology, path, "must be an IPv4 or IPv6 address (plugins have no DNS, so topology takes addresses, not names)"));
    return;
  }
  if (ipaddr.parse(value).range() === "unspecified") {
    errors.push(fieldError(ErrorCode.InvalidTopology, path, "must not be the unspecified address"));
  }
}

function checkPort(value: unknown, path: string, errors: FieldError[]): void {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 65535) {
    errors.push(fieldError(ErrorCode.InvalidTopology, path, "must be a port from 1 to 65535"));
  } else if (value === DNS_PORT) {
    errors.push(fieldError(ErrorCode.InvalidTopology, path, "must not be 53: no plugin rule may ever allow DNS"));
  }
}

function isLabelKey(key: string): boolean {
  const slash = key.indexOf("/");
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) return false;
  return name.length >= 1 && name.length <= 63 && LABEL_NAME.test(name);
}

function checkLabels(value: unknown, path: string, errors: FieldError[]): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    errors.push(fieldError(ErrorCode.InvalidTopology, path, "must be a map of pod labels"));
    return;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  // An empty selector would match every pod in the namespace, plugins included.
  if (entries.length === 0) errors.push(fieldError(ErrorCode.InvalidTopology, path, "must select pods by at least one label"));
  for (const [k, v] of entries) {
    const p = join(path, k);
    if (!isLabelKey(k)) errors.push(fieldError(ErrorCode.InvalidTopology, p, "is not a valid label key"));
    else if (k === PLUGIN_LABEL) errors.push(fieldError(ErrorCode.InvalidTopology, p, `must not be ${PLUGIN_LABEL}: only plugin pods carry it`));
    if (typeof v !== "string" || v.length > 63 || (v !== "" && !LABEL_NAME.test(v))) {
      errors.push(fieldError(ErrorCode.InvalidTopology, p, "is not a valid label value"));
    }
  }
}

function sortedRecord(r: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(r).sort(compareStrings)) out[k] = r[k] as string;
  return out;
}

/** Checks a topology, returning every problem at once (InvalidTopology, with its field path). Never throws. */
export function validateTopology(topology: Topology, path = "topology"): FieldError[] {
  try {
    return topologyProblems(topology, path);
  } catch {
    return [fieldError(ErrorCode.InvalidTopology, path, "the topology could not be read")];
  }
}

function topologyProblems(topology: Topology, path: string): FieldError[] {
  const errors: FieldError[] = [];
  const t = topology as unknown as Record<string, unknown> | null;
  if (typeof t !== "object" || t === null) return [fieldError(ErrorCode.InvalidTopology, path, "must be an object")];
  for (const part of ["core", "proxy"] as const) {
    const c = t[part] as Record<string, unknown> | null | undefined;
    const p = join(path, part);
    if (typeof c !== "object" || c === null) {
      errors.push(fieldError(ErrorCode.InvalidTopology, p, "must be an object"));
      continue;
    }
    checkAddress(c["clusterIP"], join(p, "clusterIP"), errors);
    if (part === "core" || c["port"] !== undefined) checkPort(c["port"], join(p, "port"), errors);
    checkPort(c["podPort"], join(p, "podPort"), errors);
    checkLabels(c["podLabels"], join(p, "podLabels"), errors);
  }
  checkPort(t["pluginPort"], join(path, "pluginPort"), errors);
  errors.push(...coreSubjectProblems(t["coreSubject"], join(path, "coreSubject")));
  return errors;
}

// Validation refuses these already; checked again, with the very checks manifest validation runs,
// so that no Workload can hold a mount that hides a token, the config, or another Secret.
function checkMounts(secrets: readonly SecretMount[]): FieldError[] {
  const table = new MountTable();
  return secrets.flatMap((s, i) => checkSecretMount(table, s.mountPath, join(join("secrets", i), "mountPath")));
}

/** The labels of every object and pod of a plugin instance. */
export function pluginLabels(name: string): Record<string, string> {
  return sortedRecord({
    "app.kubernetes.io/managed-by": "openfief",
    "app.kubernetes.io/name": name,
    [PLUGIN_LABEL]: name,
  });
}

function projected(volumeName: string, audience: string, path: string): ProjectedToken {
  const slash = path.lastIndexOf("/");
  return {
    volumeName,
    audience,
    expirationSeconds: TOKEN_EXPIRATION_SECONDS,
    path,
    mountDir: path.slice(0, slash),
    fileName: path.slice(slash + 1),
  };
}

/** What to compile: a named instance, its image pinned by digest, and its config. */
export interface CompileInput {
  readonly name: string;
  readonly image: ImageRef;
  readonly config?: JsonValue;
}

/**
 * Compiles a plugin instance and its effective permissions into its {@link Workload}. Fails with
 * InvalidTopology (every problem at once) for a bad topology, InvalidName for a bad instance name,
 * InvalidJSON for a config that is not JSON (TooLarge over the caps), the mount-path codes for a
 * Secret mount that manifest validation refuses (checked again with the same code), and
 * InvalidType for permissions or an image not made by the model. Never throws.
 */
export function compile(plugin: CompileInput, e: EffectivePermissions, topology: Topology): Result<Workload> {
  try {
    return compileChecked(plugin, e, topology);
  } catch {
    return fail(fieldError(ErrorCode.InvalidType, "", "the plugin, its permissions or the topology could not be read"));
  }
}

/** The config as RFC 8785 JSON (`{}` when absent), or the problem with it. */
function canonicalConfig(config: JsonValue | undefined): { json: string } | FieldError {
  if (config === undefined) return { json: "{}" };
  const excess = jsonLimitProblem(config, "config", "the config", CONFIG_LIMITS);
  if (excess !== undefined) return excess;
  try {
    return { json: canonicalizeEx(config, { strictUndefined: true }) };
  } catch (_err) {
    return fieldError(ErrorCode.InvalidJSON, "config", "must be a JSON value");
  }
}

/** Every problem with what compile is given, before it reads any of it further. */
function inputProblems(plugin: CompileInput, e: EffectivePermissions, topology: Topology): FieldError[] {
  // What an adapter hands in is checked first: only effective() makes permissions, only
  // parseImageRef makes an image.
  if (typeof plugin !== "object" || plugin === null) return [fieldError(ErrorCode.InvalidType, "", "the plugin must be an object {name, image, config?}")];
  if (!(e instanceof EffectivePermissions)) return [fieldError(ErrorCode.InvalidType, "permissions", "the permissions must come from effective()")];
  const errors: FieldError[] = [];
  if (!(plugin.image instanceof ImageRef)) errors.push(fieldError(ErrorCode.InvalidType, "image", "the image must come from parseImageRef()"));
  if (typeof plugin.name !== "string" || plugin.name.length > MAX_PLUGIN_NAME || !PLUGIN_NAME.test(plugin.name)) {
    errors.push(fieldError(ErrorCode.InvalidName, "name", `must be a DNS label of at most ${MAX_PLUGIN_NAME} characters that starts with a letter`));
  }
  errors.push(...validateTopology(topology));
  errors.push(...checkMounts(e.secrets));
  return errors;
}

function compileChecked(plugin: CompileInput, e: EffectivePermissions, topology: Topology): Result<Workload> {
  const errors = inputProblems(plugin, e, topology);
  const canonical = typeof plugin === "object" && plugin !== null ? canonicalConfig(plugin.config) : { json: "{}" };
  if (!("json" in canonical)) errors.push(canonical);
  if (errors.length > 0 || !("json" in canonical)) return fail(errors);
  const configJSON = canonical.json;

  const name = plugin.name;
  const allowList = e.egress;
  const hasEgress = allowList.length > 0;
  const core = topology.core;
  const proxy = topology.proxy;
  const proxyPort = proxy.port ?? PROXY_PORT;

  const tokens = [projected("openfief-token", CORE_AUDIENCE, CORE_TOKEN_PATH)];
  if (hasEgress) tokens.push(projected("openfief-egress-token", EGRESS_AUDIENCE, EGRESS_TOKEN_PATH));
  tokens.sort((a, b) => compareStrings(a.path, b.path));

  // Names by position: Secret names may be longer than a volume name may be. e.secrets is sorted.
  const secrets: SecretVolume[] = e.secrets.map((s, i) => ({
    volumeName: `secret-${i}`,
    secretName: s.name,
    role: s.role ?? s.name,
    mountPath: s.mountPath,
    readOnly: true,
  }));

  const config: ConfigFile = {
    configMapName: `${SERVICE_ACCOUNT_PREFIX}${name}-config`,
    volumeName: "openfief-config",
    json: configJSON,
    mountDir: CONFIG_DIR,
    fileName: CONFIG_FILE,
    path: CONFIG_PATH,
  };

  const jwks: JwksMount = {
    configMapName: SA_JWKS_CONFIGMAP,
    volumeName: SA_JWKS_VOLUME,
    mountDir: SA_JWKS_DIR,
    items: [...SA_JWKS_ITEMS].sort(compareStrings),
    readOnly: true,
  };

  const env: EnvVar[] = [
    { name: ENV.config, value: CONFIG_PATH },
    { name: ENV.coreAddress, value: hostPort(core.clusterIP, core.port) },
    { name: ENV.coreSubject, value: topology.coreSubject },
    { name: ENV.instance, value: name },
    { name: ENV.listenPort, value: String(topology.pluginPort) },
    { name: ENV.saJwksDir, value: SA_JWKS_DIR },
    { name: ENV.tokenFile, value: CORE_TOKEN_PATH },
  ];
  if (hasEgress) {
    env.push(
      { name: ENV.egressTokenFile, value: EGRESS_TOKEN_PATH },
      // No credentials here: the SDK puts the egress token, read fresh, into the URL per request.
      { name: ENV.httpsProxy, value: `http://${hostPort(proxy.clusterIP, proxyPort)}` },
      { name: ENV.noProxy, value: core.clusterIP },
    );
  }
  env.sort((a, b) => compareStrings(a.name, b.name));

  const rule = (labels: Readonly<Record<string, string>>, port: number): NetworkRule => ({
    podLabels: sortedRecord(labels),
    port,
    protocol: PROTOCOL,
  });
  const ingress = [rule(core.podLabels, topology.pluginPort)];
  const egress = [rule(core.podLabels, core.podPort)];
  if (hasEgress) egress.push(rule(proxy.podLabels, proxy.podPort));
  const ruleKey = (r: NetworkRule): string => `${String(r.port).padStart(5, "0")}\u0000${JSON.stringify(r.podLabels)}`;
  egress.sort((a, b) => compareStrings(ruleKey(a), ruleKey(b)));

  return ok(
    construct({
      name,
      image: plugin.image,
      labels: pluginLabels(name),
      listenPort: topology.pluginPort,
      tokens,
      secrets,
      config,
      coreSubject: topology.coreSubject,
      jwks,
      env,
      ingress,
      egress,
      allowList,
      capabilities: e.capabilities,
      dataTiers: e.dataTiers,
      rbac: e.rbac,
    }),
  );
}
