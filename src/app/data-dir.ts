/**
 * A data folder: the event log (`openfief.db`), the settings `up` was started with
 * (`settings.json`), the embedded signing key, the JSON log of `up` (`openfief.log`), and the lock
 * that keeps a second `up` off it (`up.lock`). Two control planes on one folder would each act
 * on the other's events (issue 11: 108 events in 15 s), so the second one is refused and told who
 * holds the folder. The folder is its owner's only (0700, its files 0600, whatever the umask):
 * the log holds every grant and decision, the folder the keys that sign sessions and tokens.
 */
import { accessSync, chmodSync, closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join, resolve, sep } from "node:path";
import { openStore } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import { EGRESS_KEY_FILE } from "../egress/index.js";
import { processAlive } from "../reconciler/index.js";
import { AppError } from "./errors.js";
import { VIEW_KEYS_FILE } from "./view-settings.js";
import { LOG_KEY_FILE } from "./log-key-file.js";

/** The data folder when neither `--data` nor `OPENFIEF_DATA` names one. */
export const DEFAULT_DATA_DIR = ".openfief";

/** The SQLite file of a data folder. */
export function storeFile(dataDir: string): string {
  return join(dataDir, "openfief.db");
}

/** The JSON log `up` writes in its data folder. */
export function logFile(dataDir: string): string {
  return join(dataDir, "openfief.log");
}

/**
 * Opens (creating when missing) the event store of a data folder, the folder and its files its
 * owner's only; `said` hears what was tightened (a folder an older version made). The log file is
 * made 0600 before SQLite opens it: SQLite gives its `-wal` and `-shm` files the log's own mode.
 */
export async function openDataStore(dataDir: string, clock?: () => Date, said?: (text: string) => void): Promise<EventLog> {
  const tightened = openDataDir(dataDir);
  if (tightened.length > 0) said?.(tightenedText(tightened));
  privateDataFile(storeFile(dataDir));
  return openStore({ file: storeFile(dataDir), ...(clock === undefined ? {} : { clock }) });
}

/** The file in a data folder holding the session signing key (here, as the folder's key files are listed below). */
export const SESSION_KEY_FILE = "session-key.json";

/**
 * The folder's private keys. Opening the folder never loosens or tightens them: a key others
 * could read may be known, so each is refused by its own check (run chmod 600, or start over).
 */
const KEY_FILES: ReadonlySet<string> = new Set([SESSION_KEY_FILE, VIEW_KEYS_FILE, EGRESS_KEY_FILE, LOG_KEY_FILE]);

/** The data folder's mode: its owner's only. */
export const DATA_DIR_MODE = 0o700;
/** The mode of each file in it. */
export const DATA_FILE_MODE = 0o600;

/** A mode a data folder or one of its files had, and the one it was given. */
export interface Tightened {
  readonly path: string;
  readonly from: number;
  readonly to: number;
}

function octal(mode: number): string {
  return mode.toString(8).padStart(4, "0");
}

/**
 * Creates the data folder (0700) or opens it, and takes from it and from each file directly in it
 * (its private keys aside) whatever others may do: a folder made by an older version (0755, its
 * log and settings 0644) is tightened at open. Subfolders sit behind the folder's own mode.
 * Returns what it tightened, to be said.
 */
export function openDataDir(dataDir: string): Tightened[] {
  // mkdir's mode passes through the umask: a folder made now is given its mode exactly.
  if (mkdirSync(dataDir, { recursive: true, mode: DATA_DIR_MODE }) !== undefined) chmodSync(dataDir, DATA_DIR_MODE);
  const out: Tightened[] = [];
  const tighten = (path: string, want: number): void => {
    const st = lstatSync(path);
    const from = st.mode & 0o777;
    if ((from & 0o077) === 0 || st.isSymbolicLink()) return;
    // Another user's folder (read where it is readable) is left as it is: only its owner may change it.
    if (typeof process.getuid === "function" && st.uid !== process.getuid()) return;
    chmodSync(path, want);
    out.push({ path, from, to: want });
  };
  tighten(dataDir, DATA_DIR_MODE);
  for (const entry of readdirSync(dataDir, { withFileTypes: true })) {
    if (entry.isFile() && !KEY_FILES.has(entry.name)) tighten(join(dataDir, entry.name), DATA_FILE_MODE);
  }
  return out;
}

/** What {@link openDataDir} tightened, as a sentence. */
export function tightenedText(t: readonly Tightened[]): string {
  return `made the data folder private to its owner (it was made by an older version): ${t.map((x) => `${x.path} ${octal(x.from)} → ${octal(x.to)}`).join(", ")}`;
}

