/**
 * Whether a process runs, by its id: the directory target's stale temp files and the data
 * folder's lock ask it. A module of its own, so the lock's callers load no target (ADR 0113).
 */

/** Whether a process with this id runs (one we may not signal runs too). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
