/**
 * SQLite's "the lock was not had" answers, and an append that tries again after one.
 *
 * A connection's busy timeout makes SQLite wait for a lock, but in WAL mode some lock attempts
 * answer SQLITE_BUSY without waiting it out: seen here as "database is locked" after about 70 ms
 * on BEGIN IMMEDIATE while the store's checkpoint thread was copying pages back under I/O load.
 * A transaction refused that way wrote nothing, so it is tried again, until the connection's own
 * busy timeout has passed since the first try: the caller never waits longer than that promise.
 */

/** Whether `err` is SQLite saying a lock was not had in time. */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_BUSY_SNAPSHOT" || code === "SQLITE_LOCKED" || code === "SQLITE_BUSY_RECOVERY";
}

const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

/** Blocks this thread for `ms` (a transaction's retry is synchronous, as SQLite's own waiting is). */
function sleep(ms: number): void {
  Atomics.wait(SLEEPER, 0, 0, ms);
}

/**
 * Runs `transaction` (which must write nothing when it throws), again after a busy answer, with
 * waits of 5, 10, 20 … 200 ms, until `timeoutMs()` (the connection's busy timeout, asked only
 * after a refusal) has passed since the first try; then the last refusal is thrown.
 */
export function retryingBusy<T>(transaction: () => T, timeoutMs: () => number, wait: (ms: number) => void = sleep): T {
  const started = Date.now();
  let deadline: number | null = null;
  for (let pause = 5; ; pause = Math.min(2 * pause, 200)) {
    try {
      return transaction();
    } catch (err) {
      if (!isBusy(err)) throw err;
      deadline ??= started + timeoutMs();
      const left = deadline - Date.now();
      if (left <= 0) throw err;
      wait(Math.min(pause, left));
    }
  }
}
