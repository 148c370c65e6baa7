/**
 * The gateway's gates as one ordered table (docs/adr/0090), the way kube-apiserver builds its
 * handler chain: each gate reads the request, may note what it learnt (the route, the identity,
 * the installation, the attributes, a watch slot), and either lets it on or refuses it with a
 * status, a stable reason and a sentence. The gates before identity (`target`, `route`, `token`)
 * are not recorded as events — anyone can send anything — only as a log line and a counter; every
 * refusal after them is a decision, recorded within the refusal budget (docs/adr/0091).
 *
 * Order: the target's length (414), the route (404; dot segments and an installation route with no
 * path are no route at all), the PluginToken (401), the caller's rate (429), the origin (403), the
 * binding to the cluster (403, an unknown cluster 404) or to the installation (403), can_view
 * (403), the installation (404 gone, 409 being deleted, 403 no view running), the request's
 * attributes (400), the user's access review (403), the plugin's rules (403), the cap on open
 * watches (429).
 */
import type { IncomingMessage } from "node:http";
import type { Logger } from "pino";
import type { GatewayGate, GatewayRoute } from "../events/index.js";
import { goUnescape, parseRequestTarget } from "./go-url.js";
import type { RateBuckets, WatchSlots, WatchScope } from "./limits.js";
import type { Installation, Installations, ViewAccess } from "./ports.js";
import { requestInfoFromTarget } from "./request-info.js";
import type { RequestAttributes } from "./request-info.js";
import { selectionOf } from "./served.js";
import type { Selection } from "./served.js";
import { bearerToken } from "./tokens.js";
import type { PluginTokenClaims, PluginTokenValidator } from "./tokens.js";
import { WEBSOCKET_TOKEN_PROTOCOL, isImpersonation } from "./upstream.js";
import type { Review, Upstream } from "./upstream.js";

/** The longest request target the gateway reads. */
export const MAX_TARGET = 4096;
/** Subresources whose WebSocket GET kube-apiserver also authorises as `create`. */
const STREAMING_SUBRESOURCES = new Set(["exec", "attach", "portforward"]);
/** How long a caller refused a watch slot is asked to wait. */
const WATCH_RETRY_SECONDS = 5;

/** Where a request goes: the Kubernetes data path, or one of an installation's own routes. */
export type Route =
  | { readonly kind: "kube"; readonly cluster: string; readonly target: string }
  | { readonly kind: "installation"; readonly id: string; readonly route: "runtime" | "controller"; readonly rest: string };

/** A refusal: the status, a stable reason, a sentence, and headers the answer adds (`Retry-After`). */
export interface Refusal {
  readonly status: number;
  readonly reason: string;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** A request as it arrives: what the gates before identity read and learn. */
export interface Arrival {
  readonly id: string;
  readonly req: IncomingMessage;
  readonly upgrade: boolean;
  readonly target: string;
  /** The browser's origin is not the plugin proxy's. */
  readonly foreign: boolean;
  route: Route | null;
  identity: { readonly claims: PluginTokenClaims; readonly expiresAt: Date } | null;
}

/** A long-running request holding a slot under the caps on open watches. */
export interface WatchSlot {
  readonly kind: "watch" | "upgrade";
  readonly release: () => void;
}

/** A request with a valid PluginToken, through the gates after identity. */
export class Passage {
  installation: Installation | null = null;
  attributes: RequestAttributes | null = null;
  /** What a list or watch is served (the path's name as a field selector). */
  served: Selection | null = null;
  /** The decoded path without its query, as the decision records it. */
  path: string;
  slot: WatchSlot | null = null;
  readonly routeName: GatewayRoute;
  readonly id: string;
  readonly req: IncomingMessage;
  readonly upgrade: boolean;
  readonly foreign: boolean;
  readonly claims: PluginTokenClaims;
  readonly expiresAt: Date;

