/**
 * The Kubernetes upstream (seed 002, "Architecture"): the user half is a SubjectAccessReview for
 * the user's Kubernetes identity; the plugin half a SubjectAccessReview for the installation's
 * ServiceAccount (so the cluster's own RBAC engine decides it, and the gateway can record it); the
 * request then goes to the API server with that ServiceAccount's own short-lived token, from a
 * TokenRequest (900 s, cached until a fifth of its life is left), never the user's. The cluster
 * evaluates the ServiceAccount's RBAC once more on the real request. A watch goes in the
 * collection form with its selection in the query (`watchTarget`), so the API server serves the
 * name a `/watch/` path named as the field selector it was authorised as, and ends the watch by
 * the token's expiry (docs/adr/0092, 0093).
 */
import { request as httpRequest } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Duplex } from "node:stream";
import { goUnescape } from "./go-url.js";
import type { Installation } from "./ports.js";
import { forwardHttp, requestOptions } from "./proxy.js";
import type { UpstreamEndpoint } from "./proxy.js";
import type { RequestAttributes } from "./request-info.js";
import { WEBSOCKET_TOKEN_PROTOCOL, forwardableHeaders, returnableHeaders } from "./upstream.js";
import type { ForwardContext, Review, Upstream } from "./upstream.js";

/** The lifetime asked of a plugin ServiceAccount's token. */
export const SA_TOKEN_SECONDS = 900;
/** How long a review or a TokenRequest may take. */
export const KUBE_CALL_TIMEOUT_MS = 5000;
/** The largest answer a review or a TokenRequest may send. */
const MAX_ANSWER = 1 << 20;

/** A user's identity in the cluster. */
export interface KubeSubject {
  readonly user: string;
  readonly groups: readonly string[];
}

/** Options of {@link KubeUpstream}. */
export interface KubeUpstreamOptions {
  /** The API server. */
  readonly endpoint: UpstreamEndpoint;
  /** The control plane's own bearer token, for its reviews and TokenRequests (never sent downstream). */
  readonly credentials: () => Promise<string>;
  /** The user's Kubernetes identity; by default `openfief:user:<sub>` with no groups (docs/adr/0027). */
  readonly userSubject?: (sub: string) => KubeSubject;
  /** ms since the epoch. */
  readonly clock?: () => number;
}

/** The default mapping of a console user to a Kubernetes user. */
export function defaultUserSubject(sub: string): KubeSubject {
  return { user: `openfief:user:${sub}`, groups: [] };
}

/** A SubjectAccessReview's `spec` for a subject and a request. */
export function accessReviewSpec(subject: KubeSubject, a: RequestAttributes): Record<string, unknown> {
  const spec: Record<string, unknown> = { user: subject.user, groups: [...subject.groups] };
  if (a.kind === "nonResource") {
    spec["nonResourceAttributes"] = { path: a.path, verb: a.verb };
    return spec;
  }
  const attrs: Record<string, unknown> = {
    namespace: a.namespace, verb: a.verb, group: a.apiGroup, version: a.apiVersion, resource: a.resource, subresource: a.subresource, name: a.name,
  };
  if (a.fieldSelector !== "") attrs["fieldSelector"] = { rawSelector: a.fieldSelector };
  if (a.labelSelector !== "") attrs["labelSelector"] = { rawSelector: a.labelSelector };
  spec["resourceAttributes"] = attrs;
  return spec;
}

/**
 * The target a watch is sent upstream as: its collection's path (no `/watch/` prefix, no name),
 * its query without `watch`, `fieldSelector` and `timeoutSeconds`, then `watch=true`, the selection's
 * field selector, and `timeoutSeconds` no later than `endsAt`. Anything else is sent as it came.
 */
