/**
 * The egress proxy (seed 004, issue 6): an HTTP CONNECT proxy on node:net that lets each plugin
 * reach only the `host:port`s of its allow-list, and never a private address. This module is the
 * server and its lifecycle; a connection's head is read by hand (`connections.ts`,
 * `request-head.ts`, ADR 0035), the steps of a CONNECT are values from `handshake.ts` (target and
 * identity), `decide.ts` (allow-list and addresses), `dial.ts`, `answer.ts` and `tunnel.ts`, and
 * every refusal is a row of `refusals.ts`.
 *
 * Order of a CONNECT, as Smokescreen's checkIfRequestShouldBeProxied: target → identity →
 * allow-list → resolve → check every address → choose the address → (record ∥ dial) → 200. An
 * unlisted host is never resolved. The commit and the dial run together, but the 200 and every
 * byte in either direction wait for both: no byte crosses a tunnel whose decision is not committed,
 * and when the commit fails the upstream socket is destroyed unused and the client gets a 503.
 */
import { createServer, type Server, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { PROXY_PORT } from "../plugins/index.js";
import { AddressPolicy } from "./address.js";
import { answerRefusal, type RefusalFacts, BAD_REQUEST, HEALTHY, INTERNAL_ERROR, METHOD_NOT_ALLOWED, METHOD_NOT_ALLOWED_TO_HEAD, okBytes, UNAVAILABLE } from "./answer.js";
import { Connections } from "./connections.js";
import type { AllowListSource } from "./allowlist-source.js";
import { AnonymousRecording, type AnonymousLimitOptions } from "./anonymous-limit.js";
import { afterResolution, decideAddresses, decideListed, type DestinationDecision } from "./decide.js";
import { decisionRecord, type AnonymousRecord, type EgressDecisionRecord } from "./decision.js";
import { withTimeout } from "./deadline.js";
import { dial, type ConnectFn } from "./dial.js";
import { handshakeOf, identify } from "./handshake.js";
import { decisionLine, refused, refusalDetail, type ConnectFacts, type ConnectOutcome } from "./outcome.js";
import type { EgressMetrics, ParserRejection } from "./metrics.js";
import type { HeadRejection, RequestHead } from "./request-head.js";
import type { DecisionRecorder } from "./recorder.js";
import { CommitError } from "./writer.js";
import { REFUSALS, type RefusalCode } from "./refusals.js";
import type { ResolveOutcome, Resolver } from "./resolver.js";
import { systemClock, type Clock, type TokenReviewer } from "./reviewer.js";
import { Tunnels, type Slot } from "./tunnel.js";

export { PROXY_REALM } from "./answer.js";
export type { DialAddress } from "./decide.js";
export type { ConnectFn } from "./dial.js";

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
  /** The proxy's counters; none are kept without it. */
  readonly metrics?: EgressMetrics;
  /** When set, `GET /metrics` on the proxy's own port serves this registry (cluster mode). */
  readonly metricsRegistry?: Registry;
  /** Flushes a buffered log (`bufferedLog`); called at the end of `close`, after the last line. */
  readonly flushLog?: () => void | Promise<void>;
  /** The budget of refusals before identity recorded one by one (docs/adr/0091's defaults otherwise). */
  readonly anonymousLimits?: Omit<AnonymousLimitOptions, "clock">;
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

/** A decided CONNECT: its outcome, and the connected upstream when it is a tunnel. */
type Decided = { readonly outcome: ConnectOutcome; readonly upstream?: Socket };

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
  const policyFor = (extra: readonly string[]): AddressPolicy =>
    new AddressPolicy({ extraDenyCidrs: o.extraDenyCidrs ?? [], ownAddresses: [...localAddresses(), ...(ports.ownAddresses ?? []), ...extra] });
  let policy = policyFor([]);

  let listening = false;
  let draining = false;
  const metrics = ports.metrics;
  metrics?.watchCommits(() => ports.recorder.waiting ?? 0);
  const tunnels = new Tunnels({ maxTunnels: o.maxTunnels, idleMs: o.idleMs, ...(metrics !== undefined ? { onOpenChange: (n: number) => metrics.openTunnels.set(n) } : {}) });
  // Refusals before identity: one by one within their budget, then summaries (docs/adr/0091).
  const anonymous = new AnonymousRecording({ ...(ports.anonymousLimits ?? {}), clock }, {
    ...(ports.recorder.recordRefusal === undefined ? {} : { record: (r: AnonymousRecord) => ports.recorder.recordRefusal?.(r) }),
    recorded: () => metrics?.anonymousRecorded.inc(),
    summarised: () => metrics?.anonymousDropped.inc(),
  });
  const connections = new Connections({
    headTimeoutMs: o.headTimeoutMs,
    handlers: {
      head: (socket, head, rest) => {
        if (head.method === "CONNECT") void handleConnect(socket, head, rest);
        else plainRequest(socket, head);
      },
      refused: (socket, rejection) => {
        parserRejected(rejection.kind, rejection.reason, socket);
        connections.answer(socket, BAD_REQUEST);
      },
      // Cut off without an answer: a client that has not finished its head is not reading one.
      timedOut: (socket) => parserRejected("timeout", "head_timeout", socket),
      truncated: (socket) => {
        parserRejected("other", "truncated_head", socket);
        connections.answer(socket, BAD_REQUEST);
      },
    },
  });
  // Half-open: a client's FIN ends only its direction of a tunnel; no Nagle delay on answers
  // (both as node:http's server had it, ADR 0035).
  const server = createServer({ allowHalfOpen: true, noDelay: true, highWaterMark: o.highWaterMark });
  server.on("connection", (socket: Socket) => connections.accept(socket));

  /** A request refused before the proxy's checks: one log line and one count each, never its bytes. */
  function parserRejected(kind: ParserRejection, code: HeadRejection["reason"] | "missing_host" | "head_timeout" | "truncated_head", socket: Socket): void {
    metrics?.parserRejections.inc({ kind });
    // Never the raw packet: it may hold a Proxy-Authorization header.
    logger.warn({ status: 400, kind, code, remote: socket.remoteAddress }, "egress request rejected by the HTTP parser");
  }

  /** Anything but a CONNECT: the health check, metrics (cluster mode), or a 405. One answer, then close. */
  function plainRequest(socket: Socket, head: RequestHead): void {
    if (head.minor === 1 && !head.host) {
      parserRejected("missing_host", "missing_host", socket);
      connections.answer(socket, BAD_REQUEST);
      return;
    }
    const { method, target } = head;
    if ((method === "GET" || method === "HEAD") && target === "/healthcheck") {
      connections.answer(socket, draining || !listening ? UNAVAILABLE : HEALTHY);
      return;
    }
    const registry = ports.metricsRegistry;
    if (registry !== undefined && method === "GET" && target === "/metrics") {
      void registry.metrics().then(
        (text) => connections.answer(socket, okBytes(registry.contentType, text)),
        () => connections.answer(socket, INTERNAL_ERROR),
      );
      return;
    }
    // Anything but CONNECT would show the proxy the whole request, and let it change it.
    connections.answer(socket, method === "HEAD" ? METHOD_NOT_ALLOWED_TO_HEAD : METHOD_NOT_ALLOWED);
    logger.info({ status: 405, code: "method_not_allowed", method }, "egress refused");
  }

  /** Answers a refusal from the table and closes the connection once its client has gone. */
  function refuse(socket: Socket, code: RefusalCode, facts?: RefusalFacts): void {
    answerRefusal(socket, code, facts);
    connections.linger(socket);
  }

  function logDecision(out: ConnectOutcome, started: number): void {
    const status = out.kind === "tunnel" ? 200 : REFUSALS[out.code].status;
    const ms = clock.now() - started;
    metrics?.outcome(out, ms / 1000);
    const line = { decision: decisionLine(out, status), ms };
    if (out.kind === "tunnel") logger.info(line, "egress decision");
    else logger.warn(line, "egress decision");
  }

  /** Commits a decision; the refusal (and an error line) when it cannot be. */
  async function record(d: EgressDecisionRecord): Promise<true | "record_failed" | "commit_timeout"> {
    try {
      await ports.recorder.record(d);
      return true;
    } catch (err) {
      logger.error({ err: err instanceof Error ? err.message : String(err), plugin: d.plugin }, "egress decision could not be recorded");
      return err instanceof CommitError && err.code === "commit_timeout" ? "commit_timeout" : "record_failed";
    }
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

  /** Every step of one admitted CONNECT, up to its outcome. Answers nothing itself. */
  async function decide(head: RequestHead, client: Socket): Promise<Decided> {
    const hs = handshakeOf(head);
    if (!hs.ok) return { outcome: refused(hs.code, hs.target) };
    const { host, port, token } = hs.value;
    // Identity. The token lives only in this scope: never in an outcome, a log line or an answer.
    const identifying = identify(ports.reviewer, token, o.reviewTimeoutMs);
    const who = identifying instanceof Promise ? await identifying : identifying;
    if (!who.ok) return { outcome: refused(who.code, { host, port }) };
    const plugin = who.plugin;

    const listed = decideListed(ports.allowLists.current(), plugin, host, port);
    if (!listed.listed) {
      const destination: DestinationDecision = { allowed: false, reason: listed.code };
      await record(decisionRecord(plugin, host, port, destination));
      return { outcome: refused(listed.code, { host, port, plugin, destination }) };
    }
    const resolving = resolveWithin(host);
    const resolution = resolving instanceof Promise ? await resolving : resolving;
    const destination = afterResolution(decideAddresses(policy, resolution), port);
    const facts: ConnectFacts = { host, port, plugin, destination };
    if (!destination.allowed) {
      await record(decisionRecord(plugin, host, port, destination));
      return { outcome: refused(destination.reason, facts) };
    }

    if (draining) return { outcome: refused("draining", facts) };
    if (client.destroyed) return { outcome: refused("client_gone", facts) };
    // The address is chosen; its commit and its dial start together. The client stays paused and
    // nothing is written upstream until both have finished: no record, no tunnel.
    const [committed, dialed] = await Promise.all([record(decisionRecord(plugin, host, port, destination)), dial(ports.connect, destination.dial, o.connectTimeoutMs)]);
    if (committed !== true) {
      if (dialed.ok) dialed.socket.destroy();
      return { outcome: refused(committed, facts) };
    }
    const address = destination.dial.address;
    if (!dialed.ok) return { outcome: refused(dialed.code, facts, { address, proxyError: dialed.proxyError }) };
    const upstream = dialed.socket;
    if (upstream.destroyed) return { outcome: refused("dial_failed", facts, { address }) };
    if (client.destroyed) {
      upstream.destroy();
      return { outcome: refused("client_gone", facts, { address }) };
    }
    return { outcome: { ...facts, kind: "tunnel", plugin, host, port, address }, upstream };
  }

  /** Answers, opens or frees the slot, and logs: the one place an outcome takes effect. */
  function settle(slot: Slot, rest: Buffer, d: Decided, started: number): void {
    const out = d.outcome;
    const client = slot.client as Socket;
    if (out.kind === "tunnel" && d.upstream !== undefined) tunnels.start(slot, d.upstream, rest);
    else if (out.kind === "refused") {
      const detail = refusalDetail(out);
      refuse(client, out.code, { ...(detail === undefined ? {} : { detail }), ...(out.headers === undefined ? {} : { headers: out.headers }), ...(out.proxyError === undefined ? {} : { proxyError: out.proxyError }) });
      tunnels.release(slot);
      if (REFUSALS[out.code].recorded === "anonymous") {
        anonymous.refused({ code: out.code, source: client.remoteAddress ?? "unknown", ...(out.host !== undefined ? { host: out.host } : {}), ...(out.port !== undefined ? { port: out.port } : {}) });
      }
    }
    logDecision(out, started);
  }

  async function handleConnect(client: Socket, head: RequestHead, rest: Buffer): Promise<void> {
    const started = clock.now();
    if (draining) {
      const out = refused("draining");
      refuse(client, "draining");
      return logDecision(out, started);
    }
    const slot = tunnels.admit(client);
    if (slot === undefined) {
      const headers = { "Retry-After": String(o.retryAfterSeconds) };
      const out = refused("too_many_tunnels", {}, { headers });
      refuse(client, "too_many_tunnels", { headers });
      return logDecision(out, started);
    }
    let decided: Decided;
    try {
      decided = await decide(head, client);
    } catch (err) {
      logger.error({ err: err instanceof Error ? err.message : String(err) }, "egress internal error");
      decided = { outcome: refused("internal_error") };
    }
    settle(slot, rest, decided, started);
  }

  return {
    server,
    get ready() {
      return listening && !draining;
    },
    get activeTunnels() {
      return tunnels.active;
    },
    listen: () =>
      new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(o.port, o.host, () => {
          server.off("error", reject);
          const addr = server.address();
          const bound = typeof addr === "object" && addr !== null ? { host: addr.address, port: addr.port } : { host: o.host, port: o.port };
          // The listen address joins the refused own addresses (every interface is already there).
          policy = policyFor([bound.host]);
          listening = true;
          logger.info({ host: bound.host, port: bound.port }, "egress proxy listening");
          resolve(bound);
        });
      }),
    close: async () => {
      if (draining) return;
      draining = true;
      logger.info({ tunnels: tunnels.open }, "egress proxy draining");
      // The port stays open while draining so that /healthcheck can answer 503 (not ready) and a
      // late CONNECT gets a clear 503 rather than a refused connection; it closes after the drain.
      // Wall time, not the injected clock: a frozen test clock must not make draining endless.
      const deadline = Date.now() + o.drainMs;
      while (tunnels.busy && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, Math.min(100, o.drainMs)));
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      tunnels.destroyAll();
      connections.destroyAll();
      await closed;
      // What the budget counted is recorded before the recorder closes: nothing counted is lost.
      anonymous.close();
      await ports.recorder.close?.().catch((err: unknown) => logger.error({ err: err instanceof Error ? err.message : String(err) }, "egress recorder did not close cleanly"));
      logger.info("egress proxy closed");
      await ports.flushLog?.();
    },
  };
}