  constructor(
    a: Arrival,
    readonly route: Route,
    identity: NonNullable<Arrival["identity"]>,
  ) {
    ({ id: this.id, req: this.req, upgrade: this.upgrade, foreign: this.foreign } = a);
    ({ claims: this.claims, expiresAt: this.expiresAt } = identity);
    this.routeName = route.kind === "kube" ? "kube" : route.route;
    const rawPath = (route.kind === "kube" ? route.target : route.rest).split("?")[0] ?? "";
    const decoded = goUnescape(rawPath, false);
    this.path = decoded.ok ? decoded.value : rawPath;
  }

  /** Whether the request is a watch (the data path's `watch` verb). */
  get isWatch(): boolean {
    return !this.upgrade && this.attributes?.kind === "resource" && this.attributes.verb === "watch";
  }
}

/** What the gates use. */
export interface GateDeps {
  readonly clusterId: string;
  readonly tokens: PluginTokenValidator;
  readonly installations: Installations;
  readonly access: ViewAccess;
  readonly upstream: Upstream;
  readonly rates: { readonly user: RateBuckets; readonly installation: RateBuckets };
  readonly watches: WatchSlots;
  /** Told which bucket or cap refused (the counters). */
  readonly onRateLimited?: (scope: "user" | "installation") => void;
  readonly onWatchRefused?: (scope: WatchScope) => void;
  readonly logger?: Logger;
}

/** A gate before identity: its refusals are a log line and a counter. */
export interface AnonymousGate {
  readonly name: "target" | "route" | "token";
  readonly identified: false;
  check(a: Arrival, d: GateDeps): Refusal | null | Promise<Refusal | null>;
}

/** A gate after identity: its refusals are recorded, as `records`. */
export interface IdentifiedGate {
  readonly name: "rate" | "origin" | "cluster" | "binding" | "can_view" | "installation" | "request" | "user" | "plugin" | "watches";
  readonly identified: true;
  /** The gate a refusal is recorded at. */
  readonly records: Exclude<GatewayGate, "upstream">;
  /** The routes it runs on. */
  readonly routes: readonly Route["kind"][];
  check(p: Passage, d: GateDeps): Refusal | null | Promise<Refusal | null>;
}

export type Gate = AnonymousGate | IdentifiedGate;

const BOTH: readonly Route["kind"][] = ["kube", "installation"];

/**
 * Whether an installation route's path is one the pod may see: it names something (not the bare
 * route), and no segment is a dot segment, encoded or not, or hides a separator (`%2F`, `%5C`, `\`).
 */
export function isCleanRoutePath(rest: string): boolean {
  const path = rest.split("?")[0] ?? "";
  if (!path.startsWith("/")) return false;
  for (const seg of path.slice(1).split("/")) {
    const d = goUnescape(seg, false);
    if (!d.ok) return false;
    if (d.value === "." || d.value === ".." || d.value.includes("/") || d.value.includes("\\")) return false;
  }
  return true;
}

/** The route of a raw request target, or null when it names none. */
export function routeOf(rawTarget: string): Route | null {
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
    const rest = rawTarget.slice(prefix.length);
    // As for assets: one spelling per path, so the pod never sees `/../x` under the core's token.
    if (!isCleanRoutePath(rest)) return null;
    return { kind: "installation", id: id.value, route: segs[3], rest };
  }
  return null;
}

