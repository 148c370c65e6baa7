/**
 * WAL checkpoints on a thread of their own, so that an append never copies pages back into the
 * database file.
 *
 * SQLite's default checkpoints inside the commit that takes the write-ahead log past 1,000 pages,
 * copying back every page the appends since the last one touched, then syncing. On a small log
 * those are the same few index pages again and again; as the log grows, the per-stream indexes
 * spread over the file and a batch touches a different page for nearly every stream in it (about
 * 800 pages per 1,000 events of the benchmark's workload at a million events, 170 at ten
 * thousand), so the appends that crossed the mark paid more and more for copying and syncing as
 * the log grew. Here the store's connection never checkpoints; a worker thread with its own
 * connection runs a passive checkpoint (which waits for no writer) a few times a second while
 * appends arrive, and a restart, which makes writers wait, only once the log holds more than
 * {@link RESTART_FRAMES} pages (a bound on its size), right after a passive one copied every page
 * back (so the restart has little to copy) and with a short wait for readers: a reader that holds
 * an old snapshot (a slow `openfief log | less`) never makes an append wait behind the restart.
 */
import { createRequire } from "node:module";
// Loaded when the thread starts: a process that only reads the log never loads worker_threads.
import type { Worker } from "node:worker_threads";

/** How often the thread looks for committed appends to copy back (ms). */
const INTERVAL_MS = 200;
/** WAL pages beyond which the thread restarts the log, making writers wait once (64 MiB of 4 KiB pages). */
export const RESTART_FRAMES = 16_384;

/** The thread's script (CommonJS, evaluated): better-sqlite3 is loaded from the path it is given. */
const SCRIPT = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.sqlite);
const commits = new Int32Array(workerData.commits);
const db = new Database(workerData.file);
const BUSY_MS = 5000;
db.pragma("busy_timeout = " + BUSY_MS);
let seen = 0;
function run() {
  const now = Atomics.load(commits, 0);
  if (now === seen) return;
  seen = now;
  try {
    const [r] = db.pragma("wal_checkpoint(PASSIVE)");
    if (r && r.log > workerData.restartFrames && r.checkpointed === r.log) {
      db.pragma("busy_timeout = " + workerData.restartWaitMs);
      try {
        db.pragma("wal_checkpoint(RESTART)");
      } finally {
        db.pragma("busy_timeout = " + BUSY_MS);
      }
    }
  } catch {
    // A busy or failed checkpoint is tried again at the next commit; the log only grows meanwhile.
    seen = -1;
  }
}
const timer = setInterval(run, workerData.intervalMs);
parentPort.on("message", (m) => {
  if (m !== "close") return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** Where better-sqlite3 is, or null when this module cannot tell (it was loaded from a `data:` URL). */
function sqlitePath(): string | null {
  try {
    return createRequire(import.meta.url).resolve("better-sqlite3");
  } catch {
    return null;
  }
}

/** Appends before the thread starts: a command that appends a few events never starts one. */
const START_AFTER = { commits: 100, events: 1_000 } as const;

/** How long a restart waits for readers (ms); writers wait behind it meanwhile. */
const RESTART_WAIT_MS = 100;

/** The checkpoint thread of one store's file, started once the store has appended enough. */
export class Checkpointer {
  readonly #file: string;
  readonly #restartFrames: number;
  readonly #commits = new Int32Array(new SharedArrayBuffer(4));
  #events = 0;
  #worker: Worker | null = null;
  #exited: Promise<void> = Promise.resolve();
  #started = false;

  /** `restartFrames`: {@link RESTART_FRAMES} unless a test wants restarts sooner. */
  constructor(file: string, restartFrames = RESTART_FRAMES) {
    this.#file = file;
    this.#restartFrames = restartFrames;
  }

  /**
   * Counts a committed append of `events` events, starting the thread once there were enough.
   * Returns false when the thread cannot run here (it failed, or this module was loaded from a
   * `data:` URL and cannot find better-sqlite3): the caller then leaves checkpoints to SQLite.
   */
  committed(events: number): boolean {
    const n = Atomics.add(this.#commits, 0, 1) + 1;
    this.#events += events;
    if (!this.#started && (n >= START_AFTER.commits || this.#events >= START_AFTER.events)) this.#start();
    return !this.#started || this.#worker !== null;
  }

  /** Stops the thread, once it closed its connection (so that the store's own close is the last one). */
  async close(): Promise<void> {
    const w = this.#worker;
    this.#worker = null;
    if (w === null) return;
    w.postMessage("close");
    // A checkpoint waiting on another process's lock is not waited for: the next one copies it.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => { timer = setTimeout(() => { void w.terminate().then(() => resolve()); }, 1_000); });
    await Promise.race([this.#exited, late]);
    clearTimeout(timer);
  }

  #start(): void {
    this.#started = true;
    const sqlite = sqlitePath();
    if (sqlite === null) return;
    try {
      const w = new (process.getBuiltinModule("node:worker_threads").Worker)(SCRIPT, {
        eval: true,
        workerData: { file: this.#file, sqlite, commits: this.#commits.buffer, intervalMs: INTERVAL_MS, restartFrames: this.#restartFrames, restartWaitMs: RESTART_WAIT_MS },
      });
      // The thread never keeps a process alive; a failure in it only leaves the copying to SQLite.
      w.unref();
      this.#exited = new Promise<void>((resolve) => w.once("exit", () => resolve()));
      w.on("error", () => { if (this.#worker === w) this.#worker = null; });
      this.#worker = w;
    } catch {
      this.#worker = null;
    }
  }
}
