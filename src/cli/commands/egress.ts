/**
 * `openfief egress`: the egress proxy alone, in cluster mode (seed 004, "Running it"). Allow-lists
 * come from the `openfief-egress-allowlist` ConfigMap, tokens are checked with TokenReview for the
 * audience openfief-egress behind the caching reviewer. Logs JSON. On SIGTERM or an interrupt it
 * reports not ready, refuses new CONNECTs, drains up to 25 s, then closes the rest.
 */
import type { Command } from "commander";
import { CliError } from "../cli-error.js";
import { PROXY_PORT } from "../../plugins/index.js";

export interface EgressOptions {
  listen: string;
  dnsServer: string[];
  denyCidr: string[];
  maxTunnels?: string;
  kubeconfig?: string;
  syncTimeout: string;
  store?: string;
  storeFile?: string;
  identity?: string;
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
    .option("--store <log>", "record every decision in this event log before tunnelling: a SQLite file (PATH or sqlite:PATH) or postgres://USER:PASSWORD@HOST:PORT/DATABASE, the cluster's one log (default: $OPENFIEF_STORE)")
    .option("--store-file <file>", "a file holding --store's value, such as a Secret's key mounted as a file (default: $OPENFIEF_STORE_FILE)")
    .option("--identity <id>", "this replica's name in the events it records, as egress-proxy/<id> (default: $POD_NAME, then the host name)")
    .option("--sync-timeout <ms>", "how long the first read of the allow-lists may take", "30000")
    .option("--json", "log JSON lines (always on; accepted for symmetry)")
    .action(async (opts: EgressOptions) => {
      // The body needs the Kubernetes client: loaded only when this command runs.
      const { runEgress } = await import("./egress-run.js");
      await runEgress(opts);
    });
}