/** The PluginToken of a request: `Authorization: Bearer`, or for an upgrade the WebSocket subprotocol. */
export function presentedToken(req: IncomingMessage, upgrade: boolean): string | undefined {
  const bearer = bearerToken(req.headers.authorization);
  if (bearer !== undefined || !upgrade) return bearer;
  const protocols = String(req.headers["sec-websocket-protocol"] ?? "").split(",").map((s) => s.trim());
  const p = protocols.find((s) => s.startsWith(WEBSOCKET_TOKEN_PROTOCOL));
  return p === undefined ? undefined : Buffer.from(p.slice(WEBSOCKET_TOKEN_PROTOCOL.length), "base64url").toString("utf8");
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function review(d: GateDeps, gate: "user" | "plugin", reviews: readonly RequestAttributes[], ask: (a: RequestAttributes) => Promise<Review>, message: string): Promise<Refusal | null> {
  for (const a of reviews) {
    let r: Review;
    try {
      r = await ask(a);
    } catch (err) {
      d.logger?.error({ err: errText(err), gate }, "gateway: an access review failed");
      return { status: 503, reason: "review_failed", message: "the access review could not be made; try again" };
    }
    if (!r.allowed) return { status: 403, reason: r.reason, message };
  }
  return null;
}

/** The reviews a request needs: a WebSocket GET of exec, attach or port-forward is reviewed as create too. */
function reviewsOf(p: Passage): readonly RequestAttributes[] {
  const a = p.attributes as RequestAttributes;
  return p.upgrade && a.kind === "resource" && a.verb === "get" && STREAMING_SUBRESOURCES.has(a.subresource) ? [a, { ...a, verb: "create" }] : [a];
}

/** The table. Its order is the gateway's order; each row's test is in gates.test.ts. */
export const GATES: readonly Gate[] = [
  {
    name: "target", identified: false,
    check: (a) => (a.target.length > MAX_TARGET ? { status: 414, reason: "target_too_long", message: `the request target is longer than ${MAX_TARGET} characters` } : null),
  },
  {
    name: "route", identified: false,
    check(a) {
      a.route = routeOf(a.target);
      return a.route === null ? { status: 404, reason: "no_route", message: "the gateway serves /clusters/{cluster}/… and /installations/{id}/runtime|controller/…" } : null;
    },
  },
  {
    name: "token", identified: false,
    async check(a, d) {
      const verified = await d.tokens.verify(presentedToken(a.req, a.upgrade));
      if (!verified.ok) return { status: 401, reason: verified.problem, message: "a valid PluginToken is required", headers: { "www-authenticate": 'Bearer realm="openfief-plugin"' } };
      a.identity = { claims: verified.claims, expiresAt: verified.expiresAt };
      return null;
    },
  },
  {
    name: "rate", identified: true, records: "rate", routes: BOTH,
    check(p, d) {
      // The user's bucket first: a user past their rate does not also drain the installation's.
      const user = d.rates.user.take(p.claims.sub);
      const wait = user ?? d.rates.installation.take(p.claims.installation_id);
      if (wait === null) return null;
      const scope = user !== null ? "user" : "installation";
      d.onRateLimited?.(scope);
      return { status: 429, reason: `rate_limited_${scope}`, message: `too many requests from this ${scope === "user" ? "user" : "installation"}; retry later`, headers: { "retry-after": String(wait) } };
    },
  },
  {
    name: "origin", identified: true, records: "origin", routes: BOTH,
    check: (p) => (p.foreign ? { status: 403, reason: "foreign_origin", message: "requests from this origin are not allowed" } : null),
  },
  {
    name: "cluster", identified: true, records: "cluster", routes: ["kube"],
    check(p, d) {
      const r = p.route as Extract<Route, { kind: "kube" }>;
      if (r.cluster !== p.claims.cluster_id) return { status: 403, reason: "cluster_mismatch", message: "the token is bound to another cluster" };
      if (r.cluster !== d.clusterId) return { status: 404, reason: "unknown_cluster", message: "this gateway fronts no such cluster" };
      return null;
    },
  },
  {
    name: "binding", identified: true, records: "installation", routes: ["installation"],
    check(p) {
      const r = p.route as Extract<Route, { kind: "installation" }>;
      return r.id !== p.claims.installation_id ? { status: 403, reason: "installation_mismatch", message: "the token is bound to another installation" } : null;
    },
  },
  {
    name: "can_view", identified: true, records: "can_view", routes: BOTH,
    async check(p, d) {
      const ok = await d.access.canView(p.claims.sub, { id: p.claims.installation_id, name: p.claims.installation_name });
      return ok ? null : { status: 403, reason: "can_view", message: "you may no longer view this plugin" };
    },
  },
  {
    name: "installation", identified: true, records: "installation", routes: BOTH,
    async check(p, d) {
      const i = await d.installations.get(p.claims.installation_id);
      p.installation = i;
      if (i === null) return { status: 404, reason: "no_installation", message: "the installation no longer exists" };
      if (i.state === "deleting") return { status: 409, reason: "deleting", message: "the installation is being deleted" };
      if (i.state !== "ready") return { status: 403, reason: "view_not_running", message: "no view of this installation runs" };
      return null;
    },
  },
  {
    name: "request", identified: true, records: "request", routes: ["kube"],
    check(p) {
      const t = parseRequestTarget((p.route as Extract<Route, { kind: "kube" }>).target);
      if (!t.ok) return { status: 400, reason: t.problem, message: "the request target cannot be read" };
      p.path = t.value.path;
      const parsed = requestInfoFromTarget(p.req.method ?? "GET", t.value);
      if (!parsed.ok) return { status: 400, reason: parsed.problem, message: "the request names no resource" };
      const a = parsed.value;
      p.attributes = a;
      if (Object.keys(p.req.headers).some(isImpersonation)) return { status: 400, reason: "impersonation", message: "impersonation is not allowed through the gateway" };
      if (a.kind === "resource") {
        const s = selectionOf(a, t.value.query);
        if (!s.ok) return { status: 400, reason: s.problem.reason, message: s.problem.message };
        p.served = s.value;
      }
      return null;
    },
  },
  {
    name: "user", identified: true, records: "user", routes: ["kube"],
    check: (p, d) => review(d, "user", reviewsOf(p), (x) => d.upstream.reviewUser(p.claims.sub, x), "you may not make this request"),
  },
  {
    name: "plugin", identified: true, records: "plugin", routes: ["kube"],
    check: (p, d) => review(d, "plugin", reviewsOf(p), (x) => d.upstream.reviewPlugin(p.installation as Installation, x), "the plugin may not make this request"),
  },
  {
    name: "watches", identified: true, records: "watches", routes: BOTH,
    check(p, d) {
      // An installation route never upgrades (it answers 404), so only the data path holds slots.
      const kind = p.route.kind !== "kube" ? null : p.upgrade ? "upgrade" : p.isWatch ? "watch" : null;
      if (kind === null) return null;
      const slot = d.watches.acquire(p.claims.sub, p.claims.installation_id);
      if (!slot.ok) {
        d.onWatchRefused?.(slot.scope);
        return { status: 429, reason: `too_many_watches_${slot.scope}`, message: `too many open watches (${slot.scope === "total" ? "in all" : `for this ${slot.scope}`}); close one or retry later`, headers: { "retry-after": String(WATCH_RETRY_SECONDS) } };
      }
      p.slot = { kind, release: slot.release };
      return null;
    },
  },
];

/** Where a request's passage through the gates ended. */
export type GateOutcome =
  | { readonly kind: "refused"; readonly gate: Gate; readonly refusal: Refusal; readonly passage: Passage | null }
  | { readonly kind: "failed"; readonly gate: Gate; readonly error: unknown; readonly passage: Passage | null }
  | { readonly kind: "passed"; readonly passage: Passage };

/**
 * Runs `a` through the gates in order: the first refusal ends it, as does a gate that throws
 * (`failed`, refused 503 at that gate). The identity the `token` gate finds makes the passage the
 * later gates read; a gate skips the routes it does not run on.
 */
export async function runGates(a: Arrival, d: GateDeps, gates: readonly Gate[] = GATES): Promise<GateOutcome> {
  let p: Passage | null = null;
  for (const g of gates) {
    try {
      if (!g.identified) {
        const refusal = await g.check(a, d);
        if (refusal !== null) return { kind: "refused", gate: g, refusal, passage: null };
        continue;
      }
      if (p === null) {
        if (a.route === null || a.identity === null) throw new Error("the gates before identity left no route or identity");
        p = new Passage(a, a.route, a.identity);
      }
      if (!g.routes.includes(p.route.kind)) continue;
      const refusal = await g.check(p, d);
      if (refusal !== null) return { kind: "refused", gate: g, refusal, passage: p };
    } catch (error) {
      return { kind: "failed", gate: g, error, passage: p };
    }
  }
  if (p === null) return { kind: "failed", gate: gates[gates.length - 1] as Gate, error: new Error("no gate made an identity"), passage: null };
  return { kind: "passed", passage: p };
}
