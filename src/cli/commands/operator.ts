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
import type { OperatorCheckpointSettings, ReconcilerFactory } from "../../kube/index.js";

interface Options {
  kubeconfig?: string;
  data: string;
  healthPort: string;
  identity?: string;
  leaderElectLeaseDuration: string;
  leaderElectRenewDeadline: string;
  leaderElectRetryPeriod: string;
  json?: boolean;
  checkpoints?: boolean;
  checkpointEvery: string;
  checkpointInterval: string;
  logKey?: string;
  witness?: string[];
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

function repeatable(v: string, prev: string[] = []): string[] {
  return [...prev, v];
}

/**
 * The checkpoints the leader signs (docs/adr/0144), from the flags; each `--witness` is handed to
 * `checkWitness`, which throws on a bad one (exit 2).
 */
function checkpointSettings(o: Options, checkWitness: (text: string) => void): OperatorCheckpointSettings | null {
  const every = Number(o.checkpointEvery);
  if (!/^[0-9]+$/.test(o.checkpointEvery) || every < 1 || every > 100_000_000) throw new CliError(`--checkpoint-every must be a whole number from 1 to 100000000, not ${JSON.stringify(o.checkpointEvery.slice(0, 32))}`);
  const interval = Number(o.checkpointInterval);
  if (!/^[0-9]+(\.[0-9]{1,3})?$/.test(o.checkpointInterval) || interval < 0.05 || interval > 86_400) throw new CliError(`--checkpoint-interval must be seconds from 0.05 to 86400, such as 1 or 0.5, not ${JSON.stringify(o.checkpointInterval.slice(0, 32))}`);
  const witnesses = o.witness ?? [];
  for (const w of witnesses) {
    try {
      checkWitness(w);
    } catch (err) {
      throw new CliError(err instanceof Error ? err.message : String(err));
    }
  }
  if (o.checkpoints === false) {
    if (witnesses.length > 0) throw new CliError("--witness asks witnesses to cosign checkpoints: it cannot go with --no-checkpoints");
    return null;
  }
  return { every, intervalMs: Math.round(interval * 1000), witnesses, ...(o.logKey === undefined ? {} : { keyFile: o.logKey }) };
}

/** What `registerOperator` may be given beside the factory. */
export interface OperatorCommandHooks {
  /** Checks one `--witness` text, throwing a one-line reason (default: takes any). */
  readonly checkWitness?: (text: string) => void;
}

/** A `register` for `openfief operator` driving the reconciler `factory` builds. */
export function registerOperator(factory: ReconcilerFactory, hooks: OperatorCommandHooks = {}): (program: Command) => void {
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
      .option("--checkpoint-every <n>", "the leader signs a checkpoint of the log's Merkle tree every n events it appends", "10000")
      .option("--checkpoint-interval <seconds>", "and every so many seconds while the log grows", "1")
      .option("--log-key <file>", "the log's signing key (PRIVATE+KEY+<name>+…; default: the file $OPENFIEF_LOG_KEY_FILE names, the Secret openfief-log-key); without one the operator signs nothing")
      .option("--no-checkpoints", "sign no checkpoints")
      .option("--witness <url>", "a C2SP tlog-witness each signed checkpoint is submitted to, optionally followed by a space and its verifier key (repeatable)", repeatable)
      .option("--json", "log JSON lines (the default; kept for symmetry with other commands)")
      .action(async (opts: Options) => {
        const lease = leaseTimes(opts);
        const checkpoints = checkpointSettings(opts, hooks.checkWitness ?? (() => undefined));
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
              checkpoints,
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