/** Creates a file of the data folder its owner's only (0600, whatever the umask), or leaves it as it is when it exists. */
export function privateDataFile(path: string): void {
  try {
    closeSync(openSync(path, "wx", DATA_FILE_MODE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return;
    throw err;
  }
  // open's mode passes through the umask too.
  chmodSync(path, DATA_FILE_MODE);
}

/** Kernel file systems: nothing can live there, and a recursive mkdir under /proc never returns. */
const PSEUDO_ROOTS = ["/proc", "/sys"];

function underPseudo(path: string): string | null {
  return PSEUDO_ROOTS.find((root) => path === root || path.startsWith(`${root}${sep}`)) ?? null;
}

/** The nearest part of `path` that exists (itself, a parent, …), resolved through symbolic links. */
function nearestExisting(path: string): { path: string; real: string } {
  for (let p = path; ; p = dirname(p)) {
    try {
      return { path: p, real: realpathSync(p) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== "ENOENT" && code !== "ENOTDIR") || dirname(p) === p) return { path: p, real: p };
    }
  }
}

/**
 * Refuses (`usage`, one line) a data folder no command can use, before anything opens or creates
 * it: a file, a folder it cannot read and write, or one under /proc or /sys (where creating it
 * would never return). `flag` names where the folder came from (`--data`, `$OPENFIEF_DATA`).
 */
export function checkDataDir(dataDir: string, flag = "--data"): void {
  const shown = JSON.stringify(dataDir.length > 200 ? `${dataDir.slice(0, 200)}…` : dataDir);
  const bad = (why: string): never => {
    throw new AppError("usage", `${flag} ${shown} ${why}: give a folder openfief can create or write, such as ${DEFAULT_DATA_DIR}`, "data");
  };
  const abs = resolve(dataDir);
  const near = nearestExisting(abs);
  const pseudo = underPseudo(abs) ?? underPseudo(near.real);
  if (pseudo !== null) bad(`is under ${pseudo}, which holds no files of its own`);
  let st;
  try {
    st = statSync(near.real);
  } catch (err) {
    return bad(`cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  if (!st.isDirectory()) bad(near.path === abs ? "is not a folder" : `is inside ${JSON.stringify(near.path)}, which is not a folder`);
  try {
    accessSync(near.real, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch {
    bad(near.path === abs ? "cannot be read and written by this user" : `cannot be created: ${JSON.stringify(near.path)} is not writable by this user`);
  }
}

/** Refuses a folder that holds no event log (a mistyped `--data` must not start a new control plane's files). */
export function requireLog(dataDir: string): void {
  if (!existsSync(storeFile(dataDir))) {
    throw new AppError("not_found", `no event log in ${dataDir}: run \`openfief up\` or \`openfief apply\` first, or check --data`);
  }
}

/** Who holds a data folder. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  readonly since: string;
  /** What it serves, for the message a second `up` gets ("egress 127.0.0.1:4750"). */
  readonly serving: readonly string[];
}

/** The lock files this process holds (a second control plane in one process is refused too). */
const HELD = new Set<string>();

/** A held lock; `update` records what the holder serves, `release` lets the folder go. */
export interface DataLock {
  update(serving: readonly string[]): void;
  release(): void;
}

function lockFile(dataDir: string): string {
  return join(dataDir, "up.lock");
}

function readHolder(path: string): LockHolder | null {
  try {
    const v = JSON.parse(readFileSync(path, "utf8")) as Partial<LockHolder>;
    if (typeof v.pid !== "number" || typeof v.host !== "string" || typeof v.since !== "string") return null;
    return { pid: v.pid, host: v.host, since: v.since, serving: Array.isArray(v.serving) ? v.serving.filter((s): s is string => typeof s === "string") : [] };
  } catch {
    return null;
  }
}

/**
 * Takes the data folder for this process, or refuses (`conflict`) naming the process that holds
 * it. A lock left by a process that is gone (a crash, a SIGKILL) is taken over.
 */
export function lockDataDir(dataDir: string, clock: () => Date = () => new Date()): DataLock {
  openDataDir(dataDir);
  const path = lockFile(dataDir);
  const me: LockHolder = { pid: process.pid, host: hostname(), since: clock().toISOString(), serving: [] };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeFileSync(fd, `${JSON.stringify(me)}\n`);
      closeSync(fd);
      HELD.add(path);
      return lockHandle(path, me);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = readHolder(path);
    if (holder !== null && holder.host === me.host && (holder.pid !== me.pid ? processAlive(holder.pid) : HELD.has(path))) {
      const what = holder.serving.length === 0 ? "" : `; ${holder.serving.join(", ")}`;
      throw new AppError("conflict", `${dataDir} is in use by openfief up (pid ${holder.pid}, since ${holder.since}${what}): stop it, or pass another --data`);
    }
    if (holder !== null && holder.host !== me.host) {
      throw new AppError("conflict", `${dataDir} is in use by openfief up on ${holder.host} (pid ${holder.pid}, since ${holder.since}): stop it there, or remove ${path} if it is gone`);
    }
    // Left by a process that is gone (or unreadable): take it over.
    try {
      unlinkSync(path);
    } catch {
      // Another process took it over first; the next attempt says who.
    }
  }
  throw new AppError("conflict", `cannot take ${path}: another process keeps taking it`);
}

/** The `openfief up` holding a data folder now, or null when none does. */
export function lockHolder(dataDir: string): LockHolder | null {
  const holder = readHolder(lockFile(dataDir));
  return holder !== null && holder.host === hostname() && processAlive(holder.pid) ? holder : null;
}

/** The egress proxy of the `openfief up` holding a data folder (`http://127.0.0.1:4750`), or null. */
export function runningEgress(dataDir: string): string | null {
  const serving = lockHolder(dataDir)?.serving ?? [];
  const egress = serving.find((s) => s.startsWith("egress "));
  return egress === undefined ? null : egress.slice("egress ".length);
}

function lockHandle(path: string, me: LockHolder): DataLock {
  let current = me;
  const ours = (): boolean => readHolder(path)?.pid === me.pid;
  return {
    update(serving) {
      current = { ...current, serving };
      if (ours()) writeFileSync(path, `${JSON.stringify(current)}\n`, { mode: 0o600 });
    },
    release() {
      HELD.delete(path);
      try {
        if (ours()) unlinkSync(path);
      } catch {
        // Already gone.
      }
    },
  };
}

/** Refuses a key file others may write: whoever can replace it can mint the tokens it signs. */
export function checkPrivateFile(path: string, what: string): void {
  if (!existsSync(path)) return;
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o022) !== 0) {
    throw new AppError("bad_setting", `${what} ${path} is writable by others (mode ${mode.toString(8).padStart(4, "0")}): run chmod 600 ${path}`);
  }
}
