/**
 * The Kubernetes objects of one compiled workload. Type-only imports keep the model pure: these are
 * plain objects the shell applies with server-side apply. Every list is sorted and every object is
 * built in a fixed key order, so equal workloads give byte-identical JSON.
 */
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1ConfigMap,
  V1Container,
  V1Deployment,
  V1NetworkPolicy,
  V1NetworkPolicyPeer,
  V1NetworkPolicyPort,
  V1ObjectMeta,
  V1Service,
  V1ServiceAccount,
  V1Volume,
  V1VolumeMount,
} from "@kubernetes/client-node";
import { PLUGIN_LABEL } from "./compile.js";
import type { NetworkRule, Workload } from "./compile.js";
import { compareStrings } from "./effective.js";
import { PLUGIN_HOST_POD_LABELS } from "./plugin-host.js";
import { scopeObjects } from "./scope-objects.js";

/** The single container's name. */
export const CONTAINER_NAME = "plugin";
/** The name of the plugin's contract port on the container and the Service. */
export const PORT_NAME = "rpc";
/** Pod annotation whose change makes the Deployment restart the pod when only the config changed. */
export const CONFIG_CHECKSUM_ANNOTATION = "openfief.io/config-checksum";
/** Pod annotation listing the plugin's granted capabilities, comma-separated and sorted. */
export const CAPABILITIES_ANNOTATION = "openfief.io/capabilities";
/** Pod annotation listing the plugin's granted data tiers, comma-separated and sorted. */
export const DATA_TIERS_ANNOTATION = "openfief.io/data-tiers";

/**
 * The objects of one plugin instance, all in namespace openfief, typed as @kubernetes/client-node
 * models. Those models name an ingress rule's `from` as `_from`, and client-node's serializer
 * (KubernetesObjectApi, dumpYaml) renames it on the wire, silently dropping a plain `from`. So apply
 * these through client-node's typed serialization, or write {@link objectToJSON}'s output; never
 * `JSON.stringify` them directly (the server would ignore `_from` and allow every source).
 */
export interface PluginObjects {
  readonly serviceAccount: V1ServiceAccount;
  readonly configMap: V1ConfigMap;
  readonly networkPolicy: V1NetworkPolicy;
  readonly service: V1Service;
  readonly deployment: V1Deployment;
  /** Only with effective PolicyRules: the ClusterRole `plugin-<name>-scope` holding them (cluster-scoped). */
  readonly clusterRole?: V1ClusterRole;
  /** Only with effective PolicyRules: binds the ClusterRole to the ServiceAccount `plugin-<name>`. */
  readonly clusterRoleBinding?: V1ClusterRoleBinding;
}

/** One of a plugin's objects. */
export type PluginObject = V1ServiceAccount | V1ConfigMap | V1NetworkPolicy | V1Service | V1Deployment | V1ClusterRole | V1ClusterRoleBinding;

/**
 * FNV-1a, 64 bits, over the UTF-16 code units: a change detector for the pod template, not a
 * security measure (the pure model has no crypto), so a config edit restarts the pod.
 */
function fnv1a64(text: string): string {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    h ^= BigInt(text.charCodeAt(i));
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, "0");
}

function meta(w: Workload, name: string): V1ObjectMeta {
  return { name, namespace: w.namespace, labels: w.labels };
}

function selector(w: Workload): Record<string, string> {
  return { [PLUGIN_LABEL]: w.name };
}

function peer(rule: NetworkRule): V1NetworkPolicyPeer {
  return {
    podSelector: {
      // Core and proxy pods never carry the plugin label; requiring its absence means a plugin
      // pod can never pass for the core or the proxy, whatever labels the topology names.
      matchExpressions: [{ key: PLUGIN_LABEL, operator: "DoesNotExist" }],
      matchLabels: { ...rule.podLabels },
    },
  };
}

function ports(rule: NetworkRule): V1NetworkPolicyPort[] {
  return [{ port: rule.port, protocol: rule.protocol }];
}

