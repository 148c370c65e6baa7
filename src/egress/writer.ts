/**
 * Committing decisions off the event loop (issue 17): a worker thread owns its own connection to
 * the event store's file; the proxy's thread only queues records and hears back. The guarantee is
 * the same as a synchronous append: `record` resolves only once the decision is committed (so the
 * 200 follows the commit, and a crash loses no decision that was answered), and rejects when it
 * cannot be committed within `commitTimeoutMs` (the CONNECT is then refused, fail closed). While
 * another process holds the write lock only the worker waits: open tunnels keep flowing.
 *
 * Group commit: one batch is in flight at a time; everything recorded meanwhile goes in the next
 * one, so under load a commit carries many decisions. One sweep timer (not one per record) ends
 * the records whose wait passed its bound.
 */
import { existsSync } from "node:fs";
import { Worker } from "node:worker_threads";
import type { EventOf, KnownEvent } from "../events/index.js";
import type { AnonymousRecord, EgressDecisionRecord } from "./decision.js";
import type { DecisionRecorder } from "./recorder.js";
import { workerModule } from "./worker-bundle.js";
import { anonymousEvent, egressDecisionEvent, isSummary } from "./decision.js";
import { EGRESS_ACTOR } from "./recorder.js";
import type { CommittedBatch, WriteFailure, WriteRequest, WriterReply, WriterWorkerData } from "./writer-protocol.js";

/** The longest a decision waits for its commit by default: the store's own busy timeout. */
export const DEFAULT_COMMIT_TIMEOUT_MS = 5000;
/** Decisions that may wait for their commit at once, by default. */
export const DEFAULT_MAX_WAITING = 10_000;

/** Why a record was not committed; `code` is the refusal the proxy answers with. */
export class CommitError extends Error {
  constructor(
    readonly code: "commit_timeout" | "record_failed",
    message: string,
  ) {
    super(message);
    this.name = "CommitError";
  }
}

/** Options of {@link WorkerDecisionRecorder}. */
export interface WorkerRecorderOptions {
  /**
   * The event log the worker commits to: a SQLite file (`file`, already migrated by its owner), or
   * the shared PostgreSQL log (`url`, its schema made by `openfief store init`; docs/adr/0165).
   */
  readonly file?: string;
  /** The PostgreSQL URL, password included: handed to the worker only, never shown. */
  readonly url?: string;
  readonly commitTimeoutMs?: number;
  /**
   * Decisions that may wait for their commit at once (default {@link DEFAULT_MAX_WAITING}); one
   * more is refused at once (`commit_timeout`, a 503) rather than queued: a log that is gone does
   * not grow the proxy's memory (docs/adr/0165).
   */
  readonly maxWaiting?: number;
  /**
   * Who the recorded events name (default `egress-proxy`): in a cluster each replica its own
   * (`egress-proxy/<pod>`), so that `why` on the one log tells which proxy answered.
   */
  readonly actor?: string;
  /** Told of every committed batch (e.g. `store.announce`, so in-process subscribers hear of it). */
  readonly onCommitted?: (events: readonly KnownEvent[]) => void;
  /** Told of failures no caller waits for (a refusal not recorded, the worker lost). */
  readonly onError?: (err: Error) => void;
  /**
   * Whether each batch is synced to disk before its CONNECTs are answered (`synchronous=FULL`).
   * Off by default (docs/adr/0096): a commit then survives a crash of the process, not a power
   * loss, and the 200 does not wait for the disk.
   */
  readonly durable?: boolean;
}

interface Waiting {
  readonly record: EgressDecisionRecord;
  readonly deadline: number;
  readonly resolve: () => void;
  readonly reject: (err: CommitError) => void;
}

type InFlight =
  | { readonly id: number; readonly kind: "decisions"; readonly items: readonly Waiting[]; readonly deadline: number }
  | { readonly id: number; readonly kind: "refusals"; readonly items: readonly AnonymousRecord[]; readonly deadline: number };

/** How long past a batch's deadline a silent worker is given before its batch is written off. */
const WORKER_GRACE_MS = 1000;
const SWEEP_MS = 50;

