/**
 * The egress writer's worker thread: owns its own better-sqlite3 connection to the event store's
 * file and commits each batch it is sent in one transaction, waiting for the write lock at most
 * until the batch's deadline (SQLite's busy timeout, set per batch). Only this thread ever blocks
 * on the lock; the proxy's event loop never does.
 */
import { parentPort, workerData } from "node:worker_threads";
import { openStore, type EventStore } from "../events/index.js";
import { anonymousEvent, egressDecisionEvent } from "./decision.js";
import { EGRESS_ACTOR } from "./recorder.js";
import type { WriteRequest, WriterReply, WriterWorkerData } from "./writer-protocol.js";

const port = parentPort;
if (port === null) throw new Error("writer-worker runs only as a worker thread");
const data = workerData as WriterWorkerData;

function reply(r: WriterReply): void {
  port?.postMessage(r);
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_BUSY_SNAPSHOT" || code === "SQLITE_LOCKED";
}

let store: EventStore;
let busyMs = Number.POSITIVE_INFINITY;
try {
  store = await openStore({ file: data.file });
  // This connection only commits batches: set once, not per batch (docs/adr/0096).
  if (data.durable) store.database.pragma("synchronous = FULL");
} catch (err) {
  reply({ ready: false, error: message(err) });
  throw err;
}

port.on("message", (req: WriteRequest) => {
  const left = Math.floor(req.deadline - Date.now());
  if (left <= 0) return reply({ id: req.id, ok: false, failure: "busy", error: "the batch's deadline passed before its commit began" });
  try {
    // Never wait past the batch's bound; re-set only when it would (a pragma per batch costs).
    if (left < busyMs || left - busyMs > 250) {
      store.database.pragma(`busy_timeout = ${left}`);
      busyMs = left;
    }
    const events = req.kind === "decisions"
      ? store.append(req.items.map((d) => egressDecisionEvent(d, EGRESS_ACTOR)))
      : store.append(req.items.map((r) => anonymousEvent(r, EGRESS_ACTOR)));
    // Only what the main thread cannot know: it sent the data, so the data is not sent back.
    const first = events[0];
    reply({
      id: req.id, ok: true,
      committed: first === undefined ? null : { seq: first.seq, time: first.time, schemaVersion: first.schemaVersion, versions: events.map((e) => e.version), hashes: events.map((e) => e.hash), prevHash: first.prevHash },
    });
  } catch (err) {
    reply({ id: req.id, ok: false, failure: isBusy(err) ? "busy" : "failed", error: message(err) });
  }
});
reply({ ready: true });
