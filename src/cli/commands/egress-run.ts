/**
 * The body of `openfief egress` (see egress.ts), loaded only when the command runs: it needs the
 * Kubernetes client, which is heavy to load and which no other command needs.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { CliError } from "../cli-error.js";
import { BatchingDecisionRecorder, CachingTokenReviewer, createEgressProxy, type DecisionRecorder, dialTcp, DnsResolver, ErrNotSynced, KubeTokenReviewer, refuseUpstreamProxyEnv, StoreDecisionRecorder, watchAllowLists } from "../../egress/index.js";
import { openStore, type EventStore } from "../../events/index.js";
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
      const logger = pino({ name: "egress", redact: ["req.headers.proxy-authorization", "headers.proxy-authorization"] });
      const kc = new KubeConfig();
      if (opts.kubeconfig !== undefined) kc.loadFromFile(opts.kubeconfig);
      else kc.loadFromCluster();

      let source;
      try {
        source = await watchAllowLists(kc, { logger, syncTimeoutMs: Number(opts.syncTimeout) });
      } catch (err) {
        if (err instanceof ErrNotSynced) throw new CliError(err.message, 1);
        throw err;
      }
      let store: EventStore | undefined;
      let recorder: DecisionRecorder;
      if (opts.store !== undefined) {
        store = await openStore({ file: opts.store });
        recorder = new StoreDecisionRecorder(store);
      } else {
        // Without a store the pino decision line (one per CONNECT, JSON) is the only record.
        recorder = new BatchingDecisionRecorder(() => undefined);
      }
      let proxy;
      try {
        proxy = createEgressProxy({
          reviewer: new CachingTokenReviewer(KubeTokenReviewer.fromKubeConfig(kc)),
          allowLists: source,
          resolver: new DnsResolver(opts.dnsServer.length > 0 ? { servers: opts.dnsServer } : {}),
          connect: dialTcp,
          recorder,
          logger,
          options: { host: listen.host, port: listen.port, extraDenyCidrs: opts.denyCidr, ...(maxTunnels !== undefined ? { maxTunnels } : {}) },
        });
      } catch (err) {
        await source.stop();
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
