/**
 * The Kubernetes target: applies each plugin's objects with server-side apply and publishes the
 * egress allow-lists, in the `openfief` namespace.
 *
 * Field managers:
 * - every plugin object is applied by ONE stable manager, `openfief-operator` (Flux's habit), so
 *   the API server removes a field the operator stops sending;
 * - each plugin's key in `openfief-egress-allowlist` is applied by its own manager,
 *   `openfief-allowlist-<plugin>`, sending only that key, so one plugin's reconcile never touches
 *   another's entry (seed 000, "Handing allow-lists to the egress proxy"). Removing a key is an
 *   apply of an empty ConfigMap by that key's manager: the API server drops what it owned.
 *
 * Conflicts (deliberate): every apply passes `force=true`. The operator is the only authority over
 * a plugin's workload and allow-list entry: a field someone changed by hand (for example a wider
 * NetworkPolicy from `kubectl edit`) must be taken back, not left to run with permissions the
 * owner never approved (fail closed). Forcing transfers ownership of the conflicting fields to the
 * operator; the apply's record carries the manager so the event log shows who applied what.
 *
 * Ownership: every object carries an owner reference to its Plugin (uid read from the cluster),
 * so deleting a Plugin garbage-collects its objects, and the labels `openfief.io/plugin=<name>` and
 * `app.kubernetes.io/managed-by=openfief`, so objects no longer desired can be found and pruned.
 */
import { CustomObjectsApi, KubernetesObjectApi, PatchStrategy } from "@kubernetes/client-node";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { ALLOWLIST_CONFIGMAP, decodeHostedPlugins, PLUGIN_HOST_CONFIGMAP, pluginHostSecretRole, pluginHostTokenRole, SERVICE_ACCOUNT_PREFIX, API_GROUP, API_VERSION, isValidPluginName, NAMESPACE, PLUGIN_LABEL, toClientNodeModel, validateSecretName } from "../plugins/index.js";
import type { UninstalledResource } from "../events/index.js";
import type { KubeObject, Target } from "../reconciler/index.js";
import { apiError, httpStatus, KubeError, KubeErrorCode } from "./errors.js";

/** The field manager of every plugin object and of the allow-list ConfigMap's own labels. */
export const OPERATOR_FIELD_MANAGER = "openfief-operator";
/** The label naming the plugin an object belongs to: the one its pods already carry. */
export { PLUGIN_LABEL };
/** The label marking objects OpenFief manages. */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** The value of {@link MANAGED_BY_LABEL}. */
export const MANAGED_BY = "openfief";

/** The field manager of one plugin's key in the allow-list ConfigMap. */
export function allowListFieldManager(plugin: string): string {
  return `openfief-allowlist-${plugin}`;
}

/** The field manager of one plugin's key in the plugin-host ConfigMap (ADR 0080). */
export function pluginHostFieldManager(plugin: string): string {
  return `openfief-plugin-host-${plugin}`;
}

/** The kinds a plugin's workload consists of (seed 000, BuildObjects); pruning looks at these. */
export const WORKLOAD_KINDS: ReadonlyArray<{ readonly apiVersion: string; readonly kind: string }> = [
  { apiVersion: "v1", kind: "ServiceAccount" },
  { apiVersion: "v1", kind: "ConfigMap" },
  { apiVersion: "v1", kind: "Service" },
  { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy" },
  { apiVersion: "apps/v1", kind: "Deployment" },
];

/**
 * The cluster-scoped kinds a plugin may have (a view's `plugin-<name>-scope` ClusterRole and its
 * binding, issue 15). They carry no namespace and no owner reference (an owner in a namespace
 * cannot own a cluster-scoped object), so they are pruned by their labels alone.
 */
export const CLUSTER_KINDS: ReadonlyArray<{ readonly apiVersion: string; readonly kind: string }> = [
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole" },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding" },
];

function clusterScoped(k: { readonly apiVersion: string; readonly kind: string }): boolean {
  return CLUSTER_KINDS.some((c) => c.apiVersion === k.apiVersion && c.kind === k.kind);
}

