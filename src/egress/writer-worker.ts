/**
 * The egress writer's worker thread: owns its own connection to the event log (a
 * {@link LogWriter}: the SQLite file, or the shared PostgreSQL log) and commits each batch it is
 * sent in one transaction, waiting for the write lock at most until the batch's deadline. Only
 * this thread ever blocks on the lock; the proxy's event loop never does.
 */
import { parentPort, workerData } from "node:worker_threads";
import { loadEventValidation, openLogWriter, StoreError, StoreErrorCode, type LogWriter } from "../events/index.js";
import { anonymousEvent, egressDecisionEvent } from "./decision.js";
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

let writer: LogWriter;
try {
  // This connection only commits batches: durable or not once, not per batch (docs/adr/0096);
  // on PostgreSQL every commit is durable and each batch is bounded by the session (docs/adr/0165).
  // Started from a data: URL, this thread cannot load ajv by require on its first append (ADR 0187).
  await loadEventValidation();
  writer = await openLogWriter("url" in data ? { url: data.url, commitTimeoutMs: data.commitTimeoutMs } : { file: data.file, durable: data.durable });
} catch (err) {
  reply({ ready: false, error: message(err) });
  throw err;
}

port.on("message", (req: WriteRequest) => void commit(req));

async function commit(req: WriteRequest): Promise<void> {
  try {
    const events = req.kind === "decisions"
      ? await writer.append(req.items.map((d) => egressDecisionEvent(d, data.actor)), req.deadline)
      : await writer.append(req.items.map((r) => anonymousEvent(r, data.actor)), req.deadline);
    // Only what the main thread cannot know: it sent the data, so the data is not sent back.
    const first = events[0];
    reply({
      id: req.id, ok: true,
      committed: first === undefined ? null : { seq: first.seq, time: first.time, schemaVersion: first.schemaVersion, versions: events.map((e) => e.version), hashes: events.map((e) => e.hash), prevHash: first.prevHash },
    });
  } catch (err) {
    const busy = err instanceof StoreError && (err.code === StoreErrorCode.Busy || err.code === StoreErrorCode.Timeout);
    reply({ id: req.id, ok: false, failure: busy ? "busy" : "failed", error: message(err) });
  }
}
reply({ ready: true });
