/**
 * The limits every HTTP listener of the product has, in one place: how long a client may take to
 * send its headers and its whole request, how long an idle kept-alive connection stays open, how
 * large and how many headers it may send. Node's own defaults are far looser (a minute for the
 * headers, five for the request, 2000 headers); these are the console's, the views', the connector
 * server's and the health servers' alike.
 */
import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from "node:http";
import type { Http2Server, Http2SecureServer } from "node:http2";

/** The bounds on one connection and its requests. */
export interface ListenerLimits {
  /** The longest a client may take to send a request's headers (ms). */
  readonly headersTimeoutMs: number;
  /** The longest a client may take to send a whole request (ms). */
  readonly requestTimeoutMs: number;
  /** The longest an idle kept-alive connection stays open (ms). */
  readonly keepAliveTimeoutMs: number;
  /** The most bytes a request's head (request line and headers) may take. */
  readonly maxHeaderBytes: number;
  /** The most headers read of a request (the rest are dropped). */
  readonly maxHeadersCount: number;
}

/** The limits of every listener. */
export const LISTENER_LIMITS: ListenerLimits = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxHeaderBytes: 16 * 1024,
  maxHeadersCount: 100,
});

let current: ListenerLimits = LISTENER_LIMITS;

/**
 * Tightens the limits of the listeners created from now on, and returns the function that puts
 * them back: only tests use it, so that a timeout of a few hundred milliseconds shows that each
 * listener is created with these limits without waiting ten seconds.
 */
export function overrideListenerLimits(limits: Partial<ListenerLimits>): () => void {
  const before = current;
  current = Object.freeze({ ...current, ...limits });
  return () => {
    current = before;
  };
}

/** The limits listeners are created with now. */
export function listenerLimits(): ListenerLimits {
  return current;
}

/** Node's server options for the limits (given to `http.createServer` and `https.createServer`). */
export function listenerOptions(): ServerOptions {
  const l = current;
  return {
    maxHeaderSize: l.maxHeaderBytes,
    headersTimeout: l.headersTimeoutMs,
    requestTimeout: l.requestTimeoutMs,
    keepAliveTimeout: l.keepAliveTimeoutMs,
    // How often the timeouts above are checked: Node's default (30 s) would let a slow client hold a connection long past them.
    connectionsCheckingInterval: Math.min(1_000, l.headersTimeoutMs),
  };
}

/** Sets what the constructor's options cannot (the header count) on an HTTP/1.1 server. */
export function withLimits<S extends Server>(server: S): S {
  server.maxHeadersCount = current.maxHeadersCount;
  return server;
}

/** An HTTP/1.1 server with the listeners' limits. */
export function createListener(handler?: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const server = withLimits(createServer(listenerOptions()));
  if (handler !== undefined) server.on("request", handler);
  return server;
}

/**
 * Node's HTTP/2 settings for the limits: the header list size; a session idle longer than the
 * keep-alive limit is closed by {@link withHttp2Limits}.
 */
export function http2Settings(): { readonly maxHeaderListSize: number } {
  return { maxHeaderListSize: current.maxHeaderBytes };
}

/** Closes an HTTP/2 session idle past the keep-alive limit, and a stream whose request takes past the request limit. */
export function withHttp2Limits<S extends Http2Server | Http2SecureServer>(server: S): S {
  const l = current;
  server.on("session", (session) => {
    session.setTimeout(l.keepAliveTimeoutMs, () => session.close());
  });
  server.on("stream", (stream) => {
    stream.setTimeout(l.requestTimeoutMs, () => stream.close());
  });
  return server;
}
