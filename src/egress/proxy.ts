/**
 * The egress proxy (seed 004, issue 6): an HTTP CONNECT proxy on node:http that lets each plugin
 * reach only the `host:port`s of its allow-list, and never a private address.
 *
 * Order of a CONNECT, as Smokescreen's checkIfRequestShouldBeProxied: target → identity →
 * allow-list → resolve → check every address → choose the address → (record ∥ dial) → 200. An
 * unlisted host is never resolved. The commit and the dial run together, but the 200 and every
 * byte in either direction wait for both: no byte crosses a tunnel whose decision is not committed,
 * and when the commit fails the upstream socket is destroyed unused and the client gets a 503.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { networkInterfaces } from "node:os";
import { performance } from "node:perf_hooks";
import type { Duplex } from "node:stream";
import type { Socket } from "node:net";
import type { Logger } from "pino";
import { decideEgress, pluginForServiceAccount, PROXY_PORT } from "../plugins/index.js";
import { AddressPolicy } from "./address.js";
import { withTimeout } from "./deadline.js";
import type { AllowListSource } from "./allowlist-source.js";
import type { EgressDecisionRecord } from "./decision.js";
import { proxyToken, PROXY_AUTH_MESSAGES } from "./proxy-auth.js";
import type { DecisionRecorder } from "./recorder.js";
import type { ResolveOutcome, Resolver } from "./resolver.js";
import { reviewWithin, systemClock, type Clock, type TokenReviewer } from "./reviewer.js";
import { parseConnectTarget } from "./target.js";

/** The realm of every 407's `Proxy-Authenticate`. */
export const PROXY_REALM = "openfief-egress";

/** The address the proxy dials: always one it checked. */
export interface DialAddress {
  readonly address: string;
  readonly family: 4 | 6;
  readonly port: number;
}

/** Opens the upstream connection; tests map "public" addresses to local listeners here. */
export type ConnectFn = (addr: DialAddress) => Socket | Promise<Socket>;

/** Tunables; every one has the default. */
export interface EgressProxyOptions {
  readonly host?: string;
  readonly port?: number;
  readonly maxTunnels?: number;
  readonly dnsTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly headTimeoutMs?: number;
  readonly reviewTimeoutMs?: number;
  readonly idleMs?: number;
  readonly drainMs?: number;
  /** Pod, Service and node CIDRs, refused like the seed's ranges. */
  readonly extraDenyCidrs?: readonly string[];
  /** Seconds in the `Retry-After` of a 429. */
  readonly retryAfterSeconds?: number;
  /** High-water mark of the client sockets, in bytes (see {@link TUNNEL_HIGH_WATER_MARK}). */
  readonly highWaterMark?: number;
}

/**
 * Buffer threshold of a tunnel socket. Above one libuv read (64 KiB), so that writing one chunk on
 * does not report back-pressure and pause/resume the reading side on every chunk; small enough
 * that a slow peer holds at most a few hundred KiB per tunnel in the proxy.
 */
export const TUNNEL_HIGH_WATER_MARK = 128 * 1024;

/** The ports the proxy is built from. */
export interface EgressProxyPorts {
  readonly reviewer: TokenReviewer;
  readonly allowLists: AllowListSource;
  readonly resolver: Resolver;
  readonly connect: ConnectFn;
  readonly recorder: DecisionRecorder;
  readonly logger: Logger;
  readonly clock?: Clock;
  readonly options?: EgressProxyOptions;
  /** The environment checked for HTTPS_PROXY; `process.env` by default. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Extra addresses of this proxy (beyond its interfaces and listen address). */
  readonly ownAddresses?: readonly string[];
}

/** A built proxy. `listen` opens the port; `close` drains. */
export interface EgressProxy {
  listen(): Promise<{ host: string; port: number }>;
  /** Stops taking CONNECTs, drains open tunnels up to `drainMs`, then closes the rest. */
  close(): Promise<void>;
  /** False once draining has begun (and before listening). */
  readonly ready: boolean;
  /** Open tunnels plus CONNECTs being decided. */
  readonly activeTunnels: number;
  readonly server: Server;
}

