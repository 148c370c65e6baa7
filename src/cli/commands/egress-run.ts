/**
 * The body of `openfief egress` (see egress.ts), loaded only when the command runs: it needs the
 * Kubernetes client, which is heavy to load and which no other command needs.
 */
import { Registry } from "prom-client";
import { CliError } from "../cli-error.js";
import { BatchingDecisionRecorder, bufferedLog, CachingTokenReviewer, createEgressProxy, type DecisionRecorder, dialTcp, DnsResolver, EgressMetrics, ErrNotSynced, KubeTokenReviewer, refuseUpstreamProxyEnv, watchAllowLists, WorkerDecisionRecorder } from "../../egress/index.js";
import { hostname } from "node:os";
import { openStore, type EventLog } from "../../events/index.js";
import { storeLocationOf, type StoreLocation } from "../../app/index.js";
import { loadKubeConfig } from "../../kube/index.js";
import { parseListen, type EgressOptions as Options } from "./egress.js";

/** Runs the egress proxy in cluster mode until SIGTERM or an interrupt. */
export async function runEgress(opts: Options): Promise<void> {
      const listen = parseListen(opts.listen);
      const maxTunnels = opts.maxTunnels === undefined ? undefined : Number(opts.maxTunnels);
      if (maxTunnels !== undefined && (!Number.isInteger(maxTunnels) || maxTunnels <= 0)) throw new CliError("--max-tunnels must be a positive integer");
      // Before any other setup: createEgressProxy checks this too, but only after the watch started.
      try {
        refuseUpstreamProxyEnv(process.env);
      } catch (err) {
        throw new CliError((err as Error).message, 1);
      }
      // Where decisions are recorded, and as whom: checked before anything starts.
      const at = egressLog(opts);
      const actor = replicaActor(opts.identity);
      // One JSON line per decision, buffered (flushed on a short timer and at shutdown, ADR 0033).
      const log = bufferedLog({ dest: 1, pino: { name: "egress", redact: ["req.headers.proxy-authorization", "headers.proxy-authorization"] } });
      const logger = log.logger;
      const registry = new Registry();
      const metrics = new EgressMetrics(registry);
      let kc;
      try {
        kc = loadKubeConfig(opts.kubeconfig);
      } catch (err) {
        throw new CliError(`egress refused to start: ${err instanceof Error ? err.message : String(err)}`, 1);
      }

      let source;
      try {
        source = await watchAllowLists(kc, { logger, syncTimeoutMs: Number(opts.syncTimeout) });
      } catch (err) {
        if (err instanceof ErrNotSynced) throw new CliError(err.message, 1);
        throw err;
      }
      let opened: Recording;
      try {
        opened = await openRecording(at, actor, (err) => logger.error({ err: err.message }, "egress recording failed"));
      } catch (err) {
        await source.stop();
        throw err;
      }
      const { store, recorder } = opened;
      if (at?.kind === "postgres") logger.info({ store: at.shown, actor }, "recording every decision in the event log");
      let proxy;
      try {
        proxy = createEgressProxy({
          reviewer: new CachingTokenReviewer(await KubeTokenReviewer.fromKubeConfig(kc), { onLookup: metrics.tokenLookup }),
          allowLists: source,
          resolver: new DnsResolver({ ...(opts.dnsServer.length > 0 ? { servers: opts.dnsServer } : {}), onLookup: metrics.dnsLookup }),
          connect: dialTcp,
          recorder,
          logger,
          metrics,
          // /metrics on the proxy's own port, for the cluster's Prometheus.
          metricsRegistry: registry,
          flushLog: () => log.close(),
          options: { host: listen.host, port: listen.port, extraDenyCidrs: opts.denyCidr, ...(maxTunnels !== undefined ? { maxTunnels } : {}) },
        });
      } catch (err) {
        await source.stop();
        await recorder.close?.();
        await store?.close();
        if (err instanceof Error) throw new CliError(err.message, 1);
        throw err;
      }
      await proxy.listen();
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off("SIGTERM", stop);
          process.off("SIGINT", stop);
          void proxy.close().then(resolve);
        };
        process.on("SIGTERM", stop);
        process.on("SIGINT", stop);
      });
      await source.stop();
      await store?.close();
}

/**
 * The log `openfief egress` records in: `--store`, `--store-file`, `$OPENFIEF_STORE` or
 * `$OPENFIEF_STORE_FILE` (a Secret's key as a variable or a mounted file). A `--store` without a
 * scheme is a SQLite file, as before `sqlite:` and `postgres://` were accepted.
 */
function egressLog(opts: Options): StoreLocation | null {
  const store = opts.store !== undefined && !/^[A-Za-z][A-Za-z0-9+.-]*:/.test(opts.store) ? `sqlite:${opts.store}` : opts.store;
  return storeLocationOf({ store, storeFile: opts.storeFile });
}

/** The name a replica's events carry: `egress-proxy/<id>`, the id from --identity, $POD_NAME or the host name. */
function replicaActor(identity: string | undefined): string {
  const id = identity ?? process.env["POD_NAME"] ?? hostname();
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,126}$/.test(id)) throw new CliError(`--identity must be a name of letters, digits, '.', '_' and '-' (at most 127), not ${JSON.stringify(id.slice(0, 64))}`);
  return `egress-proxy/${id}`;
}

/** Where `openfief egress` records: the writer thread, and the SQLite log it announces to. */
interface Recording {
  readonly store: EventLog | undefined;
  readonly recorder: DecisionRecorder;
}

/** The recorder for the log at `at`, recording as `actor` (the pino decision line alone without a log). */
async function openRecording(at: StoreLocation | null, actor: string, onError: (err: Error) => void): Promise<Recording> {
  if (at === null) {
    // Without a store the pino decision line (one per CONNECT, JSON) is the only record.
    return { store: undefined, recorder: new BatchingDecisionRecorder(() => undefined) };
  }
  if (at.kind === "sqlite") {
    // Migrated by this connection; decisions are then committed by a writer thread of their own.
    const store = await openStore({ file: at.file });
    const announce = store.announce.bind(store);
    return { store, recorder: await WorkerDecisionRecorder.open({ file: at.file, actor, onCommitted: (events) => announce(events), onError }) };
  }
  // The cluster's one log: the writer thread appends to it under the log's write lock, as every
  // other replica and component does (docs/adr/0165). Its schema is made by its owner.
  try {
    return { store: undefined, recorder: await WorkerDecisionRecorder.open({ url: at.url, actor, onError }) };
  } catch (err) {
    throw new CliError(`egress refused to start: the event log ${at.shown}: ${err instanceof Error ? err.message : String(err)}`, 1);
  }
}
