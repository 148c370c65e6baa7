/**
 * A connector's syncs (docs/adr/0179), in the instance's stream `plugin/<name>`: the core called
 * `Sync` (`sync.started`), recorded the delivery and took its watermark (`sync.delivered`), or
 * the call failed (`sync.failed`). A delivery's contents and watermark live in the deliveries
 * store; the log names them by the batch and the digest, with counts, never the contents.
 */
import type { EventRegistry } from "../registry.js";
import { definer, digest, inNamedStream, isoTime, name, opt, req } from "./schema.js";

/** How many of each thing a delivery holds. */
export interface DeliveryCounts {
  transactions: number;
  postings: number;
  balanceAssertions: number;
  problems: number;
  prices: number;
  fxRates: number;
  indexReadings: number;
}

/** `sync.started`: the core calls a connector's `Sync` for a batch (attempt 1) or retries it. */
export interface SyncStarted {
  name: string;
  /** The batch; the same on every attempt of it. */
  batchId: string;
  /** 1 for the first call of the batch. */
  attempt: number;
  /** The scheduled time the batch serves (the same on every attempt). */
  slot: string;
  /** Whether a watermark was passed (its value is the previous delivery's, in the deliveries store). */
  watermark: boolean;
}

/** `sync.delivered`: the batch's delivery is recorded; its watermark is the one the next sync passes. */
export interface SyncDelivered {
  name: string;
  batchId: string;
  attempt: number;
  /** The SHA-256 of the recorded delivery (`sha256:<hex>`). */
  digest: string;
  counts: DeliveryCounts;
  /** False when a retry found the batch already recorded (delivered before a crash): nothing counted twice. */
  fresh: boolean;
}

/** `sync.failed`: a call of the batch failed; `retryAt` when it will be retried, absent when given up. */
export interface SyncFailed {
  name: string;
  batchId: string;
  attempt: number;
  /** The failure's code: the host's (`http_failed`, `plugin_timed_out`…), the plugin's, or the core's (`invalid_delivery`). */
  code: string;
  /** The code's Connect status, in snake case (`unavailable`, `invalid_argument`…). */
  status: string;
  retryAt?: string;
}

/** `import.delivered`: a file imported through a connector's `ImportFile` was stored as one batch. */
export interface ImportDelivered {
  name: string;
  batchId: string;
  /** The file's name (a hint the connector was given, never a path). */
  fileName: string;
  /** The file's size in bytes. */
  size: number;
  digest: string;
  counts: DeliveryCounts;
}

/** Data type of each sync event type. */
export interface SyncEventData {
  "sync.started": SyncStarted;
  "sync.delivered": SyncDelivered;
  "sync.failed": SyncFailed;
  "import.delivered": ImportDelivered;
}

const batchId = { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$" } as const;
const attempt = { type: "integer", minimum: 1, maximum: 1000 } as const;
const count = { type: "integer", minimum: 0 } as const;
const code = { type: "string", pattern: "^[a-z][a-z0-9_]{0,63}$" } as const;

export function defineSyncEvents(r: EventRegistry): void {
  const define = definer<SyncEventData>(r);
  const inPlugin = inNamedStream("plugin", "name");
  define({
    type: "sync.started", version: 1, stream: inPlugin,
    fields: { name: req(name), batchId: req(batchId), attempt: req(attempt), slot: req(isoTime), watermark: req({ type: "boolean" }) },
  });
  const counts = req({
    type: "object", additionalProperties: false,
    required: ["transactions", "postings", "balanceAssertions", "problems", "prices", "fxRates", "indexReadings"],
    properties: { transactions: count, postings: count, balanceAssertions: count, problems: count, prices: count, fxRates: count, indexReadings: count },
  });
  define({
    type: "sync.delivered", version: 1, stream: inPlugin,
    fields: { name: req(name), batchId: req(batchId), attempt: req(attempt), digest: req(digest), fresh: req({ type: "boolean" }), counts },
  });
  define({
    type: "import.delivered", version: 1, stream: inPlugin,
    fields: { name: req(name), batchId: req(batchId), fileName: req({ type: "string", minLength: 1, maxLength: 255 }), size: req(count), digest: req(digest), counts },
  });
  define({
    type: "sync.failed", version: 1, stream: inPlugin,
    fields: { name: req(name), batchId: req(batchId), attempt: req(attempt), code: req(code), status: req(code), retryAt: opt(isoTime) },
  });
}
