/**
 * The witness's data folder: its key (`witness.key`), what it cosigned per log (`state/`), and the
 * lock that keeps a second witness process off it (`witness.lock`). Two processes on one folder
 * would each check requests against their own memory of the state and could cosign two roots for
 * one size, so the second is refused. The folder is its owner's only (0700) and the key file 0600:
 * whoever reads the key can cosign in the witness's name.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, existsSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync, fsyncSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { formatSignerKey, isValidKeyName, KeyType, parseCosignerKey } from "../tlog/index.js";
import type { CosignatureSigner } from "../tlog/index.js";
import { fail, ok, WitnessErrorCode } from "./errors.js";
import type { Result } from "./errors.js";

export const DEFAULT_WITNESS_DIR = ".openfief-witness";
export const KEY_FILE = "witness.key";
export const STATE_DIR = "state";
export const LOCK_FILE = "witness.lock";
const FOLDER_MODE = 0o700;
const KEY_MODE = 0o600;
/** A key file is one line of about 100 bytes: a larger one is not ours. */
const MAX_KEY_FILE_BYTES = 4096;

const errno = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? "error";
const badFolder = (dir: string, why: string) => fail<never>(WitnessErrorCode.BadDataFolder, dir, `data folder ${JSON.stringify(dir)} ${why}`);

/** Makes a folder its owner's only, whatever the umask; says so when it tightened one that was not. */
function privateFolder(path: string): Result<string | null> {
  try {
    if (existsSync(path) && !statSync(path).isDirectory()) return badFolder(path, "is not a folder");
    mkdirSync(path, { recursive: true, mode: FOLDER_MODE });
    const st = lstatSync(path);
    if (!st.isDirectory()) return badFolder(path, "is not a folder");
    const mode = st.mode & 0o777;
    if (mode === FOLDER_MODE) return ok(null);
    chmodSync(path, FOLDER_MODE);
    return ok((mode & 0o077) === 0 ? null : `made ${path} private to its owner (it was ${mode.toString(8).padStart(4, "0")})`);
  } catch (err) {
    return badFolder(path, `cannot be made or opened (${errno(err)})`);
  }
}

/** The host name as a witness name: `<host>/witness`, lowercased; `null` when it makes no key name. */
export function defaultWitnessName(host: string = hostname()): string | null {
  const name = `${host.toLowerCase()}/witness`;
  return host.length > 0 && isValidKeyName(name) ? name : null;
}

/** Checks a witness name (`--name`): a key name of signed notes. */
export function checkWitnessName(name: string, flag = "--name"): Result<string> {
  return isValidKeyName(name)
    ? ok(name)
    : fail(WitnessErrorCode.BadName, flag, `${flag} ${JSON.stringify(name)}: a witness name is a key name: not empty, no spaces, plus signs or control characters (e.g. witness.example.com/w1)`);
}

function readKey(path: string): Result<CosignatureSigner> {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    return fail(WitnessErrorCode.BadKeyFile, path, `cannot read the witness key ${path} (${errno(err)})`);
  }
  if (!st.isFile() || st.size > MAX_KEY_FILE_BYTES) return fail(WitnessErrorCode.BadKeyFile, path, `${path} is not a witness key file`);
  if ((st.mode & 0o077) !== 0) {
    return fail(WitnessErrorCode.BadKeyFile, path, `the witness key ${path} may be read by others (mode ${(st.mode & 0o777).toString(8).padStart(4, "0")}): run chmod 600 ${path}`);
  }
  const text = readFileSync(path, "latin1");
  const signer = text.endsWith("\n") ? parseCosignerKey(text.slice(0, -1)) : null;
  // The key text is a secret: the refusal names the file, never what it holds.
  if (signer === null || !signer.ok) return fail(WitnessErrorCode.BadKeyFile, path, `${path} is not a witness key (PRIVATE+KEY+<name>+<key ID>+<base64>, type 0x04, then a newline)`);
  return signer;
}

