/**
 * The messages between the egress writer (main thread) and its worker thread, which owns its
 * own connection to the event store's file. Plain data: structured-cloned both ways.
 */
import type { LogWriterOptions } from "../events/index.js";
import type { AnonymousRecord, EgressDecisionRecord } from "./decision.js";

/**
 * What the worker is started with: who its events name (`actor`: each replica of the proxy its
 * own), and the log's SQLite file or its PostgreSQL database (docs/adr/0165).
 */
export type WriterWorkerData = { readonly actor: string } & LogWriterOptions;

/** A batch to commit in one transaction. `deadline` (epoch ms): past it, refuse rather than wait. */
export type WriteRequest =
  | { readonly id: number; readonly kind: "decisions"; readonly items: readonly EgressDecisionRecord[]; readonly deadline: number }
  | { readonly id: number; readonly kind: "refusals"; readonly items: readonly AnonymousRecord[]; readonly deadline: number };

/**
 * Where a committed batch went: consecutive seqs from `seq`, one time, each event's stream version
 * and hash (the chain: each event's prevHash is the hash before it). The data is what was sent.
 */
export interface CommittedBatch {
  readonly seq: number;
  readonly time: string;
  readonly schemaVersion: number;
  readonly versions: readonly number[];
  readonly hashes: readonly string[];
  readonly prevHash: string;
}

/** Why a batch was not committed: the lock (or the log's answer) was not had in time, or anything else. */
export type WriteFailure = "busy" | "failed";

/** The worker's answers. */
export type WriterReply =
  | { readonly ready: true }
  | { readonly ready: false; readonly error: string }
  | { readonly id: number; readonly ok: true; readonly committed: CommittedBatch | null }
  | { readonly id: number; readonly ok: false; readonly failure: WriteFailure; readonly error: string };
