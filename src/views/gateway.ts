/**
 * The gateway (seed 002, FUN-17 "Architecture"): one `node:http` handler for
 *   - the Kubernetes data path, `/clusters/{cluster}/<Kubernetes path>`, and
 *   - an installation's own routes, `/installations/{id}/runtime/*` and `/installations/{id}/controller/*`.
 *
 * Every request carries a PluginToken in `Authorization` (a WebSocket may carry it in Kubernetes'
 * `base64url.bearer.authorization.k8s.io.` subprotocol instead; never in a URL). The gates, in
 * FUN-17's order, each refusal with its status: the token and its audience (401, not recorded:
 * a log line and a counter); the origin (403); the binding to the cluster or the installation in
 * the URL (403; an unknown cluster 404); can_view (403); the installation (404 gone, 409 being
 * deleted, 403 no view running); the request's attributes (400); the user's access review (403);
 * the plugin's rules (403). A request that passes is recorded as allowed *before* it is
 * forwarded; a decision that cannot be recorded is not forwarded (503). Watches and upgraded
 * connections are authorised once, at their start, and then pass through.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import type { GatewayAttributes, GatewayDecision, GatewayGate, GatewayRoute } from "../events/index.js";
import { CorsPolicy } from "./cors.js";
import type { CorsVerdict } from "./cors.js";
import type { DecisionRecorder } from "./decisions.js";
import { goUnescape, parseRequestTarget } from "./go-url.js";
import { sendJson, statusBody } from "./http.js";
import type { InstallationRoutes } from "./installation-routes.js";
import type { ViewMetrics } from "./metrics.js";
import type { Installation, Installations, ViewAccess } from "./ports.js";
import { requestInfoFromTarget } from "./request-info.js";
import type { RequestAttributes } from "./request-info.js";
import { bearerToken } from "./tokens.js";
import type { PluginTokenClaims, PluginTokenValidator } from "./tokens.js";
import { WEBSOCKET_TOKEN_PROTOCOL, isImpersonation } from "./upstream.js";
import type { ForwardContext, Review, Upstream } from "./upstream.js";

/** The longest request target the gateway reads. */
export const MAX_TARGET = 4096;
/** Subresources whose WebSocket GET kube-apiserver also authorises as `create`. */
const STREAMING_SUBRESOURCES = new Set(["exec", "attach", "portforward"]);

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
  readonly logger?: Logger;
  readonly metrics?: ViewMetrics;
}

/** The gateway's two entry points, for an `http.Server`'s `request` and `upgrade` events. */
export interface Gateway {
  handle(req: IncomingMessage, res: ServerResponse): void;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Listens on `server`'s `request` and `upgrade` events. */
  attach(server: Server): void;
}

type Route =
  | { kind: "kube"; cluster: string; target: string }
  | { kind: "installation"; id: string; route: "runtime" | "controller"; rest: string };

/** A refusal: the status, the gate, a stable reason, a sentence. */
interface Refusal {
  readonly status: number;
  readonly gate: GatewayGate;
  readonly reason: string;
  readonly message: string;
}

/** Where an answer goes: a response, or the raw socket of an upgrade. */
interface Answer {
  refuse(r: Refusal, headers: Record<string, string>): void;
}

/** How a request that passed goes on: to the upstream, or to an installation route. */
interface Onward {
  kube(ctx: ForwardContext): Promise<void>;
  installation(installation: Installation, route: "runtime" | "controller", rest: string, headers: Record<string, string>): Promise<void>;
}

