/**
 * The name of the embedded egress signing key's file in the data folder, apart from the key's
 * code: the data folder lists its private files by name, and that must not load a JWT library.
 */
export const EGRESS_KEY_FILE = "egress-signing-key.json";