/**
 * The worker's module: beside this one as TypeScript or compiled JavaScript, or, when this module
 * was bundled into the CLI (`dist/`, where no such file exists), the source in `src/egress/` of
 * the package this bundle belongs to (bundled again by `worker-bundle.ts`).
 */
function entryUrl(): URL {
  for (const name of ["./writer-worker.ts", "./writer-worker.js"]) {
    const beside = new URL(name, import.meta.url);
    if (existsSync(beside)) return beside;
  }
  for (let dir = new URL("./", import.meta.url); ; ) {
    const source = new URL("src/egress/writer-worker.ts", dir);
    if (existsSync(source)) return source;
    const up = new URL("../", dir);
    if (up.href === dir.href) throw new Error("the egress writer's worker module was not found");
    dir = up;
  }
}

/** A {@link DecisionRecorder} whose commits run on a worker thread. */
export class WorkerDecisionRecorder implements DecisionRecorder {
  readonly #o: Required<Pick<WorkerRecorderOptions, "commitTimeoutMs" | "maxWaiting" | "actor">> & WorkerRecorderOptions;
  #worker: Worker | undefined;
  #starting: Promise<Worker> | undefined;
  #decisions: Waiting[] = [];
  #refusals: AnonymousRecord[] = [];
  #inFlight: InFlight | undefined;
  #nextId = 1;
  #scheduled = false;
  #sweeper: NodeJS.Timeout | undefined;
  #closed = false;
  #committedBatches = 0;
  #committedDecisions = 0;

  private constructor(o: WorkerRecorderOptions) {
    const commitTimeoutMs = o.commitTimeoutMs ?? DEFAULT_COMMIT_TIMEOUT_MS;
    if (!Number.isFinite(commitTimeoutMs) || commitTimeoutMs <= 0) throw new RangeError("commitTimeoutMs must be positive");
    const maxWaiting = o.maxWaiting ?? DEFAULT_MAX_WAITING;
    if (!Number.isInteger(maxWaiting) || maxWaiting <= 0) throw new RangeError("maxWaiting must be a positive whole number");
    if ((o.file === undefined) === (o.url === undefined)) throw new RangeError("give the egress writer a file or a url, not both");
    const actor = o.actor ?? EGRESS_ACTOR;
    if (actor.length === 0 || actor.length > 200) throw new RangeError("actor must be 1 to 200 characters");
    this.#o = { ...o, commitTimeoutMs, maxWaiting, actor };
  }

  /** Starts the worker; resolves once it has opened the store. */
  static async open(o: WorkerRecorderOptions): Promise<WorkerDecisionRecorder> {
    const r = new WorkerDecisionRecorder(o);
    await r.#start();
    return r;
  }

