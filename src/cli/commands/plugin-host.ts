/**
 * `openfief plugin-host`: the cluster's plugin host, as the `openfief-plugin-host` Deployment
 * runs it (deploy/base/plugin-host.yaml; ADRs 0080, 0081). Follows the `openfief-plugin-host`
 * ConfigMap, runs the WebAssembly plugins it lists and serves their ConnectorService to the core.
 * In-cluster credentials unless --kubeconfig. Logs JSON; stops on SIGTERM or an interrupt.
 */
import type { Command } from "commander";
import { pino } from "pino";
import { storeLocationOf, type StoreLocation } from "../../app/index.js";
import { startClusterPluginHost } from "../../compose/index.js";
import { CliError } from "../cli-error.js";
import { parseListen } from "./egress.js";
import { SA_JWKS_DIR } from "../../plugins/index.js";

interface Options {
  listen: string;
  healthPort: string;
  store?: string;
  storeFile?: string;
  egressProxy: string;
  saJwksDir: string;
  coreSubject: string;
  kubeconfig?: string;
  ociLayout: string[];
  insecureRegistry: string[];
}

/** The host's data folder inside its pod (the PVC's mount). */
export const DEFAULT_PLUGIN_HOST_DATA = "/var/lib/openfief-plugin-host";

const collect = (value: string, previous: string[]): string[] => [...previous, value];

function checked(opts: Options): { listen: { host: string; port: number }; health: number; proxy: string } {
  const health = Number(opts.healthPort);
  if (!Number.isInteger(health) || health < 0 || health > 65535) throw new CliError(`--health-port must be a port number, not ${JSON.stringify(opts.healthPort)}`);
  let proxy: URL;
  try {
    proxy = new URL(opts.egressProxy);
  } catch {
    throw new CliError(`--egress-proxy must be a URL such as http://10.96.0.30:4750, not ${JSON.stringify(opts.egressProxy)}`);
  }
  if (proxy.protocol !== "http:" || proxy.username !== "" || proxy.password !== "") throw new CliError("--egress-proxy must be http://host:port, without credentials (each call carries its plugin's token)");
  if (opts.coreSubject === "") throw new CliError("--core-subject must name the core's ServiceAccount");
  return { listen: parseListen(opts.listen), health, proxy: proxy.origin };
}

export function register(program: Command): void {
  program
    .command("plugin-host")
    .description("run the cluster's plugin host: the WebAssembly plugins of the openfief-plugin-host ConfigMap")
    .option("--listen <addr>", "address the ConnectorService is served on", ":8080")
    .option("--health-port <n>", "port of /healthz, /readyz and /metrics", "8081")
    .option("--store <log>", `the event log and its modules: postgres://USER:PASSWORD@HOST:PORT/DATABASE (the cluster's one log), sqlite:PATH, or a folder of the host's own (on its volume; default: $OPENFIEF_STORE, $OPENFIEF_STORE_FILE, then ${DEFAULT_PLUGIN_HOST_DATA})`)
    .option("--store-file <file>", "a file holding --store's value, such as a Secret's key mounted as a file")
    .option("--egress-proxy <url>", "the egress proxy's Service, by address", "http://10.96.0.30:4750")
    .option("--sa-jwks-dir <dir>", "the mounted openfief-sa-jwks ConfigMap (issuer, jwks.json)", SA_JWKS_DIR)
    .option("--core-subject <user>", "the core's ServiceAccount username, the only caller", "system:serviceaccount:openfief:openfief-core")
    .option("--kubeconfig <file>", "use this kubeconfig instead of in-cluster credentials")
    .option("--oci-layout <dir>", "an OCI image layout searched for modules before any registry (repeatable)", collect, [])
    .option("--insecure-registry <host:port>", "a registry reached over plain HTTP (repeatable; tests)", collect, [])
    .action(async (opts: Options) => {
      const at = checked(opts);
      const log = hostLog(opts);
      const logger = pino({ base: null, name: "plugin-host", level: process.env["OPENFIEF_LOG_LEVEL"] ?? "info" });
      // The Kubernetes client is heavy: loaded only when this command runs (startClusterPluginHost
      // loads the host itself the same way).
      const { loadKubeConfig } = await import("../../kube/index.js");
      let kc;
      try {
        kc = loadKubeConfig(opts.kubeconfig);
      } catch (err) {
        throw new CliError(`plugin-host refused to start: ${err instanceof Error ? err.message : String(err)}`, 1);
      }
      // Listening for the signals before anything starts: one that comes while the host starts
      // (after it said it serves) stops it as soon as it has started.
      let stop = (): void => undefined;
      const stopped = new Promise<void>((resolve) => {
        stop = () => {
          process.off("SIGTERM", stop);
          process.off("SIGINT", stop);
          resolve();
        };
        process.once("SIGTERM", stop);
        process.once("SIGINT", stop);
      });
      let host;
      try {
        host = await startClusterPluginHost({
          kc,
          dataDir: log.dataDir,
          store: log.store,
          listen: at.listen,
          health: { host: at.listen.host, port: at.health },
          egressProxy: at.proxy,
          jwksDir: opts.saJwksDir,
          coreSubject: opts.coreSubject,
          logger,
          ociLayouts: opts.ociLayout,
          insecureRegistries: opts.insecureRegistry,
        });
      } catch (err) {
        stop();
        throw new CliError(`plugin-host failed to start: ${err instanceof Error ? err.message : String(err)}`, 1);
      }
      await stopped;
      logger.info("shutting down");
      await host.close();
    });
}

/**
 * Where the host keeps its log and modules: a log `--store`, `--store-file`, `$OPENFIEF_STORE` or
 * `$OPENFIEF_STORE_FILE` names (`postgres://…` or `sqlite:PATH`), else the folder `--store` names
 * (as before logs could be named), else the default folder on its volume.
 */
function hostLog(opts: Options): { dataDir: string; store: StoreLocation | null } {
  const folder = opts.store !== undefined && !/^[A-Za-z][A-Za-z0-9+.-]*:/.test(opts.store);
  if (folder) {
    if (opts.storeFile !== undefined) throw new CliError("give --store or --store-file, not both");
    return { dataDir: opts.store ?? DEFAULT_PLUGIN_HOST_DATA, store: null };
  }
  return { dataDir: DEFAULT_PLUGIN_HOST_DATA, store: storeLocationOf({ store: opts.store, storeFile: opts.storeFile }) };
}
