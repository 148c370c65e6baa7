/**
 * `openfief console`: the console and the API of a cluster, over its shared log. The log's URL
 * comes from `--store`, `--store-file`, `$OPENFIEF_STORE` or the file `$OPENFIEF_STORE_FILE` names
 * (the Secret the operator and the proxies read too); the cluster from in-cluster credentials or
 * `--kubeconfig`. Users sign in with a token the cluster accepts (`kubectl create token`, an OIDC id
 * token); the cluster's reviews give their role; approvals are written to the PluginGrant as the
 * user. It listens beyond loopback only with TLS, and stops on SIGTERM.
 */
import type { Command } from "commander";
import { AppError, storeLocationOf } from "../../app/index.js";
import { CliError } from "../cli-error.js";
import { print } from "../context.js";
import { parseListen, tlsOf } from "../listen.js";
import { cliLogger } from "../logger.js";

interface ConsoleOptions {
  store?: string;
  storeFile?: string;
  kubeconfig?: string;
  data: string;
  listen: string;
  tlsCert?: string;
  tlsKey?: string;
  origin?: string[];
  namespace?: string;
  audience?: string[];
  json?: boolean;
}

/** The console's data folder in its pod (an emptyDir): only its session key lives there. */
export const DEFAULT_CONSOLE_DATA = "/var/lib/openfief-console";

function repeatable(v: string, prev: string[] = []): string[] {
  return [...prev, v];
}

export function register(program: Command): void {
  program
    .command("console")
    .description("serve the console and the API of a cluster over its shared log (sign-in with the cluster's tokens)")
    .option("--store <location>", "the cluster's log: a postgres:// URL (default: $OPENFIEF_STORE or the file $OPENFIEF_STORE_FILE names)")
    .option("--store-file <file>", "a file holding the log's location (a Secret mounted as a file)")
    .option("--kubeconfig <file>", "use this kubeconfig instead of in-cluster credentials")
    .option("--data <dir>", "folder of the console's session key (private to the process)", DEFAULT_CONSOLE_DATA)
    .option("--listen <host:port>", "where the API and console listen (beyond loopback only with --tls-cert and --tls-key)", "127.0.0.1:4780")
    .option("--tls-cert <file>", "the console's TLS certificate (PEM)")
    .option("--tls-key <file>", "the console's TLS private key (PEM)")
    .option("--origin <url>", "an origin the console is reached at, such as https://openfief.example (repeatable)", repeatable)
    .option("--namespace <ns>", "the namespace of the Plugin and PluginGrant resources", "openfief")
    .option("--audience <aud>", "an audience sign-in tokens must be for (repeatable; default: the API server's own)", repeatable)
    .option("--json", "log JSON lines")
    .action(async (o: ConsoleOptions) => {
      const { host, port } = parseListen(o.listen);
      const tls = tlsOf(o);
      // The server is heavy: loaded only when this command runs; a listener beyond loopback needs TLS.
      const { checkListen } = await import("../../server/index.js");
      checkListen({ host, ...(tls === undefined ? {} : { tls }) });
      const store = storeLocationOf({ store: o.store, storeFile: o.storeFile });
      if (store === null) throw new AppError("usage", "give the cluster's log: --store postgres://…, --store-file FILE, $OPENFIEF_STORE or $OPENFIEF_STORE_FILE", "store");
      const logger = cliLogger(o.json === undefined ? {} : { json: o.json });
      // The Kubernetes client and the server are heavy: loaded only when this command runs.
      const { loadKubeConfig, KubeError } = await import("../../kube/index.js");
      const { startClusterConsole } = await import("../../compose/index.js");
      let kubeConfig;
      try {
        kubeConfig = loadKubeConfig(o.kubeconfig);
      } catch (err) {
        if (err instanceof KubeError) throw new CliError(`console refused to start: ${err.message}`, 1);
        throw err;
      }
      const running = await startClusterConsole({
        store,
        kubeConfig,
        dataDir: o.data,
        server: { host, port, ...(tls === undefined ? {} : { tls }), ...(o.origin === undefined ? {} : { origins: o.origin }) },
        ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
        ...(o.audience === undefined ? {} : { audiences: o.audience }),
        logger,
      });
      print(`console on ${running.origin} (listening on ${running.url}); sign in with a token the cluster accepts`);
      await new Promise<void>((resolve) => {
        process.once("SIGTERM", resolve);
        process.once("SIGINT", resolve);
      });
      await running.stop();
    });
}
