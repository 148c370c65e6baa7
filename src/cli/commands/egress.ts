/**
 * `openfief egress`: the egress proxy alone, in cluster mode (seed 004, "Running it"). Allow-lists
 * come from the `openfief-egress-allowlist` ConfigMap, tokens are checked with TokenReview for the
 * audience openfief-egress behind the caching reviewer. Logs JSON. On SIGTERM or an interrupt it
 * reports not ready, refuses new CONNECTs, drains up to 25 s, then closes the rest.
 */
import { KubeConfig } from "@kubernetes/client-node";
import type { Command } from "commander";
import { pino } from "pino";
import { CliError } from "../cli-error.js";
import { PROXY_PORT } from "../../plugins/index.js";
import { BatchingDecisionRecorder, CachingTokenReviewer, createEgressProxy, type DecisionRecorder, dialTcp, DnsResolver, ErrNotSynced, KubeTokenReviewer, refuseUpstreamProxyEnv, StoreDecisionRecorder, watchAllowLists } from "../../egress/index.js";
import { openStore, type EventStore } from "../../events/index.js";

interface Options {
  listen: string;
  dnsServer: string[];
  denyCidr: string[];
  maxTunnels?: string;
  kubeconfig?: string;
  syncTimeout: string;
  store?: string;
  json?: boolean;
}

/** Parses `--listen`: `:4750`, `4750`, `host:port` or `[v6]:port`. */
export function parseListen(text: string): { host: string; port: number } {
  const bad = (): never => {
    throw new CliError(`--listen: expected [host]:port, got ${JSON.stringify(text)}`);
  };
  let host = "";
  let portText = text;
  if (text.startsWith("[")) {
    const m = /^\[([^\]]+)\]:(.*)$/.exec(text);
    if (m === null) return bad();
    host = m[1] ?? "";
    portText = m[2] ?? "";
  } else if (text.includes(":")) {
    const colon = text.lastIndexOf(":");
    host = text.slice(0, colon);
    portText = text.slice(colon + 1);
    if (host.includes(":")) return bad();
  }
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) return bad();
  return { host: host === "" ? "0.0.0.0" : host, port: Number(portText) };
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function register(program: Command): void {
  program
    .command("egress")
    .description("run the egress proxy (cluster mode: ConfigMap allow-lists, TokenReview)")
    .option("--listen <addr>", "address to listen on", `:${PROXY_PORT}`)
    .option("--dns-server <addr>", "DNS server to ask (repeatable; default: the system's)", collect, [])
    .option("--deny-cidr <cidr>", "extra range never dialed, e.g. pod, Service and node CIDRs (repeatable)", collect, [])
    .option("--max-tunnels <n>", "open tunnels before CONNECTs get 429")
    .option("--kubeconfig <file>", "use this kubeconfig instead of in-cluster credentials")
    .option("--store <file>", "record every decision in this event store (SQLite file) before tunnelling")
    .option("--sync-timeout <ms>", "how long the first read of the allow-lists may take", "30000")
    .option("--json", "log JSON lines (always on; accepted for symmetry)")
    .action(async (opts: Options) => {
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
    });
}