function routeOf(rawTarget: string): Route | null {
  const q = rawTarget.indexOf("?");
  const rawPath = q < 0 ? rawTarget : rawTarget.slice(0, q);
  const segs = rawPath.split("/");
  // "", "clusters", "{id}", …
  if (segs[1] === "clusters" && segs.length >= 4 && segs[2] !== "") {
    const cluster = goUnescape(segs[2] as string, false);
    if (!cluster.ok) return null;
    return { kind: "kube", cluster: cluster.value, target: rawTarget.slice(`/clusters/${segs[2] as string}`.length) };
  }
  if (segs[1] === "installations" && segs.length >= 4 && segs[2] !== "" && (segs[3] === "runtime" || segs[3] === "controller")) {
    const id = goUnescape(segs[2] as string, false);
    if (!id.ok) return null;
    const prefix = `/installations/${segs[2] as string}/${segs[3]}`;
    return { kind: "installation", id: id.value, route: segs[3], rest: rawTarget.slice(prefix.length) };
  }
  return null;
}

/** The attributes as an event records them. */
function recorded(a: RequestAttributes): GatewayAttributes {
  if (a.kind === "nonResource") return { kind: "nonResource", verb: a.verb, path: a.path.slice(0, MAX_TARGET) };
  return {
    kind: "resource", verb: a.verb, apiGroup: a.apiGroup, apiVersion: a.apiVersion, namespace: a.namespace, resource: a.resource,
    subresource: a.subresource, name: a.name, fieldSelector: a.fieldSelector.slice(0, MAX_TARGET), labelSelector: a.labelSelector.slice(0, MAX_TARGET),
  };
}

