/**
 * What the cluster's plugin host runs (ADR 0080): an informer on the one ConfigMap
 * `openfief-plugin-host`, decoded key by key with the model's codec. The host's Role reads nothing
 * else, so the watch is limited to that name by a field selector. client-node's informer stops for
 * good on any error but 410, so after the first read an error keeps the last set and restarts the
 * watch (as the egress proxy follows its allow-lists); a deleted ConfigMap runs nothing.
 */
import type { KubeConfig, V1ConfigMap } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { decodeHostedPlugins, formatErrors, NAMESPACE, PLUGIN_HOST_CONFIGMAP } from "../plugins/index.js";
import type { HostedPlugin } from "../plugins/index.js";

/** How long stopping waits for a start under way. */
const STOP_WAIT_MS = 5000;

/** Options of {@link watchHostedPlugins}. */
export interface WatchHostedPluginsOptions {
  readonly logger: Logger;
  readonly namespace?: string;
  /** Called with the new set after every change (and once after the first read). */
  readonly onChange: (plugins: ReadonlyMap<string, HostedPlugin>) => void;
  /** Delay before restarting a watch that ended with an error. */
  readonly restartDelayMs?: number;
}

/** A running watch. */
export interface HostedPluginsSource {
  /** The plugins the host runs now. */
  current(): ReadonlyMap<string, HostedPlugin>;
  /** Whether the ConfigMap (or its absence) was read at least once. */
  synced(): boolean;
  stop(): Promise<void>;
}

/** Starts the watch; it reads in the background, retrying until the first read succeeds. */
export async function watchHostedPlugins(kc: KubeConfig, o: WatchHostedPluginsOptions): Promise<HostedPluginsSource> {
  const namespace = o.namespace ?? NAMESPACE;
  const name = PLUGIN_HOST_CONFIGMAP;
  // Loaded here, not at the top: the client is heavy, and only cluster mode needs it.
  const { CoreV1Api, ListWatch, Watch } = await import("@kubernetes/client-node");
  const core = kc.makeApiClient(CoreV1Api);
  const fieldSelector = `metadata.name=${name}`;
  let current: ReadonlyMap<string, HostedPlugin> = new Map();
  let synced = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const set = (data: Record<string, string> | null): void => {
    const decoded = decodeHostedPlugins(data);
    if (decoded.errors.length > 0) o.logger.warn({ problems: formatErrors(decoded.errors) }, "entries of openfief-plugin-host cannot be read; those plugins are not served");
    current = decoded.plugins;
    o.onChange(current);
  };
  const informer = new ListWatch<V1ConfigMap>(
    `/api/v1/namespaces/${namespace}/configmaps`,
    new Watch(kc),
    async () => {
      const list = await core.listNamespacedConfigMap({ namespace, fieldSelector });
      // An empty list is a read too: no ConfigMap, no plugins.
      if (!synced) {
        synced = true;
        if (!list.items.some((cm) => cm.metadata?.name === name)) set(null);
      }
      return list;
    },
    false,
    undefined,
    fieldSelector,
  );
  const apply = (cm: V1ConfigMap): void => {
    if (cm.metadata?.name === name) set(cm.data ?? {});
  };
  informer.on("add", apply);
  informer.on("update", apply);
  informer.on("delete", (cm) => {
    if (cm.metadata?.name === name) set(null);
  });
  // start() rejecting and the "error" event may both report one failure: one restart for both.
  let pending = false;
  const restart = (): void => {
    if (stopped || pending) return;
    pending = true;
    timer = setTimeout(() => {
      pending = false;
      if (!stopped) starting = informer.start().catch(() => restart());
    }, o.restartDelayMs ?? 5000);
    timer.unref();
  };
  informer.on("error", (err: unknown) => {
    o.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "openfief-plugin-host watch failed; restarting, keeping the last set");
    restart();
  });
  // The start under way: stopping waits for it, or its watch would open after the stop and stay open.
  let starting: Promise<void> = informer.start().catch(() => restart());
  return {
    current: () => current,
    synced: () => synced,
    stop: async () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      // Bounded: an API server that never answers must not hold the shutdown.
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([starting, new Promise<void>((resolve) => (bound = setTimeout(resolve, STOP_WAIT_MS)))]);
      clearTimeout(bound);
      await informer.stop();
    },
  };
}
