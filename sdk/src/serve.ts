import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { listenPort, type Environment } from "./env.js";
import {
  ConnectorService,
  DeliverySchema,
  ImportFileResponseSchema,
  SyncResponseSchema,
  type ImportFileRequest,
  type SyncRequest,
} from "./gen/openfief/connector/v1/connector_pb.js";
import { requireCore, type AnyRequest, type AnyResponse, type RefusalListener } from "./require-core.js";
import { newCoreVerifier, type CoreVerifier } from "./verifier.js";

/** A delivery as a handler returns it: any partial init of the Delivery message. */
export type DeliveryInit = MessageInitShape<typeof DeliverySchema>;

/** What a connector implements. The SDK echoes the call's batch ID into the delivery. */
export interface ConnectorHandler {
  /** Pulls what the institution reported since `request.watermark`. */
  sync(request: SyncRequest, context: HandlerContext): Promise<DeliveryInit>;
  /** Maps one statement file; read the stream with receiveFile. Unimplemented when absent. */
  importFile?(requests: AsyncIterable<ImportFileRequest>, context: HandlerContext): Promise<DeliveryInit>;
}

/** How long calls in flight may finish after shutdown starts (seed 000: up to 20 seconds). */
export const SHUTDOWN_GRACE_MS = 20_000;

/** Options for serveConnector; everything defaults to the operator's environment. */
export interface ServeOptions {
  /** The port; OPENFIEF_LISTEN_PORT by default. 0 picks a free one. */
  readonly port?: number;
  /** The address to bind; all interfaces by default. */
  readonly host?: string;
  /** Verifies the core's token; newCoreVerifier(env) by default. */
  readonly verifier?: CoreVerifier;
  /** The environment to read; process.env by default. */
  readonly env?: Environment;
  /** How long calls in flight may finish on shutdown, in milliseconds (20 s by default). */
  readonly shutdownGraceMs?: number;
  /** Shuts the server down when aborted. */
  readonly signal?: AbortSignal;
  /** The largest message the server reads, in bytes (16 MiB by default). */
  readonly readMaxBytes?: number;
  /** Told the reason of every refused request (for metrics or logs; never the token). */
  readonly onRefused?: RefusalListener;
}

/** A running connector server. */
export interface ConnectorServer {
  /** The base URL the server listens on, such as `http://127.0.0.1:8080`. */
  readonly url: string;
  /** The port it listens on. */
  readonly port: number;
  /** Stops taking calls, lets those in flight finish within the grace period, then closes. */
  close(): Promise<void>;
}

/** The Connect routes of a connector handler, for use with any Connect server adapter. */
export function connectorRoutes(handler: ConnectorHandler): (router: ConnectRouter) => void {
  return (router) => {
    router.service(ConnectorService, {
      async sync(request, context) {
        const delivery = create(DeliverySchema, await handler.sync(request, context));
        delivery.batchId = request.batchId;
        return create(SyncResponseSchema, { delivery });
      },
      async importFile(requests, context) {
        if (handler.importFile === undefined) throw new ConnectError("this connector imports no files", Code.Unimplemented);
        let batchId = "";
        async function* tap(): AsyncGenerator<ImportFileRequest> {
          for await (const message of requests) {
            if (batchId === "" && message.payload.case === "header") batchId = message.payload.value.batchId;
            yield message;
          }
        }
        const delivery = create(DeliverySchema, await handler.importFile(tap(), context));
        delivery.batchId = batchId;
        return create(ImportFileResponseSchema, { delivery });
      },
    });
  };
}

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/**
 * Serves a connector (seed 000, ServeConnector): the Connect routes behind requireCore, over
 * HTTP/1.1 and h2c on one port (ImportFile streams), until `close()` or the signal.
 */
