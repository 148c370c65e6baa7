/**
 * # The witness (`src/witness`)
 *
 * A C2SP tlog-witness as a running service: it cosigns a log's checkpoint only when it is
 * consistent with the last one it cosigned for that log, so a log cannot show two people two
 * histories without one witness noticing. The decision is `src/tlog`'s ({@link decideAddCheckpoint}
 * there); this room adds what makes it a service: the HTTP face (`POST /add-checkpoint`,
 * `GET /<origin hash>/checkpoint`) with its limits, the state per log written durably before a
 * cosignature leaves the process, one request at a time per log, the data folder with the
 * witness's key and its lock, and the logs it is configured with. It imports `src/tlog` and node
 * built-ins only; it does not use the event log. Choices the specification leaves open are in
 * docs/adr/0135-the-witness-service.md.
 */

/** Errors as values: codes, paths, results. */
export { WitnessErrorCode } from "./errors.js";
export type { WitnessError, Result } from "./errors.js";

/** The logs a witness cosigns for: `<origin> <verifier key>` lines from flags or a file, strictly parsed. */
export { LOGS_CAPS, parseLogLine, collectLogs, logsFileLines } from "./logs-config.js";
export type { LogConfig, LogLine } from "./logs-config.js";

/** The data folder: its key (made on first use, 0600), its lock, the name a key keeps. */
export { DEFAULT_WITNESS_DIR, KEY_FILE, STATE_DIR, LOCK_FILE, defaultWitnessName, checkWitnessName, openWitnessFolder, lockWitnessFolder } from "./folder.js";
export type { WitnessFolder, FolderLock } from "./folder.js";

/** The state per log, durable before an answer, updated one request at a time per log. */
export { STATE_FORMAT, StateStore, originHash, encodeState, decodeState } from "./state-store.js";
export type { CosignedState, Step } from "./state-store.js";

/** One at a time per key, other keys alongside. */
export { OriginQueue } from "./origin-queue.js";

/** The witness without HTTP: an add-checkpoint body in, the specification's answer out. */
export { WitnessService } from "./service.js";
export type { WitnessAnswer, WitnessServiceOptions } from "./service.js";

/** Opening a witness on a data folder; the verifier key of a folder's witness. */
export { openWitness, witnessVerifierKey } from "./open.js";
export type { WitnessSetup, OpenedWitness } from "./open.js";

/** The HTTP face, its limits and its access lines. */
export { DEFAULT_LIMITS, listenWitness } from "./http.js";
export type { HttpLimits, AccessEntry, AccessLog, ListeningWitness } from "./http.js";