/** One change the target made, for the caller to record as an event. */
export interface ApplyRecord {
  readonly action: "applied" | "pruned" | "allowlist-key-applied" | "allowlist-key-removed" | "plugin-host-key-applied" | "plugin-host-key-removed";
  readonly plugin: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly fieldManager: string;
  /** For allow-list and plugin-host records: the ConfigMap key. */
  readonly key?: string;
  /** The object's resourceVersion after the change, when the server returned one. */
  readonly resourceVersion?: string;
}

/** Options of {@link KubernetesTarget}. */
export interface KubernetesTargetOptions {
  readonly namespace?: string;
  /** Called with every record as it happens (the operator appends them as events). */
  readonly onRecord?: (record: ApplyRecord) => void;
}


/** Applies plugins' desired objects to a cluster; see the module comment. */
export class KubernetesTarget implements Target {
  readonly name = "kubernetes";
  readonly #objects: KubernetesObjectApi;
  readonly #custom: CustomObjectsApi;
  readonly #namespace: string;
  readonly #onRecord: (record: ApplyRecord) => void;

  constructor(kc: KubeConfig, options: KubernetesTargetOptions = {}) {
    this.#objects = KubernetesObjectApi.makeApiClient(kc);
    this.#custom = kc.makeApiClient(CustomObjectsApi);
    this.#namespace = options.namespace ?? NAMESPACE;
    this.#onRecord = options.onRecord ?? (() => {});
  }

  /** Applies exactly `objects` for `plugin` and prunes the plugin's objects not among them. */
  async applyPlugin(plugin: string, objects: readonly KubeObject[]): Promise<void> {
    await this.applyPluginRecorded(plugin, objects);
  }

  /** Deletes every object of the plugin. Its allow-list key goes with the next {@link applyAllowLists}. */
  async removePlugin(plugin: string): Promise<void> {
    await this.removePluginRecorded(plugin);
  }

  /** Publishes the allow-lists; see {@link applyAllowListsRecorded}. */
  async applyAllowLists(data: Readonly<Record<string, string>>): Promise<void> {
    await this.applyAllowListsRecorded(data);
  }

  /** Publishes the running WebAssembly plugins; see {@link applyPluginHostRecorded}. */
  async applyPluginHost(data: Readonly<Record<string, string>>): Promise<void> {
    await this.applyPluginHostRecorded(data);
  }

  /**
   * Deletes these Secrets of the namespace (an uninstall's purge, docs/adr/0162); a Secret not
   * found is `absent`. The API's 404 is the only failure that is not an error.
   */
  async removeSecrets(names: readonly string[]): Promise<{ removed: string[]; absent: string[] }> {
    const removed: string[] = [];
    const absent: string[] = [];
    for (const name of names) {
      if (validateSecretName(name, "name").length > 0) throw new KubeError(KubeErrorCode.InvalidObject, `Secret ${JSON.stringify(name.slice(0, 64))}: not a Secret name`);
      try {
        await this.#objects.delete({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace: this.#namespace } });
        removed.push(name);
      } catch (err) {
        if (httpStatus(err) !== 404) throw apiError(`delete Secret ${this.#namespace}/${name}`, err);
        absent.push(name);
      }
    }
    return { removed, absent };
  }

  /**
   * Deletes the plugin's Plugin and PluginGrant resources (an uninstall's purge, docs/adr/0152), so
   * the source does not observe them back and the plugin stays uninstalled; one not found is
   * `absent`. The Plugin goes last: it owns the objects, which the API server then collects.
   */
  async removeResources(plugin: string): Promise<UninstalledResource[]> {
    checkPluginName(plugin);
    const out: UninstalledResource[] = [];
    for (const [kind, plural] of [["PluginGrant", "plugingrants"], ["Plugin", "plugins"]] as const) {
      try {
        await this.#custom.deleteNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: this.#namespace, plural, name: plugin });
        out.push({ kind, outcome: "removed" });
      } catch (err) {
        if (httpStatus(err) !== 404) throw apiError(`delete ${kind} ${this.#namespace}/${plugin}`, err);
        out.push({ kind, outcome: "absent" });
      }
    }
    return out;
  }