/** Maps a compiled workload onto its Kubernetes objects. */
export function buildObjects(w: Workload): PluginObjects {
  const name = w.serviceAccountName;
  const config = w.config;
  const jwks = w.jwks;

  const serviceAccount: V1ServiceAccount = {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: meta(w, name),
    automountServiceAccountToken: false,
  };

  const configMap: V1ConfigMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: meta(w, config.configMapName),
    data: { [config.fileName]: config.json },
  };

  const networkPolicy: V1NetworkPolicy = {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: meta(w, name),
    spec: {
      podSelector: { matchLabels: selector(w) },
      // Both types listed: whatever no rule allows is denied, in and out.
      policyTypes: ["Ingress", "Egress"],
      ingress: w.ingress.map((r) => ({ _from: [peer(r)], ports: ports(r) })),
      egress: w.egress.map((r) => ({ to: [peer(r)], ports: ports(r) })),
    },
  };

  const service: V1Service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(w, name),
    spec: {
      type: "ClusterIP",
      selector: selector(w),
      ports: [{ name: PORT_NAME, port: w.listenPort, protocol: "TCP", targetPort: w.listenPort }],
    },
  };

  const volumes: V1Volume[] = [
    ...w.tokens.map(
      (t): V1Volume => ({
        name: t.volumeName,
        projected: {
          sources: [{ serviceAccountToken: { audience: t.audience, expirationSeconds: t.expirationSeconds, path: t.fileName } }],
        },
      }),
    ),
    ...w.secrets.map((s): V1Volume => ({ name: s.volumeName, secret: { secretName: s.secretName } })),
    {
      name: config.volumeName,
      configMap: { name: config.configMapName, items: [{ key: config.fileName, path: config.fileName }] },
    },
    {
      name: jwks.volumeName,
      // Not optional: without the keys the plugin could not tell the core from anyone, so the pod
      // waits for the ConfigMap rather than starting unable to serve.
      configMap: { name: jwks.configMapName, items: jwks.items.map((key) => ({ key, path: key })) },
    },
  ].sort((a, b) => compareStrings(a.name, b.name));

  const volumeMounts: V1VolumeMount[] = [
    ...w.tokens.map((t): V1VolumeMount => ({ name: t.volumeName, mountPath: t.mountDir, readOnly: true })),
    ...w.secrets.map((s): V1VolumeMount => ({ name: s.volumeName, mountPath: s.mountPath, readOnly: true })),
    { name: config.volumeName, mountPath: config.mountDir, readOnly: true },
    { name: jwks.volumeName, mountPath: jwks.mountDir, readOnly: jwks.readOnly },
  ].sort((a, b) => compareStrings(a.mountPath, b.mountPath) || compareStrings(a.name, b.name));

  const container: V1Container = {
    name: CONTAINER_NAME,
    image: w.image.toString(),
    imagePullPolicy: "IfNotPresent",
    ports: [{ name: PORT_NAME, containerPort: w.listenPort, protocol: "TCP" }],
    env: w.env.map((e) => ({ name: e.name, value: e.value })),
    securityContext: {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      privileged: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
    },
    volumeMounts,
  };

  const deployment: V1Deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta(w, name),
    spec: {
      replicas: 1,
      selector: { matchLabels: selector(w) },
      // Recreate: an old pod never runs beside a new one that holds other permissions.
      strategy: { type: "Recreate" },
      template: {
        metadata: {
          labels: w.labels,
          annotations: {
            [CAPABILITIES_ANNOTATION]: w.capabilities.join(","),
            [CONFIG_CHECKSUM_ANNOTATION]: `fnv1a64:${fnv1a64(config.json)}`,
            [DATA_TIERS_ANNOTATION]: w.dataTiers.join(","),
          },
        },
        spec: {
          serviceAccountName: name,
          automountServiceAccountToken: false,
          // Service links would hand the plugin every Service's address in its environment.
          enableServiceLinks: false,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
          containers: [container],
          volumes,
        },
      },
    },
  };

  return { serviceAccount, configMap, networkPolicy, service, deployment, ...scopeObjects(w) };
}