/** Thrown when the proxy is built in a state that would weaken it. */
export class EgressConfigError extends Error {
  constructor(
    readonly code: "https_proxy_set" | "no_allowlist_source" | "invalid_option",
    message: string,
  ) {
    super(message);
    this.name = "EgressConfigError";
  }
}

const DEFAULTS = {
  host: "0.0.0.0",
  port: PROXY_PORT,
  maxTunnels: 4096,
  dnsTimeoutMs: 5000,
  connectTimeoutMs: 10_000,
  headTimeoutMs: 10_000,
  reviewTimeoutMs: 5000,
  idleMs: 300_000,
  drainMs: 25_000,
  retryAfterSeconds: 1,
  highWaterMark: TUNNEL_HIGH_WATER_MARK,
} as const;

const STATUS_TEXT: Record<number, string> = {
  200: "Connection Established",
  400: "Bad Request",
  405: "Method Not Allowed",
  407: "Proxy Authentication Required",
  429: "Too Many Requests",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** What one CONNECT came to; one pino line per CONNECT carries it. */
interface Outcome {
  status: number;
  code: string;
  plugin?: string;
  host?: string;
  port?: number;
  reason?: string;
  address?: string;
  refusedAddress?: string;
  allowed: boolean;
}

/** An open tunnel; `seen`/`activeAt` are the idle sweep's last reading. */
interface Tunnel {
  readonly client: Socket;
  readonly upstream: Socket;
  seen: number;
  activeAt: number;
  readonly end: () => void;
}

function localAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) out.push(i.address);
  return out;
}

/**
 * Throws when HTTPS_PROXY/https_proxy is set: CONNECTs could then be chained through another proxy,
 * past the address check. Exported so that a caller can refuse before any other setup.
 */
export function refuseUpstreamProxyEnv(env: Readonly<Record<string, string | undefined>>): void {
  for (const name of ["HTTPS_PROXY", "https_proxy"]) {
    const v = env[name];
    if (v !== undefined && v !== "") throw new EgressConfigError("https_proxy_set", `${name} is set in the proxy's environment; refusing to start`);
  }
}

/**
 * Builds the proxy from its ports. Refuses to build when HTTPS_PROXY/https_proxy is set (CONNECTs
 * could be chained past the address check) or without an allow-list source (never allow-all).
 */
