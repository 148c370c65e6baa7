/**
 * The gateway (seed 002, FUN-17 "Architecture"): one `node:http` handler for
 *   - the Kubernetes data path, `/clusters/{cluster}/<Kubernetes path>`, and
 *   - an installation's own routes, `/installations/{id}/runtime/*` and `/installations/{id}/controller/*`.
 *
 * Every request carries a PluginToken in `Authorization` (a WebSocket may carry it in Kubernetes'
 * `base64url.bearer.authorization.k8s.io.` subprotocol instead; never in a URL) and goes through
 * the gates of one ordered table (`gates.ts`, docs/adr/0090). Each request has an id: its answer's
 * `Audit-ID` header, its one access line's `requestId`, and its decision's `requestId`. A request
 * that passes is recorded as allowed *before* it is forwarded; a decision that cannot be recorded
 * is not forwarded (503). Refusals are recorded one by one within a budget per kind and source,
 * then counted into one summary a window (docs/adr/0091). Watches and upgraded connections are
 * authorised once, at their start, hold a slot under the caps on open watches while they last, and
 * a watch ends when its token expires (docs/adr/0092).
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { RefusalBudget } from "../events/index.js";
import type { GatewayDecision, GatewayGate, GatewayRefusals, GatewayRoute, RefusalSummary } from "../events/index.js";
import { CorsPolicy } from "./cors.js";
import { recordedDecision } from "./decisions.js";
import type { DecisionRecorder } from "./decisions.js";
import { MAX_TARGET, runGates } from "./gates.js";
import type { Arrival, GateDeps, GateOutcome, Passage, Refusal } from "./gates.js";
import { sendJson, statusBody } from "./http.js";
import type { InstallationRoutes } from "./installation-routes.js";
import { RateBuckets, WatchSlots, gatewayLimits, gatewayLimitsProblems } from "./limits.js";
import type { GatewayLimits, GatewayLimitsInput } from "./limits.js";
import type { ViewMetrics } from "./metrics.js";
import type { Installation, Installations, ViewAccess } from "./ports.js";
import type { RequestAttributes } from "./request-info.js";
import type { PluginTokenClaims, PluginTokenValidator } from "./tokens.js";
import type { ForwardContext, Upstream } from "./upstream.js";

export { MAX_TARGET };

/** How long an ended watch's upstream is given to finish its answer before the connection is cut. */
const END_GRACE_MS = 1000;
/** The longest a summary waits past its window's end for the sweep. */
const SWEEP_MS = 5000;

/** What the gateway needs. */
export interface GatewayOptions {
  /** The cluster this gateway fronts; `/clusters/{id}/…` must name it. */
  readonly clusterId: string;
  readonly tokens: PluginTokenValidator;
  readonly installations: Installations;
  readonly access: ViewAccess;
  readonly upstream: Upstream;
  /** The runtime and controller routes; without them those paths are 404. */
  readonly installationRoutes?: InstallationRoutes;
  readonly recorder: DecisionRecorder;
  /** The plugin proxy's origin: the only one CORS admits. */
  readonly pluginProxyOrigin: string;
  /** The rate, watch and refusal limits (defaults: `GATEWAY_LIMITS`). */
  readonly limits?: GatewayLimitsInput;
  /** ms since the epoch (the limits' and the watches' clock). */
  readonly clock?: () => number;
  readonly logger?: Logger;
  readonly metrics?: ViewMetrics;
}

/** The gateway's two entry points, for an `http.Server`'s `request` and `upgrade` events. */
export interface Gateway {
  handle(req: IncomingMessage, res: ServerResponse): void;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Listens on `server`'s `request` and `upgrade` events. */
  attach(server: Server): void;
  /** The limits in force. */
  readonly limits: GatewayLimits;
  /** Watches and upgraded connections open now. */
  readonly openWatches: number;
  /** Records the summaries still counting (the window need not have ended) and stops the sweep. */
  close(): Promise<void>;
}

