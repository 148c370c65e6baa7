/**
 * The core API for plugins, assembled (docs/adr/0196): in `openfief up` its verifier is the data
 * folder's published key set (`jwks.json`, issuer `openfief-embedded`, the key `openfief token`
 * signs with) and it is mounted on the console's listener under `/core/`; in a cluster its
 * verifier is TokenReview for `openfief-core` and it listens on its own at the core address the
 * plugins dial ({@link startClusterCoreApi}, for the component that plays the core to mount).
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import type { JSONWebKeySet } from "jose";
import type { Logger } from "pino";
import { Counter } from "prom-client";
import type { Registry } from "prom-client";
import { CoreApi, deliveriesOf, jwksPluginVerifier, reviewerPluginVerifier } from "../app/index.js";
import type { CoreApiLimits, CoreApiPorts, DeliveryStore, PluginTokenVerifier } from "../app/index.js";
import { CachingTokenReviewer, EMBEDDED_ISSUER, KubeTokenReviewer } from "../egress/index.js";
import type { EventLog } from "../events/index.js";
import { CORE_AUDIENCE } from "../plugins/index.js";
import type { CoreListener } from "../server/index.js";

/** The published key set's file in the data folder (beside the embedded key). */
const JWKS_FILE = "jwks.json";
/** The largest key set read. */
const MAX_JWKS_BYTES = 64 * 1024;

/**
 * The data folder's published key set, read again whenever its file changes (size or time), so a
 * key made after `up` started (by `openfief token`) is used at once. No file: no key, so no token passes.
 */
export function dataDirJwks(dataDir: string): () => JSONWebKeySet {
  const path = join(dataDir, JWKS_FILE);
  let cached: { stamp: string; jwks: JSONWebKeySet } | null = null;
  return () => {
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return { keys: [] };
      throw err;
    }
    try {
      const st = fstatSync(fd);
      const stamp = `${st.size}:${st.mtimeMs}:${st.ino}`;
      if (cached !== null && cached.stamp === stamp) return cached.jwks;
      if (st.size > MAX_JWKS_BYTES) throw new Error(`${path} is over ${MAX_JWKS_BYTES} bytes`);
      const buf = Buffer.alloc(st.size);
      let n = 0;
      while (n < st.size) {
        const r = readSync(fd, buf, n, st.size - n, n);
        if (r === 0) break;
        n += r;
      }
      const jwks = JSON.parse(buf.subarray(0, n).toString("utf8")) as JSONWebKeySet;
      cached = { stamp, jwks };
      return jwks;
    } finally {
      closeSync(fd);
    }
  };
}

/** The embedded mode's verifier: the data folder's key set, issuer `openfief-embedded`, audience `openfief-core`. */
export function embeddedPluginVerifier(dataDir: string, now?: () => Date): PluginTokenVerifier {
  return jwksPluginVerifier({ jwks: dataDirJwks(dataDir), issuer: EMBEDDED_ISSUER, audience: CORE_AUDIENCE, ...(now === undefined ? {} : { now }) });
}

/**
 * `openfief_core_calls_total{call, code}`: the core API's answers, by call and by `ok` or the
 * refusal's code (bounded sets: never an instance or an address). Registered once per registry.
 */
export function coreCallCounter(registry: Registry): NonNullable<CoreApiPorts["onAnswer"]> {
  const name = "openfief_core_calls_total";
  const counter = (registry.getSingleMetric(name) as Counter<"call" | "code"> | undefined)
    ?? new Counter({ name, help: "the core API's answers to plugins, by call and code (ok, or why it was refused)", labelNames: ["call", "code"], registers: [registry] });
  return (call, code) => counter.inc({ call, code });
}

/** `up`'s core API over its data folder. */
export function embeddedCoreApi(o: { readonly dataDir: string; readonly store: EventLog; readonly logger: Logger; readonly clock?: (() => Date) | undefined; readonly limits?: Partial<CoreApiLimits>; readonly registry?: Registry }): CoreApi {
  return new CoreApi({
    store: o.store, verifier: embeddedPluginVerifier(o.dataDir, o.clock), deliveries: deliveriesOf(o.store, o.dataDir),
    logger: o.logger.child({ component: "core-api" }), ...(o.registry === undefined ? {} : { onAnswer: coreCallCounter(o.registry) }),
    ...(o.clock === undefined ? {} : { clock: o.clock }), ...(o.limits === undefined ? {} : { limits: o.limits }),
  });
}

/** How long a cluster's core trusts a TokenReview's answer: a minute (a deleted ServiceAccount's token passes for at most that). */
export const CLUSTER_CORE_REVIEW_CACHE_MS = 60_000;

/** The cluster's verifier: TokenReview for `openfief-core`, answers cached a minute. */
export async function clusterPluginVerifier(kc: KubeConfig): Promise<PluginTokenVerifier> {
  const reviewer = await KubeTokenReviewer.fromKubeConfig(kc, CORE_AUDIENCE);
  return reviewerPluginVerifier(new CachingTokenReviewer(reviewer, { ttlMs: CLUSTER_CORE_REVIEW_CACHE_MS }));
}

/** What a cluster's core API runs over. */
export interface ClusterCoreApiOptions {
  readonly kc: KubeConfig;
  /** The cluster's one log. */
  readonly store: EventLog;
  /** Where the cluster keeps connectors' deliveries. */
  readonly deliveries: DeliveryStore;
  readonly logger: Logger;
  /** Where plugins dial the core: the pod's address and port behind the core's ClusterIP (`0.0.0.0`, 8443). */
  readonly host: string;
  readonly port: number;
  /** The verifier; TokenReview for `openfief-core` unless given (tests). */
  readonly verifier?: PluginTokenVerifier;
  readonly limits?: Partial<CoreApiLimits>;
  /** Where `openfief_core_calls_total` is counted. */
  readonly registry?: Registry;
}

/** A cluster's core API, listening: stop it with `close()` (the listener, then the summaries still counting). */
export interface ClusterCoreApi {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Serves the core API in a cluster: for the component that plays the core (the operator's leader,
 * or whichever serves the core address the plugins' NetworkPolicies name) to mount.
 */
export async function startClusterCoreApi(o: ClusterCoreApiOptions): Promise<ClusterCoreApi> {
  const { serveCoreApi } = await import("../server/index.js");
  const api = new CoreApi({
    store: o.store, verifier: o.verifier ?? (await clusterPluginVerifier(o.kc)), deliveries: o.deliveries,
    logger: o.logger.child({ component: "core-api" }), ...(o.limits === undefined ? {} : { limits: o.limits }),
    ...(o.registry === undefined ? {} : { onAnswer: coreCallCounter(o.registry) }),
  });
  let listener: CoreListener;
  try {
    listener = await serveCoreApi(api, { host: o.host, port: o.port, logger: o.logger });
  } catch (err) {
    await api.close();
    throw err;
  }
  return {
    url: listener.url,
    async close() {
      await listener.close();
      await api.close();
    },
  };
}
