/**
 * The proxy's accepted connections up to their one request (ADR 0035): each socket's head is
 * gathered by a {@link HeadReader} and handed on once, and a socket that was answered without a
 * tunnel is closed once its client has gone or its time is up. One sweep timer serves every
 * deadline (no timer per socket) and one set of listener functions serves every socket (no
 * closure per connection: the socket is `this`).
 */
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { HeadReader, type HeadRejection, type RequestHead } from "./request-head.js";

/** What becomes of a connection's head. */
export interface ConnectionHandlers {
  /** A whole head arrived; `rest` is what the client sent after it. The socket is paused. */
  head(socket: Socket, head: RequestHead, rest: Buffer): void;
  /** The head was refused; the socket is paused. Answer it with {@link Connections.answer}. */
  refused(socket: Socket, rejection: HeadRejection): void;
  /** No whole head within the head timeout; the socket is destroyed right after. */
  timedOut(socket: Socket): void;
  /**
   * The client ended its side after part of a head (node:http answered that 400 too). Answer it
   * with {@link Connections.answer}. A client that ends without sending a byte is only closed.
   */
  truncated(socket: Socket): void;
}

/** Options of {@link Connections}. */
export interface ConnectionsOptions {
  /** How long a client has to send its whole head, and to go after an answer without a tunnel. */
  readonly headTimeoutMs: number;
  readonly handlers: ConnectionHandlers;
}

/** Every accepted socket of one proxy, until it closes. */
export class Connections {
  readonly #all = new Set<Socket>();
  /** Sockets still sending their head: when they began (Map order is arrival order) and their reader. */
  readonly #awaiting = new Map<Socket, { readonly since: number; readonly reader: HeadReader }>();
  /** Sockets answered without a tunnel, by when, waiting for their client to go. */
  readonly #lingering = new Map<Socket, number>();
  readonly #timeoutMs: number;
  readonly #sweepMs: number;
  readonly #handlers: ConnectionHandlers;
  #sweeper: NodeJS.Timeout | undefined;
  // The listeners every socket shares; `this` is the socket.
  readonly #onData: (this: Socket, chunk: Buffer) => void;
  readonly #onEnd: (this: Socket) => void;
  readonly #onClose: (this: Socket) => void;

  constructor(o: ConnectionsOptions) {
    this.#timeoutMs = o.headTimeoutMs;
    this.#sweepMs = Math.max(10, Math.min(1000, Math.floor(o.headTimeoutMs / 4)));
    this.#handlers = o.handlers;
    const data = (socket: Socket, chunk: Buffer): void => this.#data(socket, chunk);
    const awaiting = this.#awaiting;
    const handlers = o.handlers;
    const forget = (socket: Socket): void => {
      this.#all.delete(socket);
      awaiting.delete(socket);
      this.#lingering.delete(socket);
    };
    this.#onData = function (this: Socket, chunk: Buffer) {
      data(this, chunk);
    };
    // The client half-closed before its head ended: nothing more can come.
    this.#onEnd = function (this: Socket) {
      const reading = awaiting.get(this);
      if (reading === undefined) return;
      awaiting.delete(this);
      if (reading.reader.length > 0) handlers.truncated(this);
      else this.destroy();
    };
    this.#onClose = function (this: Socket) {
      forget(this);
    };
  }

  /** Sockets open now (awaiting a head, being decided, tunnelling through Node, or lingering). */
  get size(): number {
    return this.#all.size;
  }

  /** Takes a socket the server accepted. */
  accept(socket: Socket): void {
    this.#all.add(socket);
    this.#awaiting.set(socket, { since: performance.now(), reader: new HeadReader() });
    socket.on("data", this.#onData);
    socket.on("end", this.#onEnd);
    socket.on("error", destroySelf);
    socket.on("close", this.#onClose);
    this.#startSweeper();
  }

  /**
   * Writes a last answer and ends the socket. The client's further bytes are read and dropped
   * (unread bytes would turn the close into a reset, losing the answer); the socket is destroyed
   * when the client goes, or after the head timeout.
   */
  answer(socket: Socket, bytes: Buffer | string): void {
    if (socket.destroyed) return;
    socket.end(bytes);
    this.linger(socket);
  }

  /** Closes an ended socket once its client goes, or after the head timeout (an answer written elsewhere). */
  linger(socket: Socket): void {
    if (socket.destroyed) return;
    this.#lingering.delete(socket);
    this.#lingering.set(socket, performance.now());
    socket.resume();
    this.#startSweeper();
  }

  /** Destroys every socket still open (the end of a drain). */
  destroyAll(): void {
    for (const s of this.#all) s.destroy();
    this.stop();
  }

  /** Stops the sweep. */
  stop(): void {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  #data(socket: Socket, chunk: Buffer): void {
    const reading = this.#awaiting.get(socket);
    if (reading === undefined) return;
    const step = reading.reader.push(chunk);
    if (step.state === "more") return;
    this.#awaiting.delete(socket);
    socket.off("data", this.#onData);
    // No 'data' until the CONNECT is decided; what arrives meanwhile is held by the stream (up to
    // its high-water mark, then in the kernel) and goes upstream once the tunnel's pipe starts.
    socket.pause();
    if (step.state === "refused") this.#handlers.refused(socket, step.rejection);
    else this.#handlers.head(socket, step.head, step.rest);
  }

  #startSweeper(): void {
    if (this.#sweeper !== undefined) return;
    this.#sweeper = setInterval(() => this.#sweep(), this.#sweepMs);
    this.#sweeper.unref();
  }

  #sweep(): void {
    const cutoff = performance.now() - this.#timeoutMs;
    for (const [socket, { since }] of this.#awaiting) {
      // Map order is arrival order: the rest arrived later.
      if (since > cutoff) break;
      this.#awaiting.delete(socket);
      this.#handlers.timedOut(socket);
      socket.destroy();
    }
    for (const [socket, since] of this.#lingering) {
      if (since > cutoff) break;
      this.#lingering.delete(socket);
      socket.destroy();
    }
    if (this.#awaiting.size === 0 && this.#lingering.size === 0) this.stop();
  }
}

function destroySelf(this: Socket): void {
  this.destroy();
}