export async function serveConnector(handler: ConnectorHandler, options: ServeOptions = {}): Promise<ConnectorServer> {
  const env = options.env ?? process.env;
  const verifier = options.verifier ?? newCoreVerifier(env);
  const port = options.port ?? listenPort(env);
  const grace = options.shutdownGraceMs ?? SHUTDOWN_GRACE_MS;
  const connect = connectNodeAdapter({ routes: connectorRoutes(handler), readMaxBytes: options.readMaxBytes ?? 16 * 1024 * 1024 });
  const guarded = requireCore(verifier, connect as (req: AnyRequest, res: AnyResponse) => void, options.onRefused);

  let closing = false;
  const inflight = new Set<AnyResponse>();
  const busy = new Map<net.Socket, number>(); // HTTP/1.1 sockets and their open requests
  const sockets = new Set<net.Socket>();
  const h2Sockets = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  let drained: (() => void) | undefined;

  const onRequest = (req: AnyRequest, res: AnyResponse): void => {
    const socket = req.httpVersionMajor === 1 ? (req.socket as net.Socket) : undefined;
    if (closing) {
      // Stop taking calls: a new request on a kept-alive connection is told to go elsewhere.
      req.resume();
      res.writeHead(503, { "content-type": "application/json", ...(socket !== undefined ? { connection: "close" } : {}) });
      res.end(JSON.stringify({ code: "unavailable", message: "the connector is shutting down" }));
      return;
    }
    inflight.add(res);
    if (socket !== undefined) busy.set(socket, (busy.get(socket) ?? 0) + 1);
    res.once("close", () => {
      inflight.delete(res);
      if (socket !== undefined) {
        const left = (busy.get(socket) ?? 1) - 1;
        busy.set(socket, left);
        if (closing && left === 0) socket.destroy();
      }
      if (closing && inflight.size === 0) drained?.();
    });
    guarded(req, res);
  };

  const h1 = http.createServer(onRequest);
  const h2 = http2.createServer(onRequest);
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });

  // One port for both: a connection that opens with the HTTP/2 preface is h2c, any other HTTP/1.1.
  const front = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      h2Sockets.delete(socket);
      busy.delete(socket);
    });
    let seen = Buffer.alloc(0);
    const sniff = (chunk: Buffer): void => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, H2_PREFACE.length);
      const h2c = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (h2c && seen.length < H2_PREFACE.length) return;
      socket.off("data", sniff);
      socket.pause();
      socket.unshift(seen);
      if (h2c) {
        // The HTTP/2 session takes over the socket's handle and reads what was unshifted.
        h2Sockets.add(socket);
        h2.emit("connection", socket);
      } else {
        busy.set(socket, 0);
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", sniff);
    socket.on("error", () => socket.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    front.once("error", reject);
    const ready = (): void => {
      front.off("error", reject);
      resolve();
    };
    if (options.host !== undefined) front.listen(port, options.host, ready);
    else front.listen(port, ready);
  });
  const address = front.address() as net.AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      closing = true;
      const stopped = new Promise<void>((resolve) => front.close(() => resolve()));
      // HTTP/2 sessions stay open until their calls finish: Node's GOAWAY on close() makes
      // Connect's client cancel streams already in flight. New calls on them get 503 meanwhile.
      for (const socket of sockets) {
        // Idle HTTP/1.1 connections and ones that never sent a request go now.
        if (!h2Sockets.has(socket) && (busy.get(socket) ?? 0) === 0) socket.destroy();
      }
      if (inflight.size > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, grace);
          drained = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      for (const session of sessions) session.close();
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
      await stopped;
    })();
    return closed;
  };
  options.signal?.addEventListener("abort", () => void close(), { once: true });
  if (options.signal?.aborted === true) await close();

  return { url: `http://${host}:${address.port}`, port: address.port, close };
}

/**
 * A connector's whole serving side as a process (seed 000, ServeConnector): serves with the
 * operator's environment until SIGTERM or SIGINT, then shuts down gracefully.
 */
export async function runConnector(handler: ConnectorHandler, options: Omit<ServeOptions, "signal"> = {}): Promise<void> {
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  const server = await serveConnector(handler, { ...options, signal: stop.signal });
  await new Promise<void>((resolve) => stop.signal.addEventListener("abort", () => resolve(), { once: true }));
  await server.close();
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
}
