/**
 * What the cluster adapter needs from the reconciler, declared here so `src/kube` does not depend
 * on the reconciler's module layout. The reconciler (`src/reconciler/reconciler.ts`) implements it.
 */
import type { GrantSpec, JsonValue, PluginSpec } from "../plugins/index.js";

/** A Plugin's `status.deployed` as read: the version that runs, image, manifest and config as written. */
export interface DeployedStatus {
  readonly image: string;
  readonly manifest: JsonValue;
  readonly config?: JsonValue;
}

/** What the cluster says about a Plugin besides its spec, needed for status and ownership. */
export interface PluginMeta {
  readonly uid: string;
  readonly generation: number;
  readonly resourceVersion: string;
  /**
   * `status.deployed` as the cluster holds it: the version that runs (seed 000, "Previous from
   * status.deployed"); null when absent or without an image and a manifest object.
   */
  readonly deployed: DeployedStatus | null;
}

/** The reconciler as the operator drives it. */
export interface ClusterReconciler {
  /**
   * Records what the cluster holds for one Plugin: `spec` as read (unvalidated: the reconciler
   * validates it), or null when the Plugin is gone.
   */
  observePlugin(name: string, spec: PluginSpec | null, meta: PluginMeta | null): void | Promise<void>;
  /** Records one PluginGrant's spec as read (unvalidated), or null when the grant is gone. */
  observeGrant(name: string, spec: GrantSpec | null): void | Promise<void>;
  /** Decides and applies everything observed so far. Idempotent. */
  reconcileAll(): Promise<void>;
}
