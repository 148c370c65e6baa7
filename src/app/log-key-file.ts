/**
 * Where the log's signing key is looked for (docs/adr/0142), apart from the key's code: the data
 * folder's layout names the file without loading the transparency-log library that reads it, so a
 * command that only reads the log does not compile it (ADR 0200).
 */

/** The key's file in a data folder. */
export const LOG_KEY_FILE = "log-key";
/** The environment variable naming a key file (the cluster mounts its Secret there). */
export const LOG_KEY_ENV = "OPENFIEF_LOG_KEY_FILE";
