/**
 * The verifiable log's own events (docs/adr/0141). Stream `log`: each signed checkpoint of the
 * Merkle tree over the log is recorded as a `log.checkpoint` event, which is itself an event of
 * the log and so a leaf of the tree, covered by the next checkpoint.
 */
import type { EventRegistry } from "../registry.js";
import { definer, inStream, req } from "./schema.js";

/** The stream of the verifiable log's events. */
export const LOG_STREAM = "log";

/**
 * `log.checkpoint`: the log signed a checkpoint of its Merkle tree at `size` events (seqs 1 to
 * `size`). `note` is the whole signed note (C2SP tlog-checkpoint in a C2SP signed-note envelope),
 * exactly as served at `/tlog/checkpoint`; `origin`, `size` and `root` repeat its body.
 */
export interface LogCheckpoint {
  /** The checkpoint's origin line: the log's name. */
  origin: string;
  /** Events the tree covered: seqs 1 to `size`. */
  size: number;
  /** The tree's root hash at `size`, base64 (standard, padded). */
  root: string;
  /** The signed note, text as served. */
  note: string;
}

/** Data type of each event type of the verifiable log. */
export interface LogEventData {
  "log.checkpoint": LogCheckpoint;
}

export function defineLogEvents(r: EventRegistry): void {
  const define = definer<LogEventData>(r);
  define({
    type: "log.checkpoint", version: 1, stream: inStream(LOG_STREAM),
    fields: {
      origin: req({ type: "string", minLength: 1, maxLength: 255, pattern: "^[^\\s+]+$" }),
      size: req({ type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
      root: req({ type: "string", pattern: "^[A-Za-z0-9+/]{43}=$" }),
      note: req({ type: "string", minLength: 1, maxLength: 8192 }),
    },
  });
}
