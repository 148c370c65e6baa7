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
import type { ForwardContext, Upstream } from "./upstream.js";

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
  if (p === undefined) return undefined;
  try {
    return Buffer.from(p.slice(WEBSOCKET_TOKEN_PROTOCOL.length), "base64url").toString("utf8");
  } catch {
    return undefined;
  }
}

/** Builds the gateway. */
export function createGateway(o: GatewayOptions): Gateway {
  const cors = new CorsPolicy(o.pluginProxyOrigin);
  const log = o.logger;

  const refuseEarly = (answer: Answer, status: number, reason: string, message: string, headers: Record<string, string>): void => {
    o.metrics?.refusedRequests.inc({ reason });
    answer.refuse({ status, gate: "request", reason, message }, headers);
  };

  async function run(req: IncomingMessage, answer: Answer, upgrade: boolean, forward: (ctx: ForwardContext) => Promise<void>, installationForward: (installation: Installation, route: "runtime" | "controller", rest: string, headers: Record<string, string>) => Promise<void>): Promise<void> {
    const method = req.method ?? "GET";
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
      log?.info({ problem: verified.problem, route: route.kind }, "gateway: PluginToken refused");
      answer.refuse({ status: 401, gate: "request", reason: verified.problem, message: "a valid PluginToken is required" }, { ...headers, "www-authenticate": 'Bearer realm="openfief-plugin"' });
      return;
    }
    const claims = verified.claims;
    const routeName: GatewayRoute = route.kind === "kube" ? "kube" : route.route;
    const base = (installation: Installation | null, attributes: RequestAttributes | null, path: string): Omit<GatewayDecision, "decision" | "gate" | "status"> => ({
      route: routeName, user: claims.sub, installation: claims.installation_id, installationName: claims.installation_name, plugin: claims.plugin_name,
      version: claims.plugin_version, definitionHash: claims.definition_hash, pinnedHash: installation?.definitionHash || null, cluster: claims.cluster_id,
      method, path: path.slice(0, MAX_TARGET), attributes: attributes === null ? null : recorded(attributes),
    });
    let installation: Installation | null = null;
    let attributes: RequestAttributes | null = null;
    const rawPath = route.kind === "kube" ? route.target.split("?")[0] ?? "" : route.rest.split("?")[0] ?? "";
    const decoded = goUnescape(rawPath, false);
    let path = decoded.ok ? decoded.value : rawPath;
    // The gate being passed, so that a failure is recorded where it happened.
    let stage: GatewayGate = "origin";
    let allowed = false;

    const deny = (r: Refusal): void => {
      const d: GatewayDecision = { ...base(installation, attributes, path), decision: "deny", gate: r.gate, status: r.status, reason: r.reason };
      try {
        o.recorder.record(d);
      } catch (err) {
        log?.error({ err: err instanceof Error ? err.message : String(err) }, "gateway: a refusal could not be recorded");
      }
      o.metrics?.decisions.inc({ route: routeName, decision: "deny", gate: r.gate });
      log?.info({ user: claims.sub, installation: claims.installation_id, gate: r.gate, reason: r.reason, status: r.status }, "gateway: refused");
      answer.refuse(r, headers);
    };

    try {
      // The origin: only the plugin proxy's, when a browser says where it comes from.
      if (verdict.kind === "foreign") return deny({ status: 403, gate: "origin", reason: "foreign_origin", message: "requests from this origin are not allowed" });

      // Gate 2: the binding to the cluster (data path) or the installation (its routes).
      stage = route.kind === "kube" ? "cluster" : "installation";
      if (route.kind === "kube") {
        if (route.cluster !== claims.cluster_id) return deny({ status: 403, gate: "cluster", reason: "cluster_mismatch", message: "the token is bound to another cluster" });
        if (route.cluster !== o.clusterId) return deny({ status: 404, gate: "cluster", reason: "unknown_cluster", message: "this gateway fronts no such cluster" });
      } else if (route.id !== claims.installation_id) {
        return deny({ status: 403, gate: "installation", reason: "installation_mismatch", message: "the token is bound to another installation" });
      }

      // Gate 3: can_view, evaluated again on every request.
      stage = "can_view";
      if (!(await o.access.canView(claims.sub, { id: claims.installation_id, name: claims.installation_name }))) {
        return deny({ status: 403, gate: "can_view", reason: "can_view", message: "you may no longer view this plugin" });
      }

      stage = "installation";
      installation = await o.installations.get(claims.installation_id);
      if (installation === null) return deny({ status: 404, gate: "installation", reason: "no_installation", message: "the installation no longer exists" });
      if (installation.state === "deleting") return deny({ status: 409, gate: "installation", reason: "deleting", message: "the installation is being deleted" });
      if (installation.state !== "ready") return deny({ status: 403, gate: "installation", reason: "view_not_running", message: "no view of this installation runs" });

      if (route.kind === "installation") {
        stage = "upstream";
        const d: GatewayDecision = { ...base(installation, null, path), decision: "allow", gate: "upstream", status: null };
        o.recorder.record(d);
        allowed = true;
        o.metrics?.decisions.inc({ route: routeName, decision: "allow", gate: "upstream" });
        await installationForward(installation, route.route, route.rest, headers);
        return;
      }

      // Gate 4: the request's Kubernetes attributes, exactly as kube-apiserver derives them.
      stage = "request";
      const t = parseRequestTarget(route.target);
      if (!t.ok) return deny({ status: 400, gate: "request", reason: t.problem, message: "the request target cannot be read" });
      path = t.value.path;
      const parsed = requestInfoFromTarget(method, t.value);
      if (!parsed.ok) return deny({ status: 400, gate: "request", reason: parsed.problem, message: "the request names no resource" });
      attributes = parsed.value;
      if (Object.keys(req.headers).some(isImpersonation)) return deny({ status: 400, gate: "request", reason: "impersonation", message: "impersonation is not allowed through the gateway" });

      // Gate 5: the user's access review. A WebSocket GET of exec, attach or port-forward also needs create.
      stage = "user";
      const reviews: RequestAttributes[] = [attributes];
      if (upgrade && attributes.kind === "resource" && attributes.verb === "get" && STREAMING_SUBRESOURCES.has(attributes.subresource)) reviews.push({ ...attributes, verb: "create" });
      for (const a of reviews) {
        let user;
        try {
          user = await o.upstream.reviewUser(claims.sub, a);
        } catch (err) {
          log?.error({ err: err instanceof Error ? err.message : String(err) }, "gateway: the user's access review failed");
          return deny({ status: 503, gate: "user", reason: "review_failed", message: "the access review could not be made; try again" });
        }
        if (!user.allowed) return deny({ status: 403, gate: "user", reason: user.reason, message: "you may not make this request" });
      }

      // Gate 6: the plugin's rules (its ServiceAccount's RBAC).
      stage = "plugin";
      for (const a of reviews) {
        let plugin;
        try {
          plugin = await o.upstream.reviewPlugin(installation, a);
        } catch (err) {
          log?.error({ err: err instanceof Error ? err.message : String(err) }, "gateway: the plugin's access review failed");
          return deny({ status: 503, gate: "plugin", reason: "review_failed", message: "the access review could not be made; try again" });
        }
        if (!plugin.allowed) return deny({ status: 403, gate: "plugin", reason: plugin.reason, message: "the plugin may not make this request" });
      }

      // Recorded before it goes anywhere: an allow that cannot be recorded is not forwarded.
      stage = "upstream";
      o.recorder.record({ ...base(installation, attributes, path), decision: "allow", gate: "upstream", status: null });
      allowed = true;
      o.metrics?.decisions.inc({ route: routeName, decision: "allow", gate: "upstream" });
      await forward({ installation, attributes, target: route.target, responseHeaders: headers });
    } catch (err) {
      log?.error({ err: err instanceof Error ? err.message : String(err), gate: stage }, "gateway: request failed");
      const r: Refusal = { status: 503, gate: stage, reason: "unavailable", message: "the gateway could not complete the request" };
      // A failure before the allow was recorded is a refusal at its gate; after it, only an answer.
      if (allowed) answer.refuse(r, headers);
      else deny(r);
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
    void run(
      req,
      answer,
      false,
      (ctx) => o.upstream.forward(ctx, req, res),
      async (installation, route, rest, headers) => {
        if (o.installationRoutes === undefined) {
          sendJson(res, 404, statusBody(404, "no such route"), headers);
          return;
        }
        await o.installationRoutes.serve(route, installation, rest, req, res, headers);
      },
    );
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
    void run(
      req,
      answer,
      true,
      async (ctx) => {
        if (o.upstream.upgrade === undefined) return answer.refuse({ status: 404, gate: "upstream", reason: "no_upgrades", message: "this upstream serves no upgraded connections" }, ctx.responseHeaders);
        await o.upstream.upgrade(ctx, req, socket, head);
      },
      async (_i, _route, _rest, headers) => answer.refuse({ status: 404, gate: "upstream", reason: "no_upgrades", message: "installation routes serve no upgraded connections" }, headers),
    );
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