/**
 * The objects of a plugin the plugin host runs (a WebAssembly plugin; ADR 0080): its
 * ServiceAccount, whose tokens are its identity for egress, and its Service on the plugin port,
 * selecting the plugin host's pods, so the core reaches `plugin-<name>` wherever the plugin runs.
 * No Deployment, ConfigMap or NetworkPolicy: the host's own Deployment and NetworkPolicies
 * (deploy/base/plugin-host.yaml) confine every plugin it runs, and its config reaches it through
 * the `openfief-plugin-host` ConfigMap. A view's effective rules are its ClusterRole and binding, as
 * for a container.
 */
export interface HostedPluginObjects {
  readonly serviceAccount: V1ServiceAccount;
  readonly service: V1Service;
  /** The effective Kubernetes rules of a view, bound to its ServiceAccount, as for any plugin. */
  readonly clusterRole?: V1ClusterRole;
  readonly clusterRoleBinding?: V1ClusterRoleBinding;
}

/** Maps a compiled workload onto the objects of a plugin the plugin host runs. */
export function buildHostedObjects(w: Workload): HostedPluginObjects {
  const o = buildObjects(w);
  const service: V1Service = {
    ...o.service,
    spec: {
      type: "ClusterIP",
      selector: { ...PLUGIN_HOST_POD_LABELS },
      // The host serves every plugin's contract on the plugin port; the token's audience names the instance.
      ports: [{ name: PORT_NAME, port: w.listenPort, protocol: "TCP", targetPort: w.listenPort }],
    },
  };
  return { serviceAccount: o.serviceAccount, service, ...scopeObjects(w) };
}

/** A hosted plugin's objects as Kubernetes JSON, in apply order (identity first); byte-stable. */
export function hostedObjectsToJSON(o: HostedPluginObjects): Record<string, unknown>[] {
  return [o.serviceAccount, ...scopeOf(o), o.service].map(objectToJSON);
}

function scopeOf(o: Pick<PluginObjects, "clusterRole" | "clusterRoleBinding">): PluginObject[] {
  return o.clusterRole !== undefined && o.clusterRoleBinding !== undefined ? [o.clusterRole, o.clusterRoleBinding] : [];
}

/**
 * The objects in apply order: identity and config first, then the NetworkPolicy before anything
 * that selects or runs the pod, so the pod is never up without its confinement.
 */
export function listObjects(o: PluginObjects): PluginObject[] {
  return [o.serviceAccount, ...scopeOf(o), o.configMap, o.networkPolicy, o.service, o.deployment];
}

/** Kubernetes' own JSON form of one object (`from`, not `_from`): what a directory target writes. */
export function objectToJSON(o: PluginObject): Record<string, unknown> {
  const json = JSON.parse(JSON.stringify(o)) as Record<string, unknown>;
  if (o.kind === "NetworkPolicy") {
    const spec = json["spec"] as { ingress?: Array<Record<string, unknown>> } | undefined;
    if (spec?.ingress !== undefined) {
      spec.ingress = spec.ingress.map(({ _from, ...rest }) => (_from === undefined ? rest : { from: _from, ...rest }));
    }
  }
  return json;
}

/** Every object's Kubernetes JSON form, in apply order; byte-stable for equal workloads. */
export function objectsToJSON(o: PluginObjects): Record<string, unknown>[] {
  return listObjects(o).map(objectToJSON);
}

/**
 * The reverse of {@link objectToJSON}: a plugin object's Kubernetes JSON in client-node's model
 * form (`_from`), for a shell that receives plain JSON and applies it with KubernetesObjectApi.
 * Without it, client-node's serializer drops `from` and the ingress rule would admit every source.
 */
export function toClientNodeModel<T extends { readonly kind?: unknown }>(json: T): T {
  const copy = JSON.parse(JSON.stringify(json)) as T & { spec?: { ingress?: Array<Record<string, unknown>> } };
  if (copy.kind === "NetworkPolicy" && copy.spec?.ingress !== undefined) {
    copy.spec.ingress = copy.spec.ingress.map(({ from, ...rest }) => (from === undefined ? rest : { _from: from, ...rest }));
  }
  return copy;
}