/** The PluginToken of a request: `Authorization: Bearer`, or for an upgrade the WebSocket subprotocol. */
function presentedToken(req: IncomingMessage, upgrade: boolean): string | undefined {
  const bearer = bearerToken(req.headers.authorization);
  if (bearer !== undefined || !upgrade) return bearer;
  const protocols = String(req.headers["sec-websocket-protocol"] ?? "").split(",").map((s) => s.trim());
  const p = protocols.find((s) => s.startsWith(WEBSOCKET_TOKEN_PROTOCOL));
  return p === undefined ? undefined : Buffer.from(p.slice(WEBSOCKET_TOKEN_PROTOCOL.length), "base64url").toString("utf8");
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** One request with a valid PluginToken, through the gates; every outcome is one decision. */
class Passage {
  installation: Installation | null = null;
  attributes: RequestAttributes | null = null;
  path: string;
  /** The gate being passed, so that a failure is recorded where it happened. */
  stage: GatewayGate = "origin";
  allowed = false;
  readonly routeName: GatewayRoute;

  constructor(
    readonly o: GatewayOptions,
    readonly req: IncomingMessage,
    readonly claims: PluginTokenClaims,
    readonly route: Route,
    readonly reply: { readonly answer: Answer; readonly headers: Record<string, string> },
  ) {
    this.routeName = route.kind === "kube" ? "kube" : route.route;
    const rawPath = (route.kind === "kube" ? route.target : route.rest).split("?")[0] ?? "";
    const decoded = goUnescape(rawPath, false);
    this.path = decoded.ok ? decoded.value : rawPath;
  }

  #decision(decision: "allow" | "deny", gate: GatewayGate, status: number | null, reason?: string): GatewayDecision {
    const c = this.claims;
    const d: GatewayDecision = {
      route: this.routeName, user: c.sub, installation: c.installation_id, installationName: c.installation_name, plugin: c.plugin_name,
      version: c.plugin_version, definitionHash: c.definition_hash, pinnedHash: this.installation?.definitionHash || null, cluster: c.cluster_id,
      method: this.req.method ?? "GET", path: this.path.slice(0, MAX_TARGET), attributes: this.attributes === null ? null : recorded(this.attributes),
      decision, gate, status,
    };
    return reason === undefined ? d : { ...d, reason };
  }

  /** Records a refusal (a refusal that cannot be recorded is still refused) and answers it. */
  deny(r: Refusal): void {
    try {
      this.o.recorder.record(this.#decision("deny", r.gate, r.status, r.reason));
    } catch (err) {
      this.o.logger?.error({ err: errText(err) }, "gateway: a refusal could not be recorded");
    }
    this.o.metrics?.decisions.inc({ route: this.routeName, decision: "deny", gate: r.gate });
    this.o.logger?.info({ user: this.claims.sub, installation: this.claims.installation_id, gate: r.gate, reason: r.reason, status: r.status }, "gateway: refused");
    this.reply.answer.refuse(r, this.reply.headers);
  }

  /** Records the allow before anything goes on; throws (so nothing is forwarded) when it cannot. */
  allow(): void {
    this.stage = "upstream";
    this.o.recorder.record(this.#decision("allow", "upstream", null));
    this.allowed = true;
    this.o.metrics?.decisions.inc({ route: this.routeName, decision: "allow", gate: "upstream" });
  }

  /** The origin, the binding, can_view and the installation: what every route checks. */
  async common(foreignOrigin: boolean): Promise<Refusal | null> {
    const { o, claims, route } = this;
    if (foreignOrigin) return { status: 403, gate: "origin", reason: "foreign_origin", message: "requests from this origin are not allowed" };
    this.stage = route.kind === "kube" ? "cluster" : "installation";
    if (route.kind === "kube") {
      if (route.cluster !== claims.cluster_id) return { status: 403, gate: "cluster", reason: "cluster_mismatch", message: "the token is bound to another cluster" };
      if (route.cluster !== o.clusterId) return { status: 404, gate: "cluster", reason: "unknown_cluster", message: "this gateway fronts no such cluster" };
    } else if (route.id !== claims.installation_id) {
      return { status: 403, gate: "installation", reason: "installation_mismatch", message: "the token is bound to another installation" };
    }
    this.stage = "can_view";
    if (!(await o.access.canView(claims.sub, { id: claims.installation_id, name: claims.installation_name }))) {
      return { status: 403, gate: "can_view", reason: "can_view", message: "you may no longer view this plugin" };
    }
    this.stage = "installation";
    this.installation = await o.installations.get(claims.installation_id);
    return installationRefusal(this.installation);
  }

  /** The request's attributes and the two reviews: the Kubernetes data path's own gates. */
  async kube(target: string, upgrade: boolean): Promise<Refusal | null> {
    this.stage = "request";
    const t = parseRequestTarget(target);
    if (!t.ok) return { status: 400, gate: "request", reason: t.problem, message: "the request target cannot be read" };
    this.path = t.value.path;
    const parsed = requestInfoFromTarget(this.req.method ?? "GET", t.value);
    if (!parsed.ok) return { status: 400, gate: "request", reason: parsed.problem, message: "the request names no resource" };
    const a = parsed.value;
    this.attributes = a;
    if (Object.keys(this.req.headers).some(isImpersonation)) return { status: 400, gate: "request", reason: "impersonation", message: "impersonation is not allowed through the gateway" };
    // A WebSocket GET of exec, attach or port-forward is reviewed as create too.
    const reviews = upgrade && a.kind === "resource" && a.verb === "get" && STREAMING_SUBRESOURCES.has(a.subresource) ? [a, { ...a, verb: "create" }] : [a];
    this.stage = "user";
    const user = await this.#review("user", reviews, (x) => this.o.upstream.reviewUser(this.claims.sub, x), "you may not make this request");
    if (user !== null) return user;
    this.stage = "plugin";
    return this.#review("plugin", reviews, (x) => this.o.upstream.reviewPlugin(this.installation as Installation, x), "the plugin may not make this request");
  }

  async #review(gate: "user" | "plugin", reviews: readonly RequestAttributes[], ask: (a: RequestAttributes) => Promise<Review>, message: string): Promise<Refusal | null> {
    for (const a of reviews) {
      let r: Review;
      try {
        r = await ask(a);
      } catch (err) {
        this.o.logger?.error({ err: errText(err), gate }, "gateway: an access review failed");
        return { status: 503, gate, reason: "review_failed", message: "the access review could not be made; try again" };
      }
      if (!r.allowed) return { status: 403, gate, reason: r.reason, message };
    }
    return null;
  }

  /** A failure of the gateway itself: refused at its gate if nothing was allowed yet, else only answered. */
  failed(err: unknown): void {
    this.o.logger?.error({ err: errText(err), gate: this.stage }, "gateway: request failed");
    const r: Refusal = { status: 503, gate: this.stage, reason: "unavailable", message: "the gateway could not complete the request" };
    if (this.allowed) this.reply.answer.refuse(r, this.reply.headers);
    else this.deny(r);
  }
}

function installationRefusal(installation: Installation | null): Refusal | null {
  if (installation === null) return { status: 404, gate: "installation", reason: "no_installation", message: "the installation no longer exists" };
  if (installation.state === "deleting") return { status: 409, gate: "installation", reason: "deleting", message: "the installation is being deleted" };
  if (installation.state !== "ready") return { status: 403, gate: "installation", reason: "view_not_running", message: "no view of this installation runs" };
  return null;
}

/** Builds the gateway. */
export function createGateway(o: GatewayOptions): Gateway {
  const cors = new CorsPolicy(o.pluginProxyOrigin);

  const refuseEarly = (answer: Answer, status: number, reason: string, message: string, headers: Record<string, string>): void => {
    o.metrics?.refusedRequests.inc({ reason });
    answer.refuse({ status, gate: "request", reason, message }, headers);
  };

  async function run(req: IncomingMessage, answer: Answer, upgrade: boolean, onward: Onward): Promise<void> {
    const target = req.url ?? "/";
    const verdict: CorsVerdict = cors.verdict(req);
    const headers = cors.responseHeaders(verdict);
    if (target.length > MAX_TARGET) return refuseEarly(answer, 414, "target_too_long", `the request target is longer than ${MAX_TARGET} characters`, headers);
    const route = routeOf(target);
    if (route === null) return refuseEarly(answer, 404, "no_route", "the gateway serves /clusters/{cluster}/… and /installations/{id}/runtime|controller/…", headers);

    // Gate 1: the token and its audience. Refusals are log lines and counters, not events.
    const verified = await o.tokens.verify(presentedToken(req, upgrade));
    if (!verified.ok) {
      o.metrics?.refusedTokens.inc({ problem: verified.problem });
      o.logger?.info({ problem: verified.problem, route: route.kind }, "gateway: PluginToken refused");
      answer.refuse({ status: 401, gate: "request", reason: verified.problem, message: "a valid PluginToken is required" }, { ...headers, "www-authenticate": 'Bearer realm="openfief-plugin"' });
      return;
    }
    const p = new Passage(o, req, verified.claims, route, { answer, headers });
    try {
      const refused = (await p.common(verdict.kind === "foreign")) ?? (route.kind === "kube" ? await p.kube(route.target, upgrade) : null);
      if (refused !== null) return p.deny(refused);
      p.allow();
      const installation = p.installation as Installation;
      if (route.kind === "installation") await onward.installation(installation, route.route, route.rest, headers);
      else await onward.kube({ installation, attributes: p.attributes as RequestAttributes, target: route.target, responseHeaders: headers });
    } catch (err) {
      p.failed(err);
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    if (cors.isPreflight(req)) {
      cors.answerPreflight(req, res);
      return;
    }
    const answer: Answer = {
      refuse(r, headers) {
        if (res.headersSent) {
          res.destroy();
          return;
        }
        sendJson(res, r.status, statusBody(r.status, r.message), headers);
      },
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
    const answer: Answer = {
      refuse(r, headers) {
        const body = JSON.stringify(statusBody(r.status, r.message));
        const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
        socket.once("finish", () => socket.destroy());
        socket.end(`HTTP/1.1 ${r.status} ${statusBody(r.status, "").reason as string}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${extra}\r\n${body}`);
      },
    };
    const none = (headers: Readonly<Record<string, string>>): void => answer.refuse({ status: 404, gate: "upstream", reason: "no_upgrades", message: "no upgraded connections here" }, { ...headers });
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
  };
}

/** The claims a decision is made for (re-exported for tests and the integrator's audit views). */
export type { PluginTokenClaims };