/** Where an answer goes: a response, or the raw socket of an upgrade. */
interface Answer {
  refuse(r: Refusal, headers: Readonly<Record<string, string>>): void;
  /** Calls `f` once the request is over, however it ends. */
  onClose(f: () => void): void;
  /** Cuts the connection (a watch whose upstream did not end it). */
  cut(): void;
  /** The status answered, when known. */
  status(): number | null;
}

/** How a request that passed goes on: to the upstream, or to an installation route. */
interface Onward {
  kube(ctx: ForwardContext): Promise<void>;
  installation(installation: Installation, route: "runtime" | "controller", rest: string, headers: Record<string, string>): Promise<void>;
}

/** One request's exchange: how it arrived, where its answer goes, the headers every answer carries, when it began. */
interface Exchange {
  readonly a: Arrival;
  readonly answer: Answer;
  readonly headers: Record<string, string>;
  readonly started: number;
}

/** What a summary counts a refusal by, and what it says of it. */
interface Counted {
  readonly requestId: string;
  readonly user: string;
  readonly installation: string;
  readonly installationName: string;
  readonly route: GatewayRoute;
  readonly gate: GatewayGate;
  readonly status: number;
  readonly reason: string;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `onClose` over a stream: listeners added after it closed run at once (a client may leave while the gates run). */
function closeLatch(stream: NodeJS.EventEmitter): (f: () => void) => void {
  let closed = false;
  const waiting: (() => void)[] = [];
  stream.once("close", () => {
    closed = true;
    for (const f of waiting.splice(0)) f();
  });
  return (f) => {
    if (closed) f();
    else waiting.push(f);
  };
}

function summaryOf(s: RefusalSummary<Counted>): GatewayRefusals {
  const i = s.first.item;
  return {
    user: i.user, installation: i.installation, installationName: i.installationName, route: i.route, gate: i.gate, status: i.status, reason: i.reason,
    count: s.count, first: new Date(s.first.at).toISOString(), last: new Date(s.last.at).toISOString(), firstRequestId: i.requestId, lastRequestId: s.last.item.requestId,
  };
}

/** Builds the gateway. */
export function createGateway(o: GatewayOptions): Gateway {
  const limits = gatewayLimits(o.limits);
  const problems = gatewayLimitsProblems(limits);
  if (problems.length > 0) throw new RangeError(`gateway limits: ${problems.join("; ")}`);
  const clock = o.clock ?? Date.now;
  const cors = new CorsPolicy(o.pluginProxyOrigin);
  const watches = new WatchSlots(limits.watches);
  const budget = new RefusalBudget<Counted>(limits.refusals, clock);
  const m = o.metrics;
  const deps: GateDeps = {
    clusterId: o.clusterId, tokens: o.tokens, installations: o.installations, access: o.access, upstream: o.upstream,
    rates: { user: new RateBuckets(limits.rate.perUser, clock), installation: new RateBuckets(limits.rate.perInstallation, clock) },
    watches,
    onRateLimited: (scope) => m?.rateLimited.inc({ scope }),
    onWatchRefused: (scope) => m?.watchesRefused.inc({ scope }),
    ...(o.logger === undefined ? {} : { logger: o.logger }),
  };

  async function summarise(due: readonly RefusalSummary<Counted>[]): Promise<void> {
    for (const s of due) {
      try {
        await o.recorder.recordRefusals(summaryOf(s));
      } catch (err) {
        o.logger?.error({ err: errText(err), count: s.count }, "gateway: a summary of refusals could not be recorded");
      }
    }
  }
  const sweep = setInterval(() => void summarise(budget.due()), Math.min(SWEEP_MS, limits.refusals.windowMs));
  sweep.unref();

  /** The one access line of a request, tied to its decision by its id. */
  function accessLine(a: Arrival, p: Passage | null, fields: { status: number | null; decision: "allow" | "deny"; gate: string; reason?: string; started: number; summarised?: boolean }): void {
    o.logger?.info({
      requestId: a.id, route: p?.routeName ?? a.route?.kind ?? null, method: a.req.method ?? "GET", status: fields.status, decision: fields.decision, gate: fields.gate,
      ...(fields.reason === undefined ? {} : { reason: fields.reason }), ...(fields.summarised === true ? { summarised: true } : {}),
      ...(p === null ? {} : { user: p.claims.sub, installation: p.claims.installation_id }), ms: clock() - fields.started,
    }, "gateway: request");
  }

  function decision(p: Passage, decided: "allow" | "deny", gate: GatewayGate, status: number | null, reason?: string): GatewayDecision {
    const c = p.claims;
    return recordedDecision({
      requestId: p.id, route: p.routeName, user: c.sub, installation: c.installation_id, installationName: c.installation_name, plugin: c.plugin_name,
      version: c.plugin_version, definitionHash: c.definition_hash, pinnedHash: p.installation?.definitionHash || null, cluster: c.cluster_id,
      method: p.req.method ?? "GET", path: p.path, attributes: p.attributes, served: decided === "allow" ? p.served : null,
      decision: decided, gate, status, ...(reason === undefined ? {} : { reason }),
    });
  }

  /** Records a refusal within the budget (a refusal that cannot be recorded is still refused) and answers it. */
  async function deny(x: Exchange, p: Passage, gate: GatewayGate, r: Refusal): Promise<void> {
    const { a, answer, headers, started } = x;
    const c = p.claims;
    const admitted = budget.admit(`${p.routeName}\u0000${gate}\u0000${r.reason}\u0000${r.status}\u0000${c.installation_id}\u0000${c.sub}`, {
      requestId: p.id, user: c.sub, installation: c.installation_id, installationName: c.installation_name, route: p.routeName, gate, status: r.status, reason: r.reason,
    });
    await summarise(admitted.due);
    if (admitted.record) {
      try {
        await o.recorder.record(decision(p, "deny", gate, r.status, r.reason));
      } catch (err) {
        o.logger?.error({ err: errText(err), requestId: p.id }, "gateway: a refusal could not be recorded");
      }
    } else m?.refusalsSummarised.inc();
    m?.decisions.inc({ route: p.routeName, decision: "deny", gate });
    accessLine(a, p, { status: r.status, decision: "deny", gate, reason: r.reason, started, summarised: !admitted.record });
    answer.refuse(r, { ...headers, ...r.headers });
  }

  /** Holds a watch's slot while it lasts and ends it when its token expires. */
  function hold(p: Passage, answer: Answer): { endsAt: number | null; signal: AbortSignal } {
    const ac = new AbortController();
    const slot = p.slot;
    if (slot === null) return { endsAt: null, signal: ac.signal };
    m?.openWatches.inc({ kind: slot.kind });
    // The seed lets streams outlive their token; a watch is the exception (docs/adr/0092): the SDK
    // re-watches with a fresh token from the last resourceVersion, so nothing is lost.
    const endsAt = slot.kind === "watch" ? p.expiresAt.getTime() : null;
    let grace: NodeJS.Timeout | undefined;
    const timer = endsAt === null ? undefined : setTimeout(() => {
      m?.watchesEnded.inc({ why: "token_expired" });
      ac.abort();
      grace = setTimeout(() => answer.cut(), END_GRACE_MS).unref();
    }, Math.max(0, endsAt - clock())).unref();
    answer.onClose(() => {
      slot.release();
      m?.openWatches.dec({ kind: slot.kind });
      clearTimeout(timer);
      clearTimeout(grace);
    });
    return { endsAt, signal: ac.signal };
  }

  /** Refuses a request the gates refused or could not finish: recorded when it has an identity. */
  async function refused(x: Exchange, out: Exclude<GateOutcome, { kind: "passed" }>): Promise<void> {
    const { a, answer, headers, started } = x;
    const g = out.gate;
    let r: Refusal;
    if (out.kind === "refused") r = out.refusal;
    else {
      o.logger?.error({ err: errText(out.error), requestId: a.id, gate: g.name }, "gateway: request failed");
      r = { status: 503, reason: "unavailable", message: "the gateway could not complete the request" };
    }
    if (g.identified && out.passage !== null) return deny(x, out.passage, g.records, r);
    if (g.name === "token" && out.kind === "refused") m?.refusedTokens.inc({ problem: r.reason });
    else m?.refusedRequests.inc({ reason: r.reason });
    accessLine(a, null, { status: r.status, decision: "deny", gate: g.name, reason: r.reason, started });
    answer.refuse(r, { ...headers, ...r.headers });
  }

  async function run(req: IncomingMessage, answer: Answer, upgrade: boolean, onward: Onward): Promise<void> {
    const started = clock();
    const verdict = cors.verdict(req);
    const a: Arrival = { id: randomUUID(), req, upgrade, target: req.url ?? "/", foreign: verdict.kind === "foreign", route: null, identity: null };
    const headers: Record<string, string> = { ...cors.responseHeaders(verdict), "audit-id": a.id };
    const x: Exchange = { a, answer, headers, started };
    const out = await runGates(a, deps);
    if (out.kind !== "passed") return refused(x, out);
    const p = out.passage;
    const held = hold(p, answer);
    try {
      await o.recorder.record(decision(p, "allow", "upstream", null));
    } catch (err) {
      o.logger?.error({ err: errText(err), requestId: a.id }, "gateway: an allowed request could not be recorded");
      // Not recorded, not forwarded: refused at the last gate it passed.
      return deny(x, p, "upstream", { status: 503, reason: "unrecorded", message: "the gateway could not record the request; try again" });
    }
    m?.decisions.inc({ route: p.routeName, decision: "allow", gate: "upstream" });
    answer.onClose(() => accessLine(a, p, { status: answer.status(), decision: "allow", gate: "upstream", started }));
    try {
      const installation = p.installation as Installation;
      const route = p.route;
      if (route.kind === "installation") await onward.installation(installation, route.route, route.rest, headers);
      else await onward.kube({ installation, attributes: p.attributes as RequestAttributes, target: route.target, responseHeaders: headers, served: p.served, ...held });
    } catch (err) {
      // Allowed and recorded already: only answered.
      o.logger?.error({ err: errText(err), requestId: a.id, gate: "upstream" }, "gateway: request failed");
      answer.refuse({ status: 503, reason: "unavailable", message: "the gateway could not complete the request" }, headers);
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    if (cors.isPreflight(req)) {
      cors.answerPreflight(req, res);
      return;
    }
    const onClose = closeLatch(res);
    const answer: Answer = {
      refuse(r, headers) {
        if (res.headersSent) {
          res.destroy();
          return;
        }
        sendJson(res, r.status, statusBody(r.status, r.message), { ...headers });
      },
      onClose,
      cut: () => res.destroy(),
      status: () => (res.headersSent ? res.statusCode : null),
    };
    void run(req, answer, false, {
      kube: (ctx) => o.upstream.forward(ctx, req, res),
      async installation(installation, route, rest, headers) {
        if (o.installationRoutes === undefined) return sendJson(res, 404, statusBody(404, "no such route"), headers);
        await o.installationRoutes.serve({ route, installation, rest, req, res, headers });
      },
    });
  }

  function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => socket.destroy());
    const onClose = closeLatch(socket);
    const answer: Answer = {
      refuse(r, headers) {
        const body = JSON.stringify(statusBody(r.status, r.message));
        const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
        socket.once("finish", () => socket.destroy());
        socket.end(`HTTP/1.1 ${r.status} ${statusBody(r.status, "").reason as string}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${extra}\r\n${body}`);
      },
      onClose,
      cut: () => socket.destroy(),
      status: () => null,
    };
    const none = (headers: Readonly<Record<string, string>>): void => answer.refuse({ status: 404, reason: "no_upgrades", message: "no upgraded connections here" }, { ...headers });
    void run(req, answer, true, {
      kube: async (ctx) => (o.upstream.upgrade === undefined ? none(ctx.responseHeaders) : o.upstream.upgrade(ctx, req, socket, head)),
      installation: async (_i, _route, _rest, headers) => none(headers),
    });
  }

  return {
    handle,
    handleUpgrade,
    attach(server) {
      server.on("request", handle);
      server.on("upgrade", handleUpgrade);
    },
    limits,
    get openWatches() {
      return watches.open;
    },
    async close() {
      clearInterval(sweep);
      await summarise(budget.drain());
    },
  };
}

/** The claims a decision is made for (re-exported for tests and the integrator's audit views). */
export type { PluginTokenClaims };
