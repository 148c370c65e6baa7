/**
 * The console and the API in a cluster (`openfief console`): the shared log (PostgreSQL, given by
 * the Secret the operator and the proxies read too), the owner's HTTP face of `openfief up` over
 * it, and the cluster's identity in place of sign-in links — a bearer token checked by a
 * TokenReview, roles from SubjectAccessReviews, approvals written to the PluginGrant as the user
 * (docs/adr/0170, 0171). It runs no reconciler and no proxy: the operator decides, this process
 * reads the log and takes approvals. `stop()` closes in order: the HTTP face (no request acts on
 * a closed log), then the log. The log's public key comes from the ConfigMap the operator's
 * leader publishes it in (docs/adr/0192), never from the Secret holding the private key.
 */
import type { Logger } from "pino";
import { assertLogHolds, ControlPlaneMetrics, kubeClusterAccess, openDataDir, openLogAt, Sessions, storeText, tightenedText } from "../app/index.js";
import type { FaceContext, Readiness, StoreLocation } from "../app/index.js";
import type { EventLog } from "../events/index.js";
import { ClusterIdentity } from "../kube/index.js";
import type { KubeConfig } from "@kubernetes/client-node";
import { startServer } from "../server/index.js";
import { ConsoleLogKey } from "./cluster-log-key.js";
import type { ServerOptions } from "../server/index.js";

/** Options of {@link startClusterConsole}. */
export interface ClusterConsoleOptions {
  /** The shared log (a postgres:// URL in a cluster; a SQLite file in a test). */
  readonly store: StoreLocation;
  /** The cluster to ask (in-cluster credentials or a kubeconfig), already loaded. */
  readonly kubeConfig: KubeConfig;
  /** The folder of the console's session key (private to the process: an emptyDir in a pod). */
  readonly dataDir: string;
  /** Where the API and console listen; beyond loopback only with TLS. */
  readonly server: ServerOptions;
  /** The plugins' namespace; default `openfief`. */
  readonly namespace?: string;
  /** The audiences a sign-in token must be for; default the API server's own. */
  readonly audiences?: readonly string[];
  /** How long a review's answer is reused (ms); default 10 s. */
  readonly reviewCacheMs?: number;
  /** How often the published log key is read again (ms); default 30 s. */
  readonly logKeyRefreshMs?: number;
  readonly logger: Logger;
  readonly clock?: () => Date;
}

/** A running console in a cluster. */
export interface ClusterConsole {
  /** Where it listens. */
  readonly url: string;
  /** Where a browser opens it. */
  readonly origin: string;
  readonly store: EventLog;
  /** Stops the face, then closes the log. Idempotent. */
  stop(): Promise<void>;
}

/** Starts the console and the API of a cluster over its shared log. */
export async function startClusterConsole(o: ClusterConsoleOptions): Promise<ClusterConsole> {
  const clock = o.clock ?? (() => new Date());
  const store = await openLogAt(o.store, { clock });
  try {
    // Only what was appended since the last checkpoint: the operator checks the whole chain.
    await assertLogHolds(store);
    const identity = new ClusterIdentity(o.kubeConfig, { ...(o.namespace === undefined ? {} : { namespace: o.namespace }), ...(o.audiences === undefined ? {} : { audiences: o.audiences }) });
    const cluster = kubeClusterAccess(identity, { clock, ...(o.reviewCacheMs === undefined ? {} : { cacheMs: o.reviewCacheMs }) });
    const tightened = openDataDir(o.dataDir);
    if (tightened.length > 0) o.logger.warn(tightenedText(tightened));
    const sessions = await Sessions.open(o.dataDir, clock);
    const metrics = new ControlPlaneMetrics();
    let failure: string | null = null;
    const readiness = (): Readiness => (failure === null ? { ready: true, reasons: [] } : { ready: false, reasons: [failure] });
    const logKey = await ConsoleLogKey.start(o.kubeConfig, o.logger, { ...(o.namespace === undefined ? {} : { namespace: o.namespace }), ...(o.logKeyRefreshMs === undefined ? {} : { refreshMs: o.logKeyRefreshMs }) });
    const ctx: FaceContext = { dataDir: o.dataDir, store, sessions, views: null, metrics, logger: o.logger, clock, cluster, readiness, get logKey() { return logKey.current; } };
    const face = await startServer(ctx, o.server).catch((err: unknown) => { logKey.stop(); throw err; });
    o.logger.info({ url: face.url, origin: face.origin, store: storeText(o.store), namespace: cluster.namespace }, "the console serves the cluster's log");
    let stopped: Promise<void> | null = null;
    return {
      url: face.url,
      origin: face.origin,
      store,
      stop() {
        stopped ??= (async () => {
          failure = "stopping";
          logKey.stop();
          await face.close();
          await store.close();
        })();
        return stopped;
      },
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}
