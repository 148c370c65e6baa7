/**
 * A buffered destination for the proxy's JSON log (issue 17): one line per CONNECT costs a write
 * system call when unbuffered. Lines are gathered up to `bufferBytes`, written at most every
 * `flushMs`, bounded by `maxBytes` (past it lines are dropped and counted, never an unbounded
 * queue). `close` ends the stream and waits for the write already under way (sonic-boom's
 * `flushSync` cannot: an asynchronous write in flight would land after it, or never if the process
 * exits first), so a SIGTERM that the owner handles by closing loses nothing; at a bare process
 * exit what is buffered is still written synchronously.
 */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";

/** Options of {@link bufferedLog}. */
export interface BufferedLogOptions {
  /** A file descriptor (1 = stdout) or a file path. */
  readonly dest: number | string;
  /** Bytes gathered before a write (below 16 KiB, sonic-boom's largest write). */
  readonly bufferBytes?: number;
  /** The longest a line waits. */
  readonly flushMs?: number;
  /** The most bytes held; past it lines are dropped (and counted). */
  readonly maxBytes?: number;
  readonly pino?: LoggerOptions;
}

/** A logger on a buffered destination. */
export interface BufferedLog {
  readonly logger: Logger;
  readonly destination: DestinationStream;
  /** Lines dropped because the buffer was full. */
  readonly dropped: number;
  /** Writes what is buffered now, synchronously. */
  flush(): void;
  /** Stops the timer, writes everything (the write under way included) and resolves; at most {@link CLOSE_WAIT_MS}. */
  close(): Promise<void>;
}

/** The longest `close` waits for the last writes (a blocked stdout must not hold a shutdown forever). */
export const CLOSE_WAIT_MS = 5_000;

/** ADR 0033: 8 KiB buffers, written every 100 ms, at most 4 MiB held. */
export const LOG_BUFFER = { bufferBytes: 8 * 1024, flushMs: 100, maxBytes: 4 * 1024 * 1024 } as const;

export function bufferedLog(o: BufferedLogOptions): BufferedLog {
  const bufferBytes = o.bufferBytes ?? LOG_BUFFER.bufferBytes;
  const destination = pino.destination({ dest: o.dest, sync: false, minLength: bufferBytes, maxLength: o.maxBytes ?? LOG_BUFFER.maxBytes });
  let dropped = 0;
  destination.on?.("drop", () => {
    dropped++;
  });
  const flushSync = (): void => {
    try {
      destination.flushSync();
    } catch {
      // Not ready yet (a file still opening) or already closed: nothing to write.
    }
  };
  const timer = setInterval(() => destination.flush?.(), o.flushMs ?? LOG_BUFFER.flushMs);
  timer.unref();
  process.once("exit", flushSync);
  let closed = false;
  return {
    logger: pino(o.pino ?? {}, destination),
    destination,
    get dropped() {
      return dropped;
    },
    flush: flushSync,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await ended(destination);
      process.off("exit", flushSync);
    },
  };
}

/** Ends a sonic-boom stream and waits until its last write has landed (or {@link CLOSE_WAIT_MS} passed). */
function ended(stream: ReturnType<typeof pino.destination>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, CLOSE_WAIT_MS);
    timer.unref();
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    stream.once("close", done);
    stream.once("error", done);
    try {
      stream.end();
    } catch {
      done();
    }
  });
}