  /** {@link applyPlugin}, returning what it changed. */
  async applyPluginRecorded(plugin: string, objects: readonly KubeObject[]): Promise<ApplyRecord[]> {
    checkPluginName(plugin);
    const owner = await this.#pluginOwner(plugin);
    const records: ApplyRecord[] = [];
    const desired = new Set<string>();
    for (const obj of objects) {
      const cluster = clusterScoped(obj);
      const namespace = cluster ? "" : obj.metadata.namespace ?? this.#namespace;
      if ((cluster ? obj.metadata.namespace !== undefined : namespace !== this.#namespace) || obj.metadata.name === "") {
        throw new KubeError(KubeErrorCode.InvalidObject, cluster
          ? `${obj.kind} ${obj.metadata.name}: a cluster-scoped object has no namespace`
          : `${obj.kind} ${obj.metadata.name}: objects of a plugin live in namespace ${this.#namespace}`);
      }
      desired.add(objectKey(obj.apiVersion, obj.kind, obj.metadata.name));
      const body = cluster ? withLabels(obj, plugin) : withOwnership(obj, plugin, namespace, owner);
      let applied: KubernetesObject;
      try {
        applied = await this.#objects.patch(body, undefined, undefined, OPERATOR_FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
      } catch (err) {
        throw apiError(`apply ${obj.kind} ${cluster ? "" : `${namespace}/`}${obj.metadata.name}`, err);
      }
      records.push(this.#record({
        action: "applied",
        plugin,
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        namespace,
        name: obj.metadata.name,
        fieldManager: OPERATOR_FIELD_MANAGER,
        ...rv(applied),
      }));
    }
    records.push(...(await this.#prune(plugin, desired, objects)));
    return records;
  }

  /** {@link removePlugin}, returning what it deleted. */
  async removePluginRecorded(plugin: string): Promise<ApplyRecord[]> {
    checkPluginName(plugin);
    return this.#prune(plugin, new Set(), []);
  }

  /**
   * Makes the allow-list ConfigMap hold exactly `data`'s keys: each present key applied by its
   * plugin's own manager; each key the ConfigMap holds but `data` lacks removed by applying an
   * empty ConfigMap with that key's manager.
   */
  async applyAllowListsRecorded(data: Readonly<Record<string, string>>): Promise<ApplyRecord[]> {
    return this.#publishKeyed(ALLOWLIST_CONFIGMAP, data, allowListFieldManager, "allowlist-key-applied", "allowlist-key-removed");
  }

  /**
   * Makes the plugin-host ConfigMap hold exactly `data`'s keys, each applied (or removed) by its
   * plugin's own manager, as {@link applyAllowListsRecorded} does for the allow-lists.
   */
  async applyPluginHostRecorded(data: Readonly<Record<string, string>>): Promise<ApplyRecord[]> {
    const records = await this.#publishKeyed(PLUGIN_HOST_CONFIGMAP, data, pluginHostFieldManager, "plugin-host-key-applied", "plugin-host-key-removed");
    // Then the host may mint tokens for exactly these plugins' ServiceAccounts (none: no rule).
    // A removed plugin's name leaves the Role after its key left the ConfigMap, so the host has
    // stopped serving it before it loses the right to call out for it.
    const role = pluginHostTokenRole(Object.keys(data), this.#namespace, SERVICE_ACCOUNT_PREFIX);
    await this.#apply(role as unknown as KubernetesObject, OPERATOR_FIELD_MANAGER);
    // And read exactly the instance Secrets those plugins were granted (none: no rule; docs/adr/0198).
    const secrets = pluginHostSecretRole(decodeHostedPlugins(data).plugins, this.#namespace);
    await this.#apply(secrets as unknown as KubernetesObject, OPERATOR_FIELD_MANAGER);
    return records;
  }

  async #publishKeyed(
    name: string,
    data: Readonly<Record<string, string>>,
    managerOf: (plugin: string) => string,
    applied: ApplyRecord["action"],
    removed: ApplyRecord["action"],
  ): Promise<ApplyRecord[]> {
    const records: ApplyRecord[] = [];
    const meta = { name, namespace: this.#namespace };
    // The ConfigMap's own labels, under the operator's manager; also creates it when absent.
    await this.#apply({ apiVersion: "v1", kind: "ConfigMap", metadata: { ...meta, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } } }, OPERATOR_FIELD_MANAGER);
    for (const key of Object.keys(data).sort()) {
      checkPluginName(key);
      const manager = managerOf(key);
      const configMap: ConfigMapBody = { apiVersion: "v1", kind: "ConfigMap", metadata: meta, data: { [key]: data[key] ?? "" } };
      const result = await this.#apply(configMap, manager);
      records.push(this.#record({ action: applied, plugin: key, apiVersion: "v1", kind: "ConfigMap", ...meta, fieldManager: manager, key, ...rv(result) }));
    }
    const current = await this.#readKeys(name);
    for (const key of current) {
      if (Object.hasOwn(data, key) || !isValidPluginName(key)) continue;
      const manager = managerOf(key);
      const result = await this.#apply({ apiVersion: "v1", kind: "ConfigMap", metadata: meta }, manager);
      records.push(this.#record({ action: removed, plugin: key, apiVersion: "v1", kind: "ConfigMap", ...meta, fieldManager: manager, key, ...rv(result) }));
    }
    return records;
  }

  /** The plugins that have objects labelled as theirs in the namespace, sorted. */
  async listPlugins(): Promise<string[]> {
    const names = new Set<string>();
    for (const { apiVersion, kind } of WORKLOAD_KINDS) {
      for (const obj of await this.#listManaged(apiVersion, kind, PLUGIN_LABEL)) {
        const name = obj.metadata?.labels?.[PLUGIN_LABEL];
        if (name !== undefined && isValidPluginName(name)) names.add(name);
      }
    }
    return [...names].sort();
  }

  async #prune(plugin: string, desired: ReadonlySet<string>, objects: readonly KubeObject[]): Promise<ApplyRecord[]> {
    const kinds = new Map<string, { apiVersion: string; kind: string }>();
    for (const k of [...WORKLOAD_KINDS, ...CLUSTER_KINDS, ...objects]) kinds.set(`${k.apiVersion}|${k.kind}`, { apiVersion: k.apiVersion, kind: k.kind });
    const records: ApplyRecord[] = [];
    for (const k of kinds.values()) {
      const { apiVersion, kind } = k;
      const namespace = clusterScoped(k) ? undefined : this.#namespace;
      const existing = await this.#listManaged(apiVersion, kind, `${PLUGIN_LABEL}=${plugin},${MANAGED_BY_LABEL}=${MANAGED_BY}`, namespace);
      for (const obj of existing) {
        const name = obj.metadata?.name;
        if (name === undefined || desired.has(objectKey(apiVersion, kind, name))) continue;
        try {
          await this.#objects.delete({ apiVersion, kind, metadata: namespace === undefined ? { name } : { name, namespace } }, undefined, undefined, undefined, undefined, "Background");
        } catch (err) {
          if (httpStatus(err) !== 404) throw apiError(`prune ${kind} ${namespace === undefined ? "" : `${namespace}/`}${name}`, err);
        }
        records.push(this.#record({ action: "pruned", plugin, apiVersion, kind, namespace: namespace ?? "", name, fieldManager: OPERATOR_FIELD_MANAGER }));
      }
    }
    return records;
  }

  /** Objects of a kind carrying the labels, in the namespace (or cluster-wide, for a cluster-scoped kind). */
  async #listManaged(apiVersion: string, kind: string, labelSelector: string, namespace: string | undefined = this.#namespace): Promise<KubernetesObject[]> {
    try {
      const list = await this.#objects.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, labelSelector);
      return list.items;
    } catch (err) {
      throw apiError(`list ${kind}${namespace === undefined ? "" : ` in ${namespace}`}`, err);
    }
  }

  async #apply(obj: KubernetesObject, manager: string): Promise<KubernetesObject> {
    try {
      return await this.#objects.patch(obj, undefined, undefined, manager, true, PatchStrategy.ServerSideApply);
    } catch (err) {
      throw apiError(`apply ${obj.kind ?? ""} ${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""} as ${manager}`, err);
    }
  }

  async #readKeys(name: string): Promise<string[]> {
    try {
      const cm = (await this.#objects.read({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: this.#namespace } })) as KubernetesObject & {
        data?: Record<string, string>;
      };
      return Object.keys(cm.data ?? {}).sort();
    } catch (err) {
      if (httpStatus(err) === 404) return [];
      throw apiError(`read ConfigMap ${this.#namespace}/${name}`, err);
    }
  }

  async #pluginOwner(plugin: string): Promise<OwnerReference> {
    let obj: unknown;
    try {
      obj = await this.#custom.getNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: this.#namespace, plural: "plugins", name: plugin });
    } catch (err) {
      if (httpStatus(err) === 404) throw new KubeError(KubeErrorCode.PluginNotFound, `Plugin ${this.#namespace}/${plugin} not found: its objects would have no owner`, 404);
      throw apiError(`read Plugin ${this.#namespace}/${plugin}`, err);
    }
    const uid = (obj as { metadata?: { uid?: unknown } }).metadata?.uid;
    if (typeof uid !== "string" || uid === "") throw new KubeError(KubeErrorCode.PluginNotFound, `Plugin ${this.#namespace}/${plugin} has no uid`);
    return { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: "Plugin", name: plugin, uid, controller: true, blockOwnerDeletion: true };
  }

  #record(r: ApplyRecord): ApplyRecord {
    this.#onRecord(r);
    return r;
  }
}

