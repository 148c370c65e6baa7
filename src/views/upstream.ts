/**
 * Where the gateway's Kubernetes data path goes, behind one interface with two modes: a real
 * Kubernetes API (`kube-upstream.ts`: SubjectAccessReviews, TokenRequests, the plugin
 * ServiceAccount's token on the wire) and the embedded default (`embedded-upstream.ts`: the
 * control plane's own resources, the PolicyRule matcher for both reviews). The gateway runs the
 * gates; an upstream answers the two reviews and serves what passed them.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Installation } from "./ports.js";
import type { RequestAttributes } from "./request-info.js";
import type { Selection } from "./served.js";

/** A review's answer. Throwing means "could not ask": the gateway refuses with 503 (fail closed). */
export type Review = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

/** What the gateway hands an upstream with a request that passed every gate. */
export interface ForwardContext {
  readonly installation: Installation;
  readonly attributes: RequestAttributes;
  /** The Kubernetes request target as the client sent it (`/api/v1/pods?watch=1`), raw. */
  readonly target: string;
  /** Headers the answer must carry (CORS, `Audit-ID`). */
  readonly responseHeaders: Readonly<Record<string, string>>;
  /**
   * What a list or watch may be served (docs/adr/0093): its field and label selectors, a name in
   * a watch's path among them; null for other verbs. An upstream serves nothing outside it.
   */
  readonly served: Selection | null;
  /** When a watch must end (its PluginToken's expiry, epoch ms); null for anything else. */
  readonly endsAt: number | null;
  /** Aborted when the gateway ends the request (a watch whose token expired): end the answer. */
  readonly signal: AbortSignal;
}

/** One upstream mode. */
export interface Upstream {
  readonly mode: "kubernetes" | "embedded";
  /** The user half: may `user` make this request? (FUN-17's SubjectAccessReview.) */
  reviewUser(user: string, attributes: RequestAttributes): Promise<Review>;
  /** The plugin half: do the installation's rules allow it? */
  reviewPlugin(installation: Installation, attributes: RequestAttributes): Promise<Review>;
  /** Serves the request (streams pass through; authorised at start). */
  forward(ctx: ForwardContext, req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Serves an upgraded connection (exec, attach, port-forward); absent when the mode has none. */
  upgrade?(ctx: ForwardContext, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void>;
}

/** Kubernetes' WebSocket bearer-token subprotocol prefix (browsers cannot set Authorization on a WebSocket). */
export const WEBSOCKET_TOKEN_PROTOCOL = "base64url.bearer.authorization.k8s.io.";

/** Hop-by-hop headers (RFC 9110 7.6.1), never forwarded. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"]);

/**
 * Request headers the gateway never forwards: credentials (the plugin SA's token replaces the
 * PluginToken), identities a front proxy might trust, and the browser's origin and cookies.
 */
const NEVER_FORWARD = new Set(["authorization", "cookie", "origin", "referer", "host", "x-remote-user", "x-remote-group", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"]);

/** Whether a request header asks the API server to act as someone else (refused by the gateway). */
export function isImpersonation(name: string): boolean {
  return name.toLowerCase().startsWith("impersonate-");
}

/** The client's request headers an upstream may see, as a fresh object. */
export function forwardableHeaders(req: IncomingMessage, keepUpgrade = false): Record<string, string | string[]> {
  const connection = String(req.headers.connection ?? "").toLowerCase().split(",").map((s) => s.trim()).filter((s) => s !== "");
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    const key = k.toLowerCase();
    if (NEVER_FORWARD.has(key) || isImpersonation(key) || key.startsWith("x-remote-extra-")) continue;
    if (HOP_BY_HOP.has(key) || connection.includes(key)) {
      if (!(keepUpgrade && key === "upgrade")) continue;
    }
    out[key] = v;
  }
  if (keepUpgrade) out["connection"] = "Upgrade";
  return out;
}

/** Response headers a client may see: hop-by-hop and cookies removed. */
export function returnableHeaders(headers: IncomingMessage["headers"]): Record<string, string | string[]> {
  const connection = String(headers.connection ?? "").toLowerCase().split(",").map((s) => s.trim());
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    const key = k.toLowerCase();
    if (HOP_BY_HOP.has(key) || connection.includes(key) || key === "set-cookie" || key.startsWith("access-control-")) continue;
    out[key] = v;
  }
  return out;
}
