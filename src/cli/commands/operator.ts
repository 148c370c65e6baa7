/**
 * `openfief operator [--kubeconfig FILE] [--data DIR] [--health-port N]`: cluster mode. Reads
 * in-cluster credentials (or a kubeconfig), the owner's trusted signers (refusing to start when
 * they are invalid), follows Plugin and PluginGrant resources, leads through the
 * `openfief-operator` Lease, serves `/healthz` and `/readyz`, and stops gracefully on SIGTERM.
 *
 * The reconciler is built by a factory the command is registered with
 * (`registerOperator(factory)`), so this module stays free of the reconciler's internals.
 */
import type { Command } from "commander";
import { pino } from "pino";
import { CliError } from "../cli-error.js";
import type { ReconcilerFactory } from "../../kube/index.js";

interface Options {
  kubeconfig?: string;
  data: string;
  healthPort: string;
  identity?: string;
  leaderElectLeaseDuration: string;
  leaderElectRenewDeadline: string;
  leaderElectRetryPeriod: string;
  json?: boolean;
}

/** The default data folder inside the operator's pod (the PVC's mount). */
export const DEFAULT_OPERATOR_DATA = "/var/lib/openfief";
/** The default health port. */
export const DEFAULT_HEALTH_PORT = 8081;

/** The leader election's timing flags, in seconds, checked: a renew deadline below the lease duration. */
function leaseTimes(o: Options): { leaseDurationSeconds: number; renewDeadlineSeconds: number; retryPeriodSeconds: number } {
  const seconds = (flag: string, text: string): number => {
    const n = Number(text);
    if (!/^\d+(\.\d+)?$/.test(text) || n <= 0 || n > 3600) throw new CliError(`--leader-elect-${flag} must be a number of seconds above 0 and at most 3600, not ${JSON.stringify(text)}`);
    return n;
  };
  const leaseDurationSeconds = seconds("lease-duration", o.leaderElectLeaseDuration);
  const renewDeadlineSeconds = seconds("renew-deadline", o.leaderElectRenewDeadline);
  const retryPeriodSeconds = seconds("retry-period", o.leaderElectRetryPeriod);
  if (renewDeadlineSeconds >= leaseDurationSeconds) throw new CliError("--leader-elect-renew-deadline must be below --leader-elect-lease-duration");
  if (retryPeriodSeconds >= renewDeadlineSeconds) throw new CliError("--leader-elect-retry-period must be below --leader-elect-renew-deadline");
  return { leaseDurationSeconds, renewDeadlineSeconds, retryPeriodSeconds };
}

/** A `register` for `openfief operator` driving the reconciler `factory` builds. */
export function registerOperator(factory: ReconcilerFactory): (program: Command) => void {
  return (program) => {
    program
      .command("operator")
      .description("run the operator in a Kubernetes cluster (in-cluster credentials unless --kubeconfig)")
      .option("--kubeconfig <file>", "use this kubeconfig instead of in-cluster credentials")
      .option("--data <dir>", "folder of the event store (on the operator's volume); with $OPENFIEF_STORE or $OPENFIEF_STORE_FILE (a Secret) the log is there and this folder keeps only settings", DEFAULT_OPERATOR_DATA)
      .option("--health-port <n>", "port of /healthz and /readyz", String(DEFAULT_HEALTH_PORT))
      .option("--identity <id>", "this replica's identity in the Lease (default: $POD_NAME, then the host name)")
      .option("--leader-elect-lease-duration <s>", "seconds a leader's Lease lasts without renewal: a standby takes over this long after the leader dies", "15")
      .option("--leader-elect-renew-deadline <s>", "seconds a leader that cannot renew keeps leading (below the lease duration)", "10")
      .option("--leader-elect-retry-period <s>", "seconds between tries to acquire or renew the Lease", "2")
      .option("--json", "log JSON lines (the default; kept for symmetry with other commands)")
      .action(async (opts: Options) => {
        const lease = leaseTimes(opts);
        const port = Number(opts.healthPort);
        if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliError(`--health-port must be a port number, not ${JSON.stringify(opts.healthPort)}`);
        const log = pino({ base: null, level: process.env["OPENFIEF_LOG_LEVEL"] ?? "info" });
        const controller = new AbortController();
        const stop = (): void => controller.abort();
        process.once("SIGTERM", stop);
        process.once("SIGINT", stop);
        // The Kubernetes client is heavy: loaded only when this command runs.
        const { KubeError, runOperator } = await import("../../kube/index.js");
        try {
          await runOperator(
            {
              ...(opts.kubeconfig === undefined ? {} : { kubeconfig: opts.kubeconfig }),
              ...(opts.identity === undefined ? {} : { identity: opts.identity }),
              dataDir: opts.data,
              healthPort: port,
              ...lease,
              log,
              signal: controller.signal,
            },
            factory,
          );
        } catch (err) {
          if (err instanceof KubeError) throw new CliError(`operator refused to start: ${err.message}`, 1);
          throw new CliError(`operator failed: ${err instanceof Error ? err.message : String(err)}`, 1);
        } finally {
          process.off("SIGTERM", stop);
          process.off("SIGINT", stop);
        }
      });
  };
}

/** `openfief operator` without a reconciler wired in: explains instead of running blind. */
export const register = registerOperator(async () => {
  throw new CliError("this build has no cluster reconciler wired in (registerOperator(factory) in commands/index.ts)", 1);
});
