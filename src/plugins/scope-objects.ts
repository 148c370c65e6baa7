/**
 * The plugin ServiceAccount's RBAC (seed 002, "Where the scope comes from"): the effective
 * PolicyRules materialised as a ClusterRole `plugin-<name>-scope` and a ClusterRoleBinding of the
 * same name to `system:serviceaccount:openfief:plugin-<name>`. The cluster's own RBAC engine then
 * caps every request the gateway sends with that ServiceAccount's token. The pod never holds such a
 * token: its projected tokens carry only the openfief audiences (docs/adr/0021).
 */
import type { V1ClusterRole, V1ClusterRoleBinding, V1PolicyRule } from "@kubernetes/client-node";
import type { Workload } from "./compile.js";
import { ruleToJSON } from "./rbac.js";

/** The suffix of the ClusterRole and ClusterRoleBinding names. */
export const SCOPE_SUFFIX = "-scope";

/** `plugin-<name>-scope`. */
export function scopeName(w: Pick<Workload, "serviceAccountName">): string {
  return `${w.serviceAccountName}${SCOPE_SUFFIX}`;
}

/** The ClusterRole and its binding, or nothing when no rule is effective. */
export function scopeObjects(w: Workload): { clusterRole?: V1ClusterRole; clusterRoleBinding?: V1ClusterRoleBinding } {
  const rules = w.rbac;
  if (rules.length === 0) return {};
  const name = scopeName(w);
  // Cluster-scoped: no namespace. The labels tie them to the plugin for pruning.
  const metadata = { name, labels: w.labels };
  const clusterRole: V1ClusterRole = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata,
    rules: rules.map((r): V1PolicyRule => ruleToJSON(r)),
  };
  const clusterRoleBinding: V1ClusterRoleBinding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name, labels: w.labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
    subjects: [{ kind: "ServiceAccount", name: w.serviceAccountName, namespace: w.namespace }],
  };
  return { clusterRole, clusterRoleBinding };
}