type ConfigMapBody = KubernetesObject & { data?: Record<string, string> };

interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly controller: boolean;
  readonly blockOwnerDeletion: boolean;
}

function checkPluginName(plugin: string): void {
  if (!isValidPluginName(plugin)) throw new KubeError(KubeErrorCode.InvalidPluginName, `invalid plugin name ${JSON.stringify(plugin)}`);
}

function objectKey(apiVersion: string, kind: string, name: string): string {
  return `${apiVersion}|${kind}|${name}`;
}

function rv(obj: KubernetesObject | undefined): { resourceVersion?: string } {
  const v = obj?.metadata?.resourceVersion;
  return typeof v === "string" ? { resourceVersion: v } : {};
}

/**
 * The object as applied: namespace set, our labels added, the Plugin as its controlling owner, in
 * client-node's model form. `KubernetesObjectApi.patch` serializes through the typed models, which
 * name a NetworkPolicy ingress rule's `from` as `_from` and silently drop a plain `from`: applied
 * as Kubernetes JSON, the rule would lose its sources and admit every pod.
 */
/** A cluster-scoped object as applied: the plugin's labels, no namespace, no owner. */
function withLabels(obj: KubeObject, plugin: string): KubernetesObject {
  const copy = toClientNodeModel(obj) as unknown as KubernetesObject & { metadata: Record<string, unknown> };
  const labels = { ...((copy.metadata["labels"] as Record<string, string> | undefined) ?? {}), [PLUGIN_LABEL]: plugin, [MANAGED_BY_LABEL]: MANAGED_BY };
  const { namespace: _n, ownerReferences: _o, resourceVersion: _r, uid: _u, managedFields: _m, creationTimestamp: _c, generation: _g, ...rest } = copy.metadata;
  copy.metadata = { ...rest, labels };
  return copy;
}

function withOwnership(obj: KubeObject, plugin: string, namespace: string, owner: OwnerReference): KubernetesObject {
  const copy = toClientNodeModel(obj) as unknown as KubernetesObject & { metadata: Record<string, unknown> };
  const labels = { ...((copy.metadata["labels"] as Record<string, string> | undefined) ?? {}), [PLUGIN_LABEL]: plugin, [MANAGED_BY_LABEL]: MANAGED_BY };
  copy.metadata = { ...copy.metadata, namespace, labels, ownerReferences: [owner] };
  // Server-side apply refuses server-owned metadata in an apply body.
  for (const k of ["resourceVersion", "uid", "managedFields", "creationTimestamp", "generation"]) delete copy.metadata[k];
  return copy;
}
