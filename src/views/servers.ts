/**
 * The two listeners of the views part: the plugin proxy and the gateway, each on its own origin
 * (FUN-17 "Origin model"). They are bound first, so an origin written with port 0 (tests) becomes
 * the port bound and every policy built from the origins (the CSP, CORS) names the real one; the
 * handlers come after, and until then a request is answered 503. `close()` stops taking
 * connections and ends the open ones (a watch would keep a server open for an hour). At debug
 * level each answer is an access line (method, target, status): preflights too.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { createListener, requestLogger } from "../http/index.js";

/** What serves one listener. */
export interface ViewHandler {
  handle(req: IncomingMessage, res: ServerResponse): void;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** One bound listener and the origin it serves. */
export interface BoundListener {
  readonly origin: string;
  /** Where it listens (`127.0.0.1:4781`). */
  readonly address: string;
}

/** The views part's two listeners. */
export interface ViewListeners {
  readonly pluginProxy: BoundListener;
  readonly gateway: BoundListener;
  /** Hands each listener its handler; requests before this are answered 503. */
  serve(handlers: { readonly pluginProxy: ViewHandler; readonly gateway: ViewHandler }): void;
  close(): Promise<void>;
}

/** A listener of the views part that could not bind: which, where, and the system's code (EADDRINUSE, EACCES, …). */
export class ViewListenerFailed extends Error {
  constructor(
    readonly listener: "plugin-proxy" | "gateway",
    readonly address: string,
    readonly code: string,
  ) {
    super(`the ${listener} cannot listen on ${address} (${code})`);
    this.name = "ViewListenerFailed";
  }
}

/** The port an origin names: its own, the scheme's default, or 0 ("any") as written. */
export function originPort(origin: string): number {
  const u = new URL(origin);
  if (u.port !== "") return Number(u.port);
  return u.protocol === "https:" ? 443 : 80;
}

interface Slot {
  readonly server: Server;
  handler: ViewHandler | null;
}

function notYet(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(503, { "content-type": "text/plain; charset=utf-8", "retry-after": "1", connection: "close" });
  res.end("starting\n");
}

/** One access line per answer, at debug level, by the request's own logger: the method, the target (capped; tokens never ride in one), the status. */
function accessLog(logger: Logger | undefined, listener: string, req: IncomingMessage, res: ServerResponse): void {
  if (logger === undefined) return;
  const log = requestLogger(logger, req, res);
  if (!log.isLevelEnabled("debug")) return;
  res.once("finish", () => log.debug({ listener, method: req.method, target: (req.url ?? "").slice(0, 512), status: res.statusCode }, "views: answered"));
}

async function bind(host: string, port: number, name: "plugin-proxy" | "gateway", logger: Logger | undefined): Promise<{ slot: Slot; port: number }> {
  // The limits every listener has (src/http).
  const server = createListener();
  const slot: Slot = { server, handler: null };
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    accessLog(logger, name, req, res);
    return slot.handler === null ? notYet(req, res) : slot.handler.handle(req, res);
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (slot.handler !== null) return slot.handler.handleUpgrade(req, socket, head);
    socket.on("error", () => socket.destroy());
    socket.end("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException): void => reject(new ViewListenerFailed(name, host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`, err.code ?? "unknown"));
    server.once("error", failed);
    server.listen(port, host, () => {
      server.off("error", failed);
      resolve();
    });
  });
  return { slot, port: (server.address() as AddressInfo).port };
}

/** An origin with the port bound in place of a 0. */
function boundOrigin(origin: string, port: number): string {
  const u = new URL(origin);
  if (u.port === "0") u.port = String(port);
  return u.origin;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Watches and tails stay open until their end: cut them, the control plane is stopping.
    server.closeAllConnections();
  });
}

/** Binds the plugin proxy's and the gateway's listeners on `host`, at the ports their origins name. */
export async function listenViews(o: { readonly host: string; readonly pluginProxyOrigin: string; readonly gatewayOrigin: string; readonly logger?: Logger }): Promise<ViewListeners> {
  const proxy = await bind(o.host, originPort(o.pluginProxyOrigin), "plugin-proxy", o.logger);
  let gateway: Awaited<ReturnType<typeof bind>>;
  try {
    gateway = await bind(o.host, originPort(o.gatewayOrigin), "gateway", o.logger);
  } catch (err) {
    await closeServer(proxy.slot.server);
    throw err;
  }
  const address = (port: number) => (o.host.includes(":") ? `[${o.host}]:${port}` : `${o.host}:${port}`);
  let closed: Promise<void> | null = null;
  return {
    pluginProxy: { origin: boundOrigin(o.pluginProxyOrigin, proxy.port), address: address(proxy.port) },
    gateway: { origin: boundOrigin(o.gatewayOrigin, gateway.port), address: address(gateway.port) },
    serve(handlers) {
      proxy.slot.handler = handlers.pluginProxy;
      gateway.slot.handler = handlers.gateway;
    },
    close() {
      closed ??= Promise.all([closeServer(proxy.slot.server), closeServer(gateway.slot.server)]).then(() => undefined);
      return closed;
    },
  };
}
