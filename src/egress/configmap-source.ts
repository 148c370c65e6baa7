/**
 * The cluster-mode AllowListSource: an informer on the one ConfigMap `openfief-egress-allowlist`
 * in namespace `openfief` (seed 004, "Following the allow-lists"). The proxy's Role can read
 * nothing else, so the watch is limited to that name by a field selector.
 */
import type { KubeConfig, V1ConfigMap } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { ALLOWLIST_CONFIGMAP, NAMESPACE, type AllowLists } from "../plugins/index.js";
import { ErrNotSynced, MemoryAllowListSource, type AllowListSource } from "./allowlist-source.js";
import { withTimeout } from "./deadline.js";

/** Options of {@link watchAllowLists}. */
export interface WatchAllowListsOptions {
  readonly logger: Logger;
  readonly namespace?: string;
  readonly name?: string;
  /** How long the first read may take before {@link ErrNotSynced}. */
  readonly syncTimeoutMs?: number;
  /** Delay before restarting a watch that ended with an error. */
  readonly restartDelayMs?: number;
}

/** A running ConfigMap source; `stop()` ends the watch. */
export interface ConfigMapAllowListSource extends AllowListSource {
  stop(): Promise<void>;
}

/**
 * Starts the watch and returns after its first read. Undecodable data or a deleted ConfigMap drop
 * every list (and log the seed's line); an API error after the first read keeps the last set and
 * restarts the watch, since client-node's informer stops for good on any error but 410.
 */
export async function watchAllowLists(kc: KubeConfig, options: WatchAllowListsOptions): Promise<ConfigMapAllowListSource> {
  const namespace = options.namespace ?? NAMESPACE;
  const name = options.name ?? ALLOWLIST_CONFIGMAP;
  const logger = options.logger;
  const memory = new MemoryAllowListSource(null, logger);
  // Loaded here, not at the top: the client is heavy, and only cluster mode needs it.
  const { CoreV1Api, ListWatch, Watch } = await import("@kubernetes/client-node");
  const core = kc.makeApiClient(CoreV1Api);
  const fieldSelector = `metadata.name=${name}`;
  const informer = new ListWatch<V1ConfigMap>(
    `/api/v1/namespaces/${namespace}/configmaps`,
    new Watch(kc),
    () => core.listNamespacedConfigMap({ namespace, fieldSelector }),
    false,
    undefined,
    fieldSelector,
  );
  const apply = (cm: V1ConfigMap): void => {
    if (cm.metadata?.name !== name) return;
    memory.setData(cm.data ?? {});
  };
  informer.on("add", apply);
  informer.on("update", apply);
  informer.on("delete", (cm) => {
    if (cm.metadata?.name === name) memory.setData(null);
  });

  let synced = false;
  let stopped = false;
  let firstError: unknown;
  let restartTimer: NodeJS.Timeout | undefined;
  informer.on("error", (err: unknown) => {
    if (!synced) {
      firstError = err;
      return;
    }
    // Stopping aborts the watch, which reports an error: not a failure, and the log may be closed by then.
    if (stopped) return;
    logger.warn({ err: err instanceof Error ? err.message : String(err) }, "egress allow-list watch failed; restarting, keeping the last set");
    restartTimer = setTimeout(() => {
      if (!stopped) void informer.start();
    }, options.restartDelayMs ?? 5000);
    restartTimer.unref();
  });

  const timeoutMs = options.syncTimeoutMs ?? 30_000;
  const started = informer.start().then(
    () => "started" as const,
    (e: unknown) => {
      firstError = e;
      return "started" as const;
    },
  );
  const outcome = await withTimeout<"started" | "timeout">(started, timeoutMs, "timeout");
  if (outcome === "timeout" || firstError !== undefined) {
    stopped = true;
    await informer.stop();
    const why = outcome === "timeout" ? `no first read within ${timeoutMs} ms` : firstError instanceof Error ? firstError.message : "first read failed";
    throw new ErrNotSynced(why);
  }
  synced = true;
  return {
    current: (): AllowLists | null => memory.current(),
    stop: async (): Promise<void> => {
      stopped = true;
      if (restartTimer !== undefined) clearTimeout(restartTimer);
      await informer.stop();
    },
  };
}
