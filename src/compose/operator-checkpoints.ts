/**
 * Signed checkpoints in the cluster (docs/adr/0144): the operator's leader signs a checkpoint of
 * the cluster's one log every N events it appends and every T seconds while the log grows (every
 * component appends to it), with the log's key from the Secret `OPENFIEF_LOG_KEY_FILE` names, and
 * hands each new checkpoint to the witnesses `--witness` names, as `openfief up` does. A standby
 * signs nothing and asks no witness; it takes over both when it wins the Lease. Two replicas that
 * overlap for a moment cannot sign two roots for one size: a size is stored once (the store
 * refuses a second), and the second signer gets the stored one back.
 *
 * The key never comes from the data folder here: each replica's folder is its own, and two keys
 * signing one log would make every checkpoint of the other unverifiable. Without a key the
 * operator runs and says, once, that it signs nothing; with `--witness` and no key it refuses.
 */
import { existsSync } from "node:fs";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { CheckpointSchedule } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import type { OperatorCheckpointSettings } from "../kube/index.js";
import { AppError, LOG_KEY_ENV, parseWitnessTarget, readLogKey, Witnesses } from "../app/index.js";
import type { LogKey } from "../app/index.js";

/** The operator's running checkpoints. */
export interface OperatorCheckpoints {
  readonly key: LogKey;
  readonly schedule: CheckpointSchedule;
  readonly witnesses: Witnesses | null;
  /** Stops signing, then the witnesses' requests under way. */
  stop(): Promise<void>;
}

/** What {@link startOperatorCheckpoints} needs beside the log and the settings. */
export interface OperatorCheckpointContext {
  /** Whether this replica leads now (asked before each checkpoint). */
  readonly isLeader: () => boolean;
  readonly logger: Logger;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly registry?: Registry;
}

/** Checks `--witness` texts as the operator starts (one line each, `usage`). */
export function checkOperatorWitnesses(texts: readonly string[]): void {
  for (const t of texts) parseWitnessTarget(t);
}

/**
 * Starts the leader's checkpoints over `store`, or returns null when there is no key (said once)
 * or `settings` is null (`--no-checkpoints`). Refuses (`bad_setting`) a key file that is there
 * but is not a private log key, and `--witness` without a key.
 */
export async function startOperatorCheckpoints(store: EventLog, settings: OperatorCheckpointSettings | null, ctx: OperatorCheckpointContext): Promise<OperatorCheckpoints | null> {
  if (settings === null) return null;
  const targets = settings.witnesses.map(parseWitnessTarget);
  const named = settings.keyFile ?? ctx.env?.[LOG_KEY_ENV];
  // The manifests mount the key's Secret as optional: a cluster without it runs, unsigned.
  if (named === undefined || named === "" || (settings.keyFile === undefined && !existsSync(named))) {
    const where = named === undefined || named === "" ? `--log-key or $${LOG_KEY_ENV}` : `${named} (the Secret openfief-log-key)`;
    if (targets.length > 0) throw new AppError("bad_setting", `--witness needs the log's key to sign checkpoints: none at ${where}`, "witness");
    ctx.logger.warn({}, `no log key at ${where}: the operator signs no checkpoints of the log's Merkle tree`);
    return null;
  }
  const key = readLogKey(named);
  const log = ctx.logger.child({ component: "checkpoints" });
  const witnesses = targets.length === 0 ? null : await Witnesses.start(store, targets, { logger: log, ...(ctx.registry === undefined ? {} : { registry: ctx.registry }) });
  const schedule = new CheckpointSchedule(store, key.signer, {
    every: settings.every,
    intervalMs: settings.intervalMs,
    active: ctx.isLeader,
    onCheckpoint: (cp) => {
      log.debug({ size: cp.size, seq: cp.seq }, "signed a checkpoint");
      // The newest checkpoint, signed here or found (another replica's): only the leader submits.
      witnesses?.submit(cp);
    },
    onError: (err) => { log.error({ err: err instanceof Error ? err.message : String(err) }, "signing a checkpoint failed; trying again"); },
  });
  log.info({ origin: key.origin, key: key.verifierKey, witnesses: targets.length }, `the leader signs checkpoints of the log's Merkle tree as ${key.origin}`);
  schedule.trigger();
  let stopped: Promise<void> | null = null;
  return {
    key,
    schedule,
    witnesses,
    stop() {
      stopped ??= (async () => {
        await schedule.stop();
        await witnesses?.stop();
      })();
      return stopped;
    },
  };
}