/** Writes a new key for `name`, or leaves the one another process wrote first; never overwrites one. */
function createKey(dir: string, name: string): Result<void> {
  const path = join(dir, KEY_FILE);
  const tmp = join(dir, `${KEY_FILE}.${process.pid}.tmp`);
  const text = formatSignerKey(name, KeyType.CosignatureV1, randomBytes(32));
  if (!text.ok) return checkWitnessName(name) as Result<never>;
  try {
    const fd = openSync(tmp, "w", KEY_MODE);
    try {
      writeFileSync(fd, `${text.value}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(tmp, KEY_MODE);
    try {
      // link() refuses an existing name: of two processes making a key at once, one wins.
      linkSync(tmp, path);
    } catch (err) {
      if (errno(err) !== "EEXIST") throw err;
    }
    syncFolder(dir);
    return ok(undefined);
  } catch (err) {
    return badFolder(dir, `cannot hold a new witness key (${errno(err)})`);
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // Already gone.
    }
  }
}

/** Syncs a folder's entries (a rename or link in it) to disk. */
export function syncFolder(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** An opened data folder: the witness's key, and what was said on opening it. */
export interface WitnessFolder {
  readonly dir: string;
  readonly stateDir: string;
  readonly signer: CosignatureSigner;
  /** Whether this opening made the key. */
  readonly created: boolean;
  /** Lines to say on standard error (a folder tightened, a key made). */
  readonly notes: readonly string[];
  /** The folder's lock, when it was asked for: released by the caller. */
  readonly lock: FolderLock | null;
}

/**
 * Opens the data folder, making it, its state folder and its key when missing. `name` is the
 * `--name` asked for, if any: a folder's key keeps the name it was made with (a cosigner's name is
 * part of its identity), so another one is refused. A folder with a key but no state folder is
 * refused too: its record of what it cosigned is gone, and starting afresh could cosign a root that
 * contradicts one it already signed. With `lock`, the folder is first taken for this process.
 */
export function openWitnessFolder(dir: string, name: string | undefined, options: { lock: boolean }): Result<WitnessFolder> {
  const folder = privateFolder(dir);
  if (!folder.ok) return folder;
  const lock = options.lock ? lockWitnessFolder(dir) : ok(null);
  if (!lock.ok) return lock;
  const opened = openLocked(dir, name, lock.value);
  if (!opened.ok) lock.value?.release();
  else if (folder.value !== null) return ok({ ...opened.value, notes: [folder.value, ...opened.value.notes] });
  return opened;
}

function openLocked(dir: string, name: string | undefined, lock: FolderLock | null): Result<WitnessFolder> {
  const notes: string[] = [];
  const keyPath = join(dir, KEY_FILE);
  const stateDir = join(dir, STATE_DIR);
  const hadKey = existsSync(keyPath);
  if (hadKey && !existsSync(stateDir)) {
    return fail(WitnessErrorCode.CorruptState, stateDir, `${dir} holds a witness key but no ${STATE_DIR}/ folder: what it cosigned is lost, so it refuses to start (restore ${stateDir}, or start a new witness in another folder)`);
  }
  const state = privateFolder(stateDir);
  if (!state.ok) return state;
  if (!hadKey) {
    const chosen = name ?? defaultWitnessName();
    if (chosen === null) return fail(WitnessErrorCode.BadName, "--name", `the host name ${JSON.stringify(hostname())} does not make a witness name: give one with --name`);
    const checked = checkWitnessName(chosen);
    if (!checked.ok) return checked;
    const made = createKey(dir, chosen);
    if (!made.ok) return made;
  }
  const signer = readKey(keyPath);
  if (!signer.ok) return signer;
  if (name !== undefined && signer.value.name !== name) {
    return fail(WitnessErrorCode.NameMismatch, "--name", `the witness key in ${dir} is named ${signer.value.name}, not ${name}: a witness keeps its name (use another --data for another witness)`);
  }
  if (!hadKey) notes.push(`made a new witness key in ${keyPath}`);
  return ok({ dir, stateDir, signer: signer.value, created: !hadKey, notes, lock });
}

/** Whether a process is running (a signal 0 it may not send still means it exists). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) === "EPERM";
  }
}

/** A held folder lock. */
export interface FolderLock {
  release(): void;
}

interface Holder {
  readonly pid: number;
  readonly host: string;
  readonly since: string;
}

function readHolder(path: string): Holder | null {
  try {
    const v = JSON.parse(readFileSync(path, "utf8")) as Partial<Holder>;
    return typeof v.pid === "number" && typeof v.host === "string" && typeof v.since === "string" ? { pid: v.pid, host: v.host, since: v.since } : null;
  } catch {
    return null;
  }
}

/**
 * Takes the folder for this process, or refuses naming the witness that holds it. A lock left by
 * a process that is gone (a crash, a SIGKILL) is taken over.
 */
export function lockWitnessFolder(dir: string, now: () => Date = () => new Date()): Result<FolderLock> {
  const path = join(dir, LOCK_FILE);
  const me: Holder = { pid: process.pid, host: hostname(), since: now().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, "wx", KEY_MODE);
      writeFileSync(fd, `${JSON.stringify(me)}\n`);
      closeSync(fd);
      return ok({
        release() {
          try {
            if (readHolder(path)?.pid === me.pid) unlinkSync(path);
          } catch {
            // Already gone.
          }
        },
      });
    } catch (err) {
      if (errno(err) !== "EEXIST") return badFolder(dir, `cannot hold its lock ${path} (${errno(err)})`);
    }
    const holder = readHolder(path);
    if (holder !== null && holder.host !== me.host) {
      return fail(WitnessErrorCode.FolderInUse, path, `${dir} is in use by a witness on ${holder.host} (pid ${holder.pid}, since ${holder.since}): stop it there, or remove ${path} if it is gone`);
    }
    if (holder !== null && alive(holder.pid)) {
      return fail(WitnessErrorCode.FolderInUse, path, `${dir} is in use by another witness (pid ${holder.pid}, since ${holder.since}): stop it, or pass another --data`);
    }
    try {
      unlinkSync(path);
    } catch {
      // Another process took it over first; the next attempt says who.
    }
  }
  return fail(WitnessErrorCode.FolderInUse, path, `cannot take ${path}: another process keeps taking it`);
}