  /** Batches committed so far, and the decisions in them (group commit's measure). */
  get committed(): { readonly batches: number; readonly decisions: number } {
    return { batches: this.#committedBatches, decisions: this.#committedDecisions };
  }

  /** Decisions waiting for their commit (queued or in flight). */
  get waiting(): number {
    return this.#decisions.length + (this.#inFlight?.kind === "decisions" ? this.#inFlight.items.length : 0);
  }

  record(decision: EgressDecisionRecord): Promise<void> {
    if (this.#closed) return Promise.reject(new CommitError("record_failed", "the egress writer is closed"));
    if (this.waiting >= this.#o.maxWaiting) return Promise.reject(new CommitError("commit_timeout", `${this.#o.maxWaiting} decisions already wait for their commit`));
    return new Promise<void>((resolve, reject) => {
      this.#decisions.push({ record: decision, deadline: Date.now() + this.#o.commitTimeoutMs, resolve, reject });
      this.#schedule();
    });
  }

  recordRefusal(refusal: AnonymousRecord): void {
    if (this.#closed) return;
    this.#refusals.push(refusal);
    this.#schedule();
  }

  /** Commits what is queued (bounded by its deadlines), then stops the worker. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    while ((this.#inFlight !== undefined || this.#decisions.length > 0 || this.#refusals.length > 0) && this.#worker !== undefined) {
      this.#pump();
      await new Promise((r) => setTimeout(r, 5));
    }
    this.#stopSweeper();
    const w = this.#worker;
    this.#worker = undefined;
    for (const d of this.#decisions.splice(0)) d.reject(new CommitError("record_failed", "the egress writer closed"));
    if (w !== undefined) await w.terminate();
  }

  #schedule(): void {
    this.#startSweeper();
    if (this.#scheduled || this.#inFlight !== undefined) return;
    // Everything recorded in this turn of the event loop goes in one batch.
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#pump();
    });
  }

  /** Sends the next batch when none is in flight: decisions first, then refusals. */
  #pump(): void {
    if (this.#inFlight !== undefined) return;
    const worker = this.#worker;
    if (worker === undefined) {
      if (!this.#closed) void this.#start().then(() => this.#pump(), () => this.#failAll("record_failed", "the egress writer could not start"));
      return;
    }
    const id = this.#nextId++;
    if (this.#decisions.length > 0) {
      const items = this.#decisions;
      this.#decisions = [];
      let deadline = Number.POSITIVE_INFINITY;
      for (const w of items) if (w.deadline < deadline) deadline = w.deadline;
      this.#inFlight = { id, kind: "decisions", items, deadline };
      const req: WriteRequest = { id, kind: "decisions", items: items.map((w) => w.record), deadline };
      worker.postMessage(req);
      return;
    }
    if (this.#refusals.length > 0) {
      const items = this.#refusals;
      this.#refusals = [];
      const deadline = Date.now() + this.#o.commitTimeoutMs;
      this.#inFlight = { id, kind: "refusals", items, deadline };
      const req: WriteRequest = { id, kind: "refusals", items, deadline };
      worker.postMessage(req);
    }
  }

  #onReply(r: WriterReply): void {
    if ("ready" in r) return;
    const batch = this.#inFlight;
    if (batch === undefined || batch.id !== r.id) {
      // A batch written off by the sweep: its callers were answered already.
      if (r.ok) this.#o.onError?.(new Error("an egress batch committed after its wait had ended"));
      return;
    }
    this.#inFlight = undefined;
    if (r.ok) {
      this.#committedBatches++;
      if (batch.kind === "decisions") {
        this.#committedDecisions += batch.items.length;
        for (const w of batch.items) w.resolve();
      }
      const onCommitted = this.#o.onCommitted;
      if (onCommitted !== undefined && r.committed !== null) {
        try {
          onCommitted(storedEvents(batch, r.committed, this.#o.actor));
        } catch {
          // A listener's failure must not undo a commit.
        }
      }
    } else if (batch.kind === "decisions") {
      const err = failure(r.failure, r.error);
      for (const w of batch.items) w.reject(err);
    } else this.#o.onError?.(new Error(`egress refusals could not be recorded: ${r.error}`));
    // The next batch goes at the end of this turn, not now: the heads read in this turn after
    // the reply join it (wider commits, one wake-up of the worker fewer each time).
    this.#schedule();
  }

  #start(): Promise<Worker> {
    if (this.#starting !== undefined) return this.#starting;
    this.#starting = workerModule(entryUrl()).then((entry) => this.#spawn(entry)).finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  #spawn(entry: URL): Promise<Worker> {
    const { url, file } = this.#o;
    const actor = this.#o.actor;
    const workerData: WriterWorkerData = url !== undefined ? { actor, url, commitTimeoutMs: this.#o.commitTimeoutMs } : { actor, file: file ?? "", durable: this.#o.durable === true };
    const w = new Worker(entry, { workerData });
    return new Promise<Worker>((resolve, reject) => {
      const onFirst = (r: WriterReply): void => {
        if (!("ready" in r)) return;
        w.off("message", onFirst);
        if (r.ready) {
          this.#worker = w;
          w.on("message", (m: WriterReply) => this.#onReply(m));
          resolve(w);
        } else reject(new Error(r.error));
      };
      w.on("message", onFirst);
      w.once("error", (err) => reject(err));
      w.once("exit", () => this.#lost(w, reject));
    });
  }

  /** The worker died: every waiting record fails (none was answered as committed); the next starts a new one. */
  #lost(w: Worker, reject: (err: Error) => void): void {
    reject(new Error("the egress writer's worker exited"));
    if (this.#worker !== w) return;
    this.#worker = undefined;
    const batch = this.#inFlight;
    this.#inFlight = undefined;
    if (batch?.kind === "decisions") for (const d of batch.items) d.reject(new CommitError("record_failed", "the egress writer's worker exited"));
    if (!this.#closed) {
      this.#o.onError?.(new Error("the egress writer's worker exited; starting another"));
      if (this.#decisions.length > 0 || this.#refusals.length > 0) this.#pump();
    }
  }

  #failAll(code: CommitError["code"], why: string): void {
    for (const d of this.#decisions.splice(0)) d.reject(new CommitError(code, why));
  }

  #startSweeper(): void {
    if (this.#sweeper !== undefined) return;
    this.#sweeper = setInterval(() => this.#sweep(), SWEEP_MS);
    this.#sweeper.unref();
  }

  #stopSweeper(): void {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  /** Ends the records whose bound passed while queued, and a batch a silent worker never answered. */
  #sweep(): void {
    const now = Date.now();
    if (this.#decisions.length > 0 && (this.#decisions[0]?.deadline ?? now) <= now) {
      const keep: Waiting[] = [];
      for (const d of this.#decisions) {
        if (d.deadline <= now) d.reject(new CommitError("commit_timeout", "the decision could not be committed in time"));
        else keep.push(d);
      }
      this.#decisions = keep;
    }
    const batch = this.#inFlight;
    if (batch !== undefined && batch.deadline + WORKER_GRACE_MS <= now) {
      this.#inFlight = undefined;
      if (batch.kind === "decisions") for (const d of batch.items) d.reject(new CommitError("commit_timeout", "the writer did not answer in time"));
      this.#pump();
    }
    if (this.#inFlight === undefined && this.#decisions.length === 0 && this.#refusals.length === 0) this.#stopSweeper();
  }
}

/** Where the i-th event of a committed batch went, or undefined past its end. */
function placed(c: CommittedBatch, i: number, prevHash: string): { seq: number; version: number; time: string; schemaVersion: number; prevHash: string; hash: string } | undefined {
  const hash = c.hashes[i];
  const version = c.versions[i];
  if (hash === undefined || version === undefined) return undefined;
  return { seq: c.seq + i, version, time: c.time, schemaVersion: c.schemaVersion, prevHash, hash };
}

/**
 * The stored events of a committed batch, from what was sent and where the worker put it: the
 * data is what the store validated (it canonicalises, and a record is already plain JSON).
 */
function storedEvents(batch: InFlight, c: CommittedBatch, actor: string): KnownEvent[] {
  const out: KnownEvent[] = [];
  let prev = c.prevHash;
  if (batch.kind === "decisions") {
    for (let i = 0; i < batch.items.length; i++) {
      const w = batch.items[i];
      const at = placed(c, i, prev);
      if (w === undefined || at === undefined) break;
      const e = egressDecisionEvent(w.record, actor);
      const stored: EventOf<"egress.decision"> = { ...at, stream: e.stream, type: "egress.decision", actor: e.actor, causedBy: null, data: e.data };
      out.push(stored);
      prev = at.hash;
    }
    return out;
  }
  for (let i = 0; i < batch.items.length; i++) {
    const r = batch.items[i];
    const at = placed(c, i, prev);
    if (r === undefined || at === undefined) break;
    const e = anonymousEvent(r, actor);
    const base = { ...at, stream: e.stream, actor: e.actor, causedBy: null };
    const data = e.data;
    const stored: EventOf<"egress.refused" | "egress.refusals"> = isSummary(data) ? { ...base, type: "egress.refusals", data } : { ...base, type: "egress.refused", data };
    out.push(stored);
    prev = at.hash;
  }
  return out;
}

function failure(f: WriteFailure, error: string): CommitError {
  return f === "busy" ? new CommitError("commit_timeout", `the decision could not be committed in time: ${error}`) : new CommitError("record_failed", `the decision could not be recorded: ${error}`);
}