export function watchTarget(ctx: Pick<ForwardContext, "attributes" | "target" | "served" | "endsAt">, now: number): string {
  const a = ctx.attributes;
  // Sent as they came: a subresource (no collection form; the API server refuses it itself), and
  // a namespace watched by name (`/watch/namespaces/x` is authorised in namespace x, its collection
  // form cluster-wide: rewriting would change what the cluster checks; its handler pins the name).
  if (a.kind !== "resource" || a.verb !== "watch" || ctx.served === null || a.subresource !== "" || a.parts.length > 2) return ctx.target;
  if (a.resource === "namespaces" && a.namespace !== "") return ctx.target;
  const enc = encodeURIComponent;
  const path = [a.apiPrefix, ...(a.apiGroup === "" ? [] : [a.apiGroup]), a.apiVersion, ...(a.namespace === "" ? [] : ["namespaces", a.namespace]), a.resource].map(enc).join("/");
  const q = ctx.target.indexOf("?");
  const kept = (q < 0 ? [] : ctx.target.slice(q + 1).split("&")).filter((pair) => {
    if (pair === "") return false;
    const key = goUnescape(pair.split("=")[0] ?? "", true);
    return !key.ok || !["watch", "fieldSelector", "timeoutSeconds"].includes(key.value);
  });
  kept.push("watch=true");
  if (ctx.served.fieldSelector !== "") kept.push(`fieldSelector=${enc(ctx.served.fieldSelector)}`);
  const asked = goTimeout(ctx.target);
  if (ctx.endsAt !== null) {
    const left = Math.max(1, Math.floor((ctx.endsAt - now) / 1000));
    kept.push(`timeoutSeconds=${asked === null ? left : Math.min(asked, left)}`);
  } else if (asked !== null) kept.push(`timeoutSeconds=${asked}`);
  return `/${path}?${kept.join("&")}`;
}

/** The first `timeoutSeconds` of a target, when it is a positive whole number. */
function goTimeout(target: string): number | null {
  const m = /[?&]timeoutSeconds=([0-9]{1,9})(?:&|$)/.exec(target);
  const n = m === null ? 0 : Number(m[1]);
  return n > 0 ? n : null;
}

/** The identity a ServiceAccount's token authenticates as. */
export function serviceAccountSubject(namespace: string, name: string): KubeSubject {
  return { user: `system:serviceaccount:${namespace}:${name}`, groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"] };
}

/** One JSON call to the API server with a deadline and a bounded answer. */
function callJson(endpoint: UpstreamEndpoint, method: string, path: string, token: string, body: unknown): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const { https, options } = requestOptions(endpoint, method, path, {
      authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json", "content-length": String(Buffer.byteLength(text)),
    });
    const req = (https ? httpsRequest : httpRequest)(options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER) req.destroy(new Error("the API server's answer is too large"));
        else chunks.push(c);
      });
      res.on("end", () => {
        clearTimeout(timer);
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown });
        } catch {
          reject(new Error(`the API server answered ${res.statusCode ?? 0} without JSON`));
        }
      });
      res.on("error", reject);
    });
    const timer = setTimeout(() => req.destroy(new Error("the API server did not answer in time")), KUBE_CALL_TIMEOUT_MS);
    req.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(text);
  });
}

