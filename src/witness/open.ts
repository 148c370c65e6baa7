/**
 * Opening a witness on a data folder: the folder taken for this process, its key read (or made),
 * every state file read and checked, and the service that answers requests. Nothing listens yet.
 */
import { fail, ok, WitnessErrorCode } from "./errors.js";
import type { Result } from "./errors.js";
import { openWitnessFolder } from "./folder.js";
import type { LogConfig } from "./logs-config.js";
import { WitnessService } from "./service.js";
import { StateStore } from "./state-store.js";

export interface WitnessSetup {
  /** The data folder (`--data`). */
  readonly dir: string;
  /** The name asked for (`--name`); a folder's key keeps the name it was made with. */
  readonly name?: string;
  readonly logs: readonly LogConfig[];
  /** Now, in seconds since the Epoch (tests pass their own). */
  readonly clock?: () => number;
}

export interface OpenedWitness {
  readonly service: WitnessService;
  /** Lines to say on standard error (a key made, a folder tightened). */
  readonly notes: readonly string[];
  /** Lets the folder go (after the server has closed). */
  release(): void;
}

/** Opens the witness of `setup`, or the one reason it cannot start. */
export function openWitness(setup: WitnessSetup): Result<OpenedWitness> {
  if (setup.logs.length === 0) return fail(WitnessErrorCode.NoLogs, "--log", "no log to witness: give --log \"<origin> <verifier key>\" or --logs FILE");
  const folder = openWitnessFolder(setup.dir, setup.name, { lock: true });
  if (!folder.ok) return folder;
  const release = () => folder.value.lock?.release();
  const store = StateStore.open(folder.value.stateDir);
  if (!store.ok) {
    release();
    return store;
  }
  const service = new WitnessService({ signer: folder.value.signer, logs: setup.logs, store: store.value, ...(setup.clock === undefined ? {} : { clock: setup.clock }) });
  return ok({ service, notes: folder.value.notes, release });
}

/** The verifier key of the witness in `dir` (made, with its key, when the folder has none). */
export function witnessVerifierKey(dir: string, name: string | undefined): Result<{ verifierKey: string; notes: readonly string[] }> {
  const folder = openWitnessFolder(dir, name, { lock: false });
  return folder.ok ? ok({ verifierKey: folder.value.signer.verifierKey, notes: folder.value.notes }) : folder;
}
