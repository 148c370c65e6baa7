/**
 * The log as server-sent events: each event as `id: <seq>` and its JSON, so a client that
 * reconnects with `Last-Event-ID` misses nothing and sees nothing twice. A stream is bounded like
 * every request: at most {@link StreamLimits.max} at once (more are `unavailable`), each ends after
 * {@link StreamLimits.maxDurationMs} (EventSource reconnects on its own), a client too slow to read
 * is cut off instead of buffered without end, and a comment every few seconds keeps proxies from
 * closing an idle stream.
 */
import type { ServerResponse } from "node:http";
import { AppError, followLog } from "../app/index.js";
import type { EventLog, KnownEvent, LogQuery } from "../app/index.js";

/** The bounds of the streams one server keeps. */
export interface StreamLimits {
  readonly max: number;
  readonly maxDurationMs: number;
  readonly heartbeatMs: number;
  /** Bytes waiting for a slow client before its stream is cut. */
  readonly maxBuffered: number;
}

/** The default bounds. */
export const STREAM_LIMITS: StreamLimits = { max: 32, maxDurationMs: 5 * 60_000, heartbeatMs: 15_000, maxBuffered: 1 << 20 };

/** The open streams of one server. */
export class EventStreams {
  readonly #open = new Set<() => void>();

  constructor(readonly limits: StreamLimits = STREAM_LIMITS) {}

  /** How many streams are open. */
  get size(): number {
    return this.#open.size;
  }

  /** Streams the events matching `q` after `after` into `res` until the client leaves or a bound ends it. */
  open(store: EventLog, res: ServerResponse, q: LogQuery, after: number): void {
    if (this.#open.size >= this.limits.max) throw new AppError("unavailable", `${this.limits.max} event streams are open already: try again later`);
    res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" });
    res.write("retry: 2000\n\n");
    let ended = false;
    const write = (text: string): void => {
      if (ended) return;
      res.write(text);
      if (res.writableLength > this.limits.maxBuffered) end();
    };
    const unfollow = followLog(store, q, after, (events: readonly KnownEvent[]) => {
      for (const e of events) write(`id: ${e.seq}\ndata: ${JSON.stringify(e)}\n\n`);
    });
    const heartbeat = setInterval(() => write(": still here\n\n"), this.limits.heartbeatMs);
    const lifetime = setTimeout(() => end(), this.limits.maxDurationMs);
    const end = (): void => {
      if (ended) return;
      ended = true;
      unfollow();
      clearInterval(heartbeat);
      clearTimeout(lifetime);
      this.#open.delete(end);
      res.end();
    };
    this.#open.add(end);
    res.on("close", end);
  }

  /** Ends every open stream (the server is stopping). */
  closeAll(): void {
    for (const end of [...this.#open]) end();
  }
}
