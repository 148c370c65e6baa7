/**
 * The log's signing key (docs/adr/0142): an Ed25519 signed-note signer whose name is the origin of
 * every checkpoint of the log. Read from the file `--log-key` or `OPENFIEF_LOG_KEY_FILE` names (the
 * cluster's Secret mount), else from the data folder's `log-key`, made there (0600) on first use.
 * The file holds the C2SP signer key text, `PRIVATE+KEY+<name>+<key ID>+<base64>`, and a newline;
 * what is published is its verifier key, `<name>+<key ID>+<base64>`. No message repeats the key.
 */
import { hash, randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatSignerKey, isValidKeyName, KeyType, noteSignerFromSeed, parseSignerKey } from "../tlog/index.js";
import type { Ed25519NoteSigner } from "../tlog/index.js";
import { AppError } from "./errors.js";
import { LOG_KEY_ENV, LOG_KEY_FILE } from "./log-key-file.js";

export { LOG_KEY_ENV, LOG_KEY_FILE } from "./log-key-file.js";
/** A key file is one line: never read more. */
const MAX_KEY_FILE = 1024;

/** The log's key, and where it came from. */
export interface LogKey {
  readonly signer: Ed25519NoteSigner;
  /** The checkpoints' origin line: the key's name. */
  readonly origin: string;
  /** `<name>+<key ID>+<base64>`: what anyone checks checkpoints with. */
  readonly verifierKey: string;
  /** The file it was read from. */
  readonly path: string;
  /** Whether this call made it. */
  readonly created: boolean;
}

/** The name a key made in a data folder gets: `openfief/log/` and 16 hex digits of SHA-256 of its public key. */
export function defaultLogName(publicKey: Uint8Array): string {
  return `openfief/log/${hash("sha256", publicKey, "hex").slice(0, 16)}`;
}

/** Makes a new signer key text (the name defaults to {@link defaultLogName}). */
export function newLogSignerKey(name?: string): string {
  const seed = randomBytes(32);
  const probe = noteSignerFromSeed("probe", seed);
  if (!probe.ok) throw new AppError("internal", probe.error.message);
  const n = name ?? defaultLogName(probe.value.publicKey);
  if (!isValidKeyName(n)) throw new AppError("usage", `a log name has no spaces, plus signs or control characters: ${JSON.stringify(n)}`, "name");
  const text = formatSignerKey(n, KeyType.Ed25519, seed);
  if (!text.ok) throw new AppError("usage", text.error.message, "name");
  return text.value;
}

/** Reads a key file: its owner's only, one signer key line. */
export function readLogKey(path: string): LogKey {
  let size: number;
  let mode: number;
  let mounted: boolean;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error("not a file");
    size = st.size;
    mode = st.mode & 0o777;
    mounted = st.uid === 0 && process.getuid?.() !== 0;
  } catch (err) {
    throw new AppError("bad_setting", `cannot read the log key ${path} (${err instanceof Error && "code" in err ? String(err.code) : "not a file"})`);
  }
  // A Secret mounted in a pod is root's, readable by the pod's group (fsGroup makes 0400 into 0440): that group may read it.
  if ((mode & (mounted ? 0o037 : 0o077)) !== 0) throw new AppError("bad_setting", `the log key ${path} may be read by others (mode ${mode.toString(8).padStart(4, "0")}): run chmod 600 ${path}`);
  if (size > MAX_KEY_FILE) throw new AppError("bad_setting", `${path} is not a log key (over ${MAX_KEY_FILE} bytes)`);
  const text = readFileSync(path, "latin1").replace(/\r?\n$/, "");
  const signer = parseSignerKey(text);
  // The key text is a secret: the refusal names the file, never what it holds.
  if (!signer.ok) throw new AppError("bad_setting", `${path} is not a log key (PRIVATE+KEY+<name>+<key ID>+<base64> of an Ed25519 signer, then a newline): ${signer.error.code}`);
  return { signer: signer.value, origin: signer.value.name, verifierKey: signer.value.verifierKey, path, created: false };
}

/** Writes a new key at `path` (0600) unless one is there; never overwrites one. Returns whether it wrote. */
export function writeNewLogKey(path: string, name?: string): boolean {
  if (existsSync(path)) return false;
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeFileSync(fd, `${newLogSignerKey(name)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    // link() refuses an existing name: of two processes making a key at once, one wins.
    linkSync(tmp, path);
    return true;
  } catch (err) {
    if (err instanceof Error && "code" in err && err.code === "EEXIST") return false;
    throw new AppError("bad_setting", `cannot write the log key ${path} (${err instanceof Error && "code" in err ? String(err.code) : "failed"})`);
  } finally {
    try { unlinkSync(tmp); } catch { /* already gone */ }
  }
}

/** Where the log's key is looked for. */
export interface LogKeySource {
  /** `--log-key FILE`: used as is, never made. */
  readonly file?: string;
  /** The environment ({@link LOG_KEY_ENV}). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The data folder, where a key is made on first use when no file is named. */
  readonly dataDir?: string;
  /** Whether to make the data folder's key when it is missing (default true); false refuses (`not_found`). */
  readonly create?: boolean;
}

/** The log's key: the named file, else the environment's, else the data folder's (made when missing). */
export function loadLogKey(source: LogKeySource): LogKey {
  const named = source.file ?? source.env?.[LOG_KEY_ENV];
  if (named !== undefined && named !== "") return readLogKey(named);
  if (source.dataDir === undefined) throw new AppError("bad_setting", `no log key: name one with --log-key or ${LOG_KEY_ENV}`);
  const path = join(source.dataDir, LOG_KEY_FILE);
  if (source.create === false && !existsSync(path)) throw new AppError("not_found", `no log key in ${source.dataDir} (openfief up makes one): name one with --log-key or ${LOG_KEY_ENV}`);
  const created = source.create === false ? false : writeNewLogKey(path);
  return { ...readLogKey(path), created };
}
