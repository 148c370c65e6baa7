/**
 * Where desired state goes. The reconciler hands a target each running plugin's Kubernetes
 * objects and the egress allow-lists; a target makes them so. The directory target writes YAML
 * files (the embedded default); the Kubernetes target applies them to a cluster.
 */

import type { UninstalledResource } from "../events/index.js";

/** A Kubernetes object as the pure model builds it: plain JSON with apiVersion, kind, metadata. */
export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [k: string]: unknown };
  readonly [k: string]: unknown;
}

export interface Target {
  /** A stable name recorded in `workload.applied` events (`directory:<path>`, `kubernetes`). */
  readonly name: string;
  /** Makes exactly these objects the plugin's; objects of the plugin not listed are removed. */
  applyPlugin(plugin: string, objects: readonly KubeObject[]): Promise<void>;
  /** Removes everything the plugin had: it no longer runs. Idempotent. */
  removePlugin(plugin: string): Promise<void>;
  /** Publishes every running plugin's allow-list (the encoded ConfigMap data). */
  applyAllowLists(data: Readonly<Record<string, string>>): Promise<void>;
  /**
   * Publishes the running WebAssembly plugins to the plugin host: the `openfief-plugin-host`
   * ConfigMap's data, one key per plugin (ADR 0080). Keys not in `data` are removed.
   */
  applyPluginHost(data: Readonly<Record<string, string>>): Promise<void>;
  /**
   * Deletes these Secrets (an uninstall's purge, docs/adr/0162); those not found are `absent`.
   * Idempotent: deleting a Secret already gone is not an error.
   */
  removeSecrets(names: readonly string[]): Promise<{ readonly removed: string[]; readonly absent: string[] }>;
  /**
   * Deletes the plugin's Plugin and PluginGrant resources in a purge where they live apart from the
   * log (a cluster; docs/adr/0152); absent where the log holds them. Idempotent.
   */
  removeResources?(plugin: string): Promise<UninstalledResource[]>;
  /** The plugins the target currently holds objects for, so a restart can prune leftovers. */
  listPlugins(): Promise<string[]>;
}