function rec(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

interface CachedToken {
  readonly token: string;
  readonly expiresAt: number;
  readonly refreshAt: number;
}

/** The Kubernetes upstream. */
export class KubeUpstream implements Upstream {
  readonly mode = "kubernetes" as const;
  readonly #o: KubeUpstreamOptions;
  readonly #clock: () => number;
  readonly #tokens = new Map<string, CachedToken>();
  readonly #pending = new Map<string, Promise<CachedToken>>();
  /** How many TokenRequests were made (tests check the cache with it). */
  tokenRequests = 0;

  constructor(options: KubeUpstreamOptions) {
    this.#o = options;
    this.#clock = options.clock ?? Date.now;
  }

  reviewUser(user: string, attributes: RequestAttributes): Promise<Review> {
    return this.#review((this.#o.userSubject ?? defaultUserSubject)(user), attributes);
  }

  reviewPlugin(installation: Installation, attributes: RequestAttributes): Promise<Review> {
    return this.#review(serviceAccountSubject(installation.serviceAccount.namespace, installation.serviceAccount.name), attributes);
  }

  async #review(subject: KubeSubject, attributes: RequestAttributes): Promise<Review> {
    const token = await this.#o.credentials();
    const r = await callJson(this.#o.endpoint, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", token, {
      apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview", spec: accessReviewSpec(subject, attributes),
    });
    if (r.status !== 201 && r.status !== 200) throw new Error(`the SubjectAccessReview failed with ${r.status}`);
    const status = rec(rec(r.body)["status"]);
    if (status["allowed"] === true && status["denied"] !== true) return { allowed: true };
    return { allowed: false, reason: status["denied"] === true ? "denied" : "not_allowed" };
  }

  /** The plugin ServiceAccount's token, from the cache while more than a fifth of its life is left. */
  async serviceAccountToken(installation: Installation): Promise<string> {
    const { namespace, name } = installation.serviceAccount;
    const key = `${namespace}/${name}`;
    const hit = this.#tokens.get(key);
    if (hit !== undefined && this.#clock() < hit.refreshAt) return hit.token;
    let pending = this.#pending.get(key);
    if (pending === undefined) {
      pending = this.#requestToken(namespace, name).finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
    }
    const fresh = await pending;
    this.#tokens.set(key, fresh);
    return fresh.token;
  }

  async #requestToken(namespace: string, name: string): Promise<CachedToken> {
    this.tokenRequests++;
    const now = this.#clock();
    const r = await callJson(this.#o.endpoint, "POST", `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`, await this.#o.credentials(), {
      apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: SA_TOKEN_SECONDS },
    });
    if (r.status !== 201 && r.status !== 200) throw new Error(`the TokenRequest for ${namespace}/${name} failed with ${r.status}`);
    const status = rec(rec(r.body)["status"]);
    const token = status["token"];
    const expiry = Date.parse(String(status["expirationTimestamp"] ?? ""));
    if (typeof token !== "string" || token === "" || !Number.isFinite(expiry)) throw new Error(`the TokenRequest for ${namespace}/${name} returned no token`);
    const life = Math.max(0, expiry - now);
    return { token, expiresAt: expiry, refreshAt: now + life * 0.8 };
  }

  async forward(ctx: ForwardContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const token = await this.serviceAccountToken(ctx.installation);
    await forwardHttp({
      endpoint: this.#o.endpoint, target: watchTarget(ctx, this.#clock()), req, res, extraHeaders: { authorization: `Bearer ${token}` }, responseHeaders: ctx.responseHeaders, signal: ctx.signal,
    });
  }

  async upgrade(ctx: ForwardContext, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const token = await this.serviceAccountToken(ctx.installation);
    const headers = forwardableHeaders(req, true);
    // The PluginToken may ride in a WebSocket subprotocol: it never goes upstream.
    const protocols = String(req.headers["sec-websocket-protocol"] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "" && !s.startsWith(WEBSOCKET_TOKEN_PROTOCOL));
    if (protocols.length > 0) headers["sec-websocket-protocol"] = protocols.join(", ");
    else delete headers["sec-websocket-protocol"];
    const { https, options } = requestOptions(this.#o.endpoint, req.method ?? "GET", ctx.target, { ...headers, authorization: `Bearer ${token}` });
    await new Promise<void>((resolve) => {
      const up = (https ? httpsRequest : httpRequest)(options);
      const timer = setTimeout(() => up.destroy(new Error("timeout")), KUBE_CALL_TIMEOUT_MS * 6);
      const head1 = (status: number, message: string, h: IncomingMessage["headers"], keep: boolean): string => {
        const lines = [`HTTP/1.1 ${status} ${message}`];
        const out: Record<string, string | string[] | undefined> = keep ? { ...h } : { ...returnableHeaders(h), connection: "close" };
        for (const [k, v] of Object.entries({ ...out, ...ctx.responseHeaders })) for (const x of Array.isArray(v) ? v : [v]) if (x !== undefined) lines.push(`${k}: ${x}`);
        return `${lines.join("\r\n")}\r\n\r\n`;
      };
      up.on("upgrade", (upRes, upSocket, upHead) => {
        clearTimeout(timer);
        socket.write(head1(101, "Switching Protocols", upRes.headers, true));
        if (upHead.length > 0) socket.write(upHead);
        if (head.length > 0) upSocket.write(head);
        upSocket.pipe(socket);
        socket.pipe(upSocket);
        // Upgraded sockets are half-open capable; either side ending ends the tunnel.
        const close = (): void => {
          upSocket.destroy();
          socket.destroy();
          resolve();
        };
        upSocket.on("error", close);
        socket.on("error", close);
        upSocket.on("close", close);
        socket.on("close", close);
        upSocket.on("end", close);
        socket.on("end", close);
      });
      up.on("response", (upRes) => {
        clearTimeout(timer);
        // The API server refused to upgrade: its answer goes back as it is.
        socket.write(head1(upRes.statusCode ?? 502, upRes.statusMessage ?? "", upRes.headers, false));
        socket.once("finish", () => socket.destroy());
        upRes.pipe(socket);
        upRes.on("end", resolve);
      });
      up.on("error", () => {
        clearTimeout(timer);
        socket.once("finish", () => socket.destroy());
        socket.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        resolve();
      });
      up.end();
    });
  }
}
