/**
 * The embedded mode of the proxy, for `openfief up`: 127.0.0.1:4750, allow-lists fed by the
 * owner from the store's projection, tokens verified offline against the data folder's key
 * (`openfief token`), decisions recorded in the event store.
 */
import { connect as netConnect, type NetConnectOpts } from "node:net";
import { pino, type Logger } from "pino";
import type { Registry } from "prom-client";
import { PROXY_PORT } from "../plugins/index.js";
import type { AllowListSource } from "./allowlist-source.js";
import { CachingTokenReviewer } from "./caching-reviewer.js";
import { EMBEDDED_ISSUER, ensureEmbeddedKey, readEmbeddedJwks } from "./embedded-key.js";
import { JwksTokenReviewer } from "./jwks-reviewer.js";
import { bufferedLog } from "./decision-log.js";
import { EgressMetrics } from "./metrics.js";
import { createEgressProxy, TUNNEL_HIGH_WATER_MARK, type ConnectFn, type EgressProxy, type EgressProxyOptions, type EgressProxyPorts } from "./proxy.js";
import { StoreDecisionRecorder, type DecisionRecorder, type EventAppender } from "./recorder.js";
import { WorkerDecisionRecorder } from "./writer.js";
import type { KnownEvent } from "../events/index.js";
import { DnsResolver, type Resolver } from "./resolver.js";

/** Options of {@link startEmbeddedEgress}. */
export interface EmbeddedEgressOptions {
  readonly dataDir: string;
  /**
   * The event log. When it is the SQLite log of a file, decisions are committed by a worker thread
   * with its own connection to the file (issue 17) and announced to the log's in-process
   * subscribers; otherwise (another log, a test's in-memory appender) they are appended in-process.
   */
  readonly store: EventAppender & { readonly kind?: string; readonly location?: string; announce?(events: readonly KnownEvent[]): void };
  /**
   * When `store` is the PostgreSQL log: its URL, password included (its `location` has none), for
   * the writer thread's own connections to the same log (docs/adr/0165).
   */
  readonly storeUrl?: string;
  /** Who the writer thread's events name (default `egress-proxy`; a replica of a cluster's proxy, its own). */
  readonly actor?: string;
  /** The longest a decision waits for its commit before its CONNECT is refused (503). */
  readonly commitTimeoutMs?: number;
  readonly allowLists: AllowListSource;
  readonly logger?: Logger;
  readonly dnsServers?: readonly string[];
  /** Replaces DNS entirely (tests). */
  readonly resolver?: Resolver;
  /** Replaces the dialer (tests). */
  readonly connect?: ConnectFn;
  readonly options?: EgressProxyOptions;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The registry the proxy's counters join (the control plane's `/metrics`); none kept without it. */
  readonly registry?: Registry;
  /** The budget of refusals before identity recorded one by one (docs/adr/0091's defaults otherwise). */
  readonly anonymousLimits?: EgressProxyPorts["anonymousLimits"];
}

/**
 * The default dialer: a plain TCP connection to exactly the checked address, with the tunnel's
 * high-water mark so that one 64 KiB read passed on does not pause the other side.
 */
export const dialTcp: ConnectFn = (addr) => {
  // Node passes highWaterMark on to the socket's streams; @types/node 20 does not list it here.
  const options: NetConnectOpts & { highWaterMark: number } = { host: addr.address, port: addr.port, family: addr.family, highWaterMark: TUNNEL_HIGH_WATER_MARK, noDelay: true };
  return netConnect(options);
};

/**
 * The recorder of the embedded proxy: a writer thread on the store's file or on its PostgreSQL
 * database, its commits announced to the store's subscribers; in-process for an appender that
 * names neither (tests).
 */
function recorderFor(opts: EmbeddedEgressOptions, onError: (err: unknown) => void): Promise<DecisionRecorder> | DecisionRecorder {
  const store = opts.store;
  const at = store.kind === "sqlite" && store.location !== undefined ? { file: store.location }
    : store.kind === "postgres" && opts.storeUrl !== undefined ? { url: opts.storeUrl } : null;
  if (at === null) return new StoreDecisionRecorder(store, onError);
  const announce = store.announce?.bind(store);
  return WorkerDecisionRecorder.open({
    ...at,
    ...(opts.actor === undefined ? {} : { actor: opts.actor }),
    onError,
    ...(opts.commitTimeoutMs !== undefined ? { commitTimeoutMs: opts.commitTimeoutMs } : {}),
    ...(announce !== undefined ? { onCommitted: (events: readonly KnownEvent[]) => announce(events) } : {}),
  });
}

/** The default resolver: DNS over UDP with its answer cache, counted when there are metrics. */
function resolverFor(opts: EmbeddedEgressOptions, metrics: EgressMetrics | undefined): Resolver {
  if (opts.resolver !== undefined) return opts.resolver;
  return new DnsResolver({
    ...(opts.dnsServers !== undefined ? { servers: opts.dnsServers } : {}),
    timeoutMs: opts.options?.dnsTimeoutMs ?? 5000,
    ...(metrics !== undefined ? { onLookup: metrics.dnsLookup } : {}),
  });
}

/** Builds and starts the embedded proxy; resolves once it listens. */
export async function startEmbeddedEgress(opts: EmbeddedEgressOptions): Promise<{ proxy: EgressProxy; host: string; port: number }> {
  await ensureEmbeddedKey(opts.dataDir);
  // Without a logger of the caller's, the decision lines go to a buffered stdout (ADR 0033).
  const buffered = opts.logger === undefined ? bufferedLog({ dest: 1, pino: { name: "egress" } }) : undefined;
  const logger = opts.logger ?? buffered?.logger ?? pino({ name: "egress" });
  const metrics = opts.registry !== undefined ? new EgressMetrics(opts.registry) : undefined;
  const reviewer = new CachingTokenReviewer(
    // Re-read on every review the cache misses, so a key rotated in the data folder takes effect.
    new JwksTokenReviewer({ jwks: () => readEmbeddedJwks(opts.dataDir), issuer: EMBEDDED_ISSUER }),
    metrics !== undefined ? { onLookup: metrics.tokenLookup } : {},
  );
  const onError = (err: unknown): void => logger.error({ err: err instanceof Error ? err.message : String(err) }, "egress recording failed");
  const recorder = await recorderFor(opts, onError);
  let proxy: EgressProxy;
  try {
    proxy = createEgressProxy({
      reviewer,
      allowLists: opts.allowLists,
      resolver: resolverFor(opts, metrics),
      connect: opts.connect ?? dialTcp,
      recorder,
      logger,
      ...(buffered !== undefined ? { flushLog: () => buffered.close() } : {}),
      ...(metrics !== undefined ? { metrics } : {}),
      options: { host: "127.0.0.1", port: PROXY_PORT, ...(opts.options ?? {}) },
      ...(opts.env !== undefined ? { env: opts.env } : {}),
      ...(opts.anonymousLimits !== undefined ? { anonymousLimits: opts.anonymousLimits } : {}),
    });
  } catch (err) {
    await recorder.close?.();
    throw err;
  }
  try {
    const bound = await proxy.listen();
    return { proxy, ...bound };
  } catch (err) {
    // The recorder's writer thread and the log would keep the process alive after the refusal.
    await proxy.close();
    throw err;
  }
}