export function createEgressProxy(ports: EgressProxyPorts): EgressProxy {
  refuseUpstreamProxyEnv(ports.env ?? process.env);
  if ((ports.allowLists as AllowListSource | undefined)?.current === undefined) {
    throw new EgressConfigError("no_allowlist_source", "the egress proxy never runs without an allow-list source");
  }
  const o = { ...DEFAULTS, ...(ports.options ?? {}) };
  for (const k of ["maxTunnels", "dnsTimeoutMs", "connectTimeoutMs", "headTimeoutMs", "reviewTimeoutMs", "idleMs", "drainMs", "highWaterMark"] as const) {
    if (!Number.isFinite(o[k]) || o[k] <= 0) throw new EgressConfigError("invalid_option", `${k} must be positive`);
  }
  const logger = ports.logger;
  const clock = ports.clock ?? systemClock;
  let policy = new AddressPolicy({ extraDenyCidrs: o.extraDenyCidrs ?? [], ownAddresses: [...localAddresses(), ...(ports.ownAddresses ?? [])] });

  let listening = false;
  let draining = false;
  let active = 0;
  const tunnels = new Set<Tunnel>();
  const pendingSockets = new Set<Duplex>();
  const connections = new Set<Socket>();

  const server = createServer({
    highWaterMark: o.highWaterMark,
    headersTimeout: o.headTimeoutMs,
    requestTimeout: o.headTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(o.headTimeoutMs / 4))),
    keepAliveTimeout: 5000,
  });

  server.on("connection", (socket: Socket) => {
    connections.add(socket);
    socket.on("close", () => connections.delete(socket));
    // A client that never finishes its head is cut off even if no byte ever arrives.
    socket.setTimeout(o.headTimeoutMs, () => socket.destroy());
  });

  server.on("clientError", (_err: Error, socket: Duplex) => {
    if (socket.writable) socket.end(`HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    else socket.destroy();
  });

  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    (req.socket as Socket).setTimeout(0);
    res.shouldKeepAlive = false;
    if ((req.method === "GET" || req.method === "HEAD") && req.url === "/healthcheck") {
      res.writeHead(draining || !listening ? 503 : 204).end();
      return;
    }
    // Anything but CONNECT would show the proxy the whole request, and let it change it.
    res.writeHead(405, { Allow: "CONNECT", "Content-Type": "text/plain" }).end("only CONNECT is allowed\n");
    logger.info({ status: 405, code: "method_not_allowed", method: req.method }, "egress refused");
  });

  function answer(socket: Duplex, status: number, code: string, extra: Record<string, string> = {}): void {
    const explained = (PROXY_AUTH_MESSAGES as Record<string, string>)[code];
    const body = explained === undefined ? `${code}\n` : `${code}: ${explained}\n`;
    const headers: Record<string, string> = { "Content-Type": "text/plain", "Content-Length": String(Buffer.byteLength(body)), Connection: "close", ...extra };
    if (status === 407) headers["Proxy-Authenticate"] = `Basic realm="${PROXY_REALM}"`;
    let head = `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? ""}\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    if (!socket.destroyed) socket.end(`${head}\r\n${body}`);
  }

  function logDecision(out: Outcome, started: number): void {
    // Built field by field (no spreads): this runs once per CONNECT.
    const decision: Record<string, unknown> = { allowed: out.allowed, status: out.status, code: out.code };
    if (out.plugin !== undefined) decision.plugin = out.plugin;
    if (out.host !== undefined) decision.host = out.host;
    if (out.port !== undefined) decision.port = out.port;
    if (out.reason !== undefined) decision.reason = out.reason;
    if (out.address !== undefined) decision.address = out.address;
    if (out.refusedAddress !== undefined) decision.refusedAddress = out.refusedAddress;
    const line = { decision, ms: clock.now() - started };
    if (out.allowed) logger.info(line, "egress decision");
    else logger.warn(line, "egress decision");
  }

  /**
   * A connected upstream may wait for the decision's commit: an error in that window must destroy
   * it (the tunnel then sees it destroyed) rather than go unhandled.
   */
  function guarded(socket: Socket): Socket {
    socket.on("error", () => socket.destroy());
    return socket;
  }

  async function dial(target: DialAddress): Promise<{ ok: true; socket: Socket } | { ok: false; status: 502 | 504; code: string }> {
    let socket: Socket;
    try {
      socket = await ports.connect(target);
    } catch {
      return { ok: false, status: 502, code: "dial_failed" };
    }
    // Already connected (a connect function may hand back an open socket). A fresh, never
    // connected Socket also reads as "open", so look for a peer instead.
    if (!socket.connecting && socket.remoteAddress !== undefined && !socket.destroyed) return { ok: true, socket: guarded(socket) };
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        cleanup();
        socket.destroy();
        resolve({ ok: false, status: 504, code: "connect_timeout" });
      }, o.connectTimeoutMs);
      const onConnect = (): void => {
        cleanup();
        resolve({ ok: true, socket: guarded(socket) });
      };
      const onError = (): void => {
        cleanup();
        socket.destroy();
        resolve({ ok: false, status: 502, code: "dial_failed" });
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        socket.off("connect", onConnect);
        socket.off("error", onError);
      };
      socket.once("connect", onConnect);
      socket.once("error", onError);
    });
  }

  async function handleConnect(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const started = clock.now();
    const sock = client as Socket;
    sock.setTimeout(0);
    client.pause();
    client.on("error", () => client.destroy());
    const out: Outcome = { status: 0, code: "", allowed: false };
    const refuse = (status: number, code: string, extra: Record<string, string> = {}): void => {
      out.status = status;
      out.code = code;
      answer(client, status, code, extra);
    };

    if (draining) {
      refuse(503, "draining");
      logDecision(out, started);
      return;
    }
    if (active >= o.maxTunnels) {
      refuse(429, "too_many_tunnels", { "Retry-After": String(o.retryAfterSeconds) });
      logDecision(out, started);
      return;
    }
    active++;
    pendingSockets.add(client);
    let counted = true;
    const release = (): void => {
      if (counted) {
        counted = false;
        active--;
      }
      pendingSockets.delete(client);
    };
    client.once("close", release);

    try {
      await decideAndTunnel(req, client, head, out, refuse);
    } catch (err) {
      logger.error({ err: err instanceof Error ? err.message : String(err) }, "egress internal error");
      if (out.status === 0) refuse(502, "internal_error");
    } finally {
      pendingSockets.delete(client);
      if (out.status !== 200) release();
      logDecision(out, started);
    }
  }

  async function decideAndTunnel(
    req: IncomingMessage,
    client: Duplex,
    head: Buffer,
    out: Outcome,
    refuse: (status: number, code: string, extra?: Record<string, string>) => void,
  ): Promise<void> {
    const target = parseConnectTarget(req.url ?? "");
    if (!target.ok) return refuse(400, target.code);
    const { host, port } = target.value;
    out.host = host;
    out.port = port;

    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      if ((req.rawHeaders[i] ?? "").toLowerCase() === "x-upstream-https-proxy") return refuse(407, "upstream_proxy_refused");
    }

    // Identity. The token lives only in this scope: never in `out`, a log line or an answer.
    const tok = proxyToken(req.rawHeaders);
    if (!tok.ok) return refuse(407, tok.code);
    const reviewing = reviewWithin(ports.reviewer, tok.token, o.reviewTimeoutMs);
    const review = reviewing instanceof Promise ? await reviewing : reviewing;
    if (!review.ok) return refuse(407, review.code);
    const who = pluginForServiceAccount(review.username);
    if (!who.ok) return refuse(407, "not_a_plugin");
    const plugin = who.value;
    out.plugin = plugin;

    // Decisions of an identified plugin are recorded; a refusal without identity has no valid
    // stream (`egress/<plugin>` needs a plugin name), so it is only logged.
    const record = async (d: EgressDecisionRecord): Promise<boolean> => {
      try {
        await ports.recorder.record(d);
        return true;
      } catch (err) {
        logger.error({ err: err instanceof Error ? err.message : String(err), plugin }, "egress decision could not be recorded");
        return false;
      }
    };

    const verdict = decideEgress(ports.allowLists.current(), plugin, host, port);
    out.reason = verdict.reason;
    if (!verdict.allowed) {
      await record({ plugin, host, port, allowed: false, reason: verdict.reason });
      return refuse(407, verdict.reason);
    }

    const resolved = await resolveWithin(host);
    if (!resolved.ok) {
      out.reason = resolved.code;
      await record({ plugin, host, port, allowed: false, reason: resolved.code });
      return refuse(resolved.code === "dns_timeout" ? 504 : 502, resolved.code);
    }
    // Every address must pass, or the whole name is refused rather than dialed at a public one.
    let chosen: { address: string; family: 4 | 6 } | undefined;
    for (const a of resolved.addresses) {
      const v = policy.check(a);
      if (!v.ok) {
        out.reason = "forbidden_address";
        out.refusedAddress = a;
        await record({ plugin, host, port, allowed: false, reason: "forbidden_address" });
        return refuse(502, `forbidden_address:${v.code}`);
      }
      chosen ??= { address: v.address, family: v.family };
    }
    if (chosen === undefined) {
      out.reason = "dns_no_addresses";
      await record({ plugin, host, port, allowed: false, reason: "dns_no_addresses" });
      return refuse(502, "dns_no_addresses");
    }

    if (draining) return refuse(503, "draining");
    if (client.destroyed) {
      out.status = 499;
      out.code = "client_gone";
      return;
    }
    // The address is chosen; its commit and its dial start together. The client stays paused and
    // nothing is written upstream until both have finished: no record, no tunnel.
    const [committed, dialed] = await Promise.all([
      record({ plugin, host, port, allowed: true, reason: verdict.reason, address: chosen.address }),
      dial({ ...chosen, port }),
    ]);
    if (!committed) {
      if (dialed.ok) dialed.socket.destroy();
      return refuse(503, "record_failed");
    }
    out.address = chosen.address;
    if (!dialed.ok) return refuse(dialed.status, dialed.code);
    const upstream = dialed.socket;
    if (upstream.destroyed) return refuse(502, "dial_failed");
    if (client.destroyed) {
      upstream.destroy();
      out.status = 499;
      out.code = "client_gone";
      return;
    }
    out.status = 200;
    out.code = "tunnel";
    out.allowed = true;
    startTunnel(client, upstream, head);
  }

  /** The resolver under the DNS deadline; a synchronous answer (a cache hit) needs no timer. */
  function resolveWithin(host: string): ResolveOutcome | Promise<ResolveOutcome> {
    let answer: ResolveOutcome | Promise<ResolveOutcome>;
    try {
      answer = ports.resolver.resolve(host);
    } catch {
      return { ok: false, code: "dns_failed" };
    }
    if (!(answer instanceof Promise)) return answer;
    return withTimeout<ResolveOutcome>(
      answer.catch((): ResolveOutcome => ({ ok: false, code: "dns_failed" })),
      o.dnsTimeoutMs,
      { ok: false, code: "dns_timeout" },
    );
  }

  // Idle tunnels: one sweep over every tunnel reads the client socket's byte counters (both
  // directions pass through it), instead of re-arming a timer on every chunk.
  const sweepEveryMs = Math.max(10, Math.min(5000, Math.floor(o.idleMs / 8)));
  let sweeper: NodeJS.Timeout | undefined;
  function sweepIdle(): void {
    const now = performance.now();
    for (const t of tunnels) {
      const seen = t.client.bytesRead + t.client.bytesWritten;
      if (seen !== t.seen) {
        t.seen = seen;
        t.activeAt = now;
      } else if (now - t.activeAt >= o.idleMs) t.end();
    }
    if (tunnels.size === 0 && sweeper !== undefined) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  }

  function startTunnel(client: Duplex, upstream: Socket, head: Buffer): void {
    const sock = client as Socket;
    const entry: Tunnel = {
      client: sock,
      upstream,
      seen: -1,
      activeAt: performance.now(),
      end: () => {
        client.destroy();
        upstream.destroy();
        tunnels.delete(entry);
      },
    };
    tunnels.add(entry);
    upstream.setNoDelay(true);
    sock.setNoDelay?.(true);
    upstream.on("error", entry.end);
    client.on("error", entry.end);
    upstream.on("close", entry.end);
    client.on("close", entry.end);
    if (sweeper === undefined) {
      sweeper = setInterval(sweepIdle, sweepEveryMs);
      sweeper.unref();
    }
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  server.on("connect", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    void handleConnect(req, socket, head);
  });

  return {
    server,
    get ready() {
      return listening && !draining;
    },
    get activeTunnels() {
      return active;
    },
    listen: () =>
      new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(o.port, o.host, () => {
          server.off("error", reject);
          const addr = server.address();
          const bound = typeof addr === "object" && addr !== null ? { host: addr.address, port: addr.port } : { host: o.host, port: o.port };
          // The listen address joins the refused own addresses (every interface is already there).
          policy = new AddressPolicy({ extraDenyCidrs: o.extraDenyCidrs ?? [], ownAddresses: [...localAddresses(), ...(ports.ownAddresses ?? []), bound.host] });
          listening = true;
          logger.info({ host: bound.host, port: bound.port }, "egress proxy listening");
          resolve(bound);
        });
      }),
    close: async () => {
      if (draining) return;
      draining = true;
      logger.info({ tunnels: tunnels.size }, "egress proxy draining");
      // The port stays open while draining so that /healthcheck can answer 503 (not ready) and a
      // late CONNECT gets a clear 503 rather than a refused connection; it closes after the drain.
      server.closeIdleConnections();
      // Wall time, not the injected clock: a frozen test clock must not make draining endless.
      const deadline = Date.now() + o.drainMs;
      while ((tunnels.size > 0 || pendingSockets.size > 0) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, Math.min(100, o.drainMs)));
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const t of tunnels) {
        t.client.destroy();
        t.upstream.destroy();
      }
      if (sweeper !== undefined) clearInterval(sweeper);
      sweeper = undefined;
      for (const s of pendingSockets) s.destroy();
      for (const s of connections) s.destroy();
      await closed;
      logger.info("egress proxy closed");
    },
  };
}
