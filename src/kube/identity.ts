/**
 * The cluster's identity for the console in a cluster: who a bearer token is (a TokenReview), what
 * that user may do (SubjectAccessReviews), and writing a PluginGrant AS that user (impersonation:
 * `Impersonate-User`, one `Impersonate-Group` header per group, `Impersonate-Uid`), so the API
 * server authorizes the write with the user's own rights and its audit log names the user.
 *
 * Every unknown is a refusal: a review the API server does not answer (unreachable, an error, a
 * deadline passed) throws `KubeError` with the code `api_unreachable`, never a grant of access. No
 * token is ever logged or put in an error.
 *
 * Impersonated requests go through `node:http(s)` with the kubeconfig's own TLS settings and
 * credentials, not through the generated client: its fetch merges repeated headers into one, and
 * `Impersonate-Group: a, b` would name one group called "a, b" (client-node issue 2474).
 */
import { request as httpRequest } from "node:http";
import type { IncomingMessage, OutgoingHttpHeaders, RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { AuthenticationV1Api, AuthorizationV1Api } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import { NAMESPACE } from "../plugins/index.js";
import { httpStatus, KubeError, KubeErrorCode } from "./errors.js";

/** A user as the API server authenticated them. */
export interface ReviewedUser {
  readonly user: string;
  readonly groups: readonly string[];
  readonly uid?: string;
}

/** A TokenReview's answer: the user, or why the token names no one (never the token). */
export type TokenReviewResult = { readonly ok: true; readonly user: ReviewedUser } | { readonly ok: false; readonly reason: string };

/** What a SubjectAccessReview asks about. */
export interface AccessQuestion {
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly namespace?: string;
  readonly name?: string;
}

/** Options of {@link ClusterIdentity}. */
export interface ClusterIdentityOptions {
  /** Where the Plugin and PluginGrant resources live; default `openfief`. */
  readonly namespace?: string;
  /** Audiences a token must be for (TokenReview `spec.audiences`); default: the API server's own. */
  readonly audiences?: readonly string[];
  /** The longest a review or an impersonated write may take (ms); default 5 s. */
  readonly timeoutMs?: number;
}

/** The longest answer read from the API server for an impersonated write. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** Asks the cluster's API server who a token is and what a user may do; writes PluginGrants as a user. */
export class ClusterIdentity {
  readonly namespace: string;
  readonly #kc: KubeConfig;
  readonly #authn: AuthenticationV1Api;
  readonly #authz: AuthorizationV1Api;
  readonly #audiences: readonly string[] | undefined;
  readonly #timeoutMs: number;

  constructor(kc: KubeConfig, o: ClusterIdentityOptions = {}) {
    this.#kc = kc;
    this.#authn = kc.makeApiClient(AuthenticationV1Api);
    this.#authz = kc.makeApiClient(AuthorizationV1Api);
    this.namespace = o.namespace ?? NAMESPACE;
    this.#audiences = o.audiences;
    this.#timeoutMs = o.timeoutMs ?? 5000;
  }

  /** Who `token` is, as a TokenReview says; throws `api_unreachable` when the API server does not answer. */
  async reviewToken(token: string): Promise<TokenReviewResult> {
    const spec = this.#audiences === undefined ? { token } : { token, audiences: [...this.#audiences] };
    const review = await this.#deadline("the token review", this.#authn.createTokenReview({ body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec } }));
    const s = review.status;
    if (s?.authenticated !== true || s.user?.username === undefined || s.user.username === "") {
      // The API server's own words (`s.error`) may quote the token's claims: only a fixed phrase travels.
      return { ok: false, reason: "the cluster does not accept this token (expired, revoked, or for another audience)" };
    }
    if (this.#audiences !== undefined && this.#audiences.length > 0 && !(s.audiences ?? []).some((a) => this.#audiences?.includes(a))) {
      return { ok: false, reason: "the token is not for this console's audience" };
    }
    const user: ReviewedUser = { user: s.user.username, groups: s.user.groups ?? [], ...(s.user.uid === undefined || s.user.uid === "" ? {} : { uid: s.user.uid }) };
    return { ok: true, user };
  }

  /** Whether `who` may do `q` (a SubjectAccessReview); throws `api_unreachable` when the API server does not answer. */
  async allowed(who: ReviewedUser, q: AccessQuestion): Promise<boolean> {
    const resourceAttributes = {
      verb: q.verb,
      group: q.group,
      resource: q.resource,
      ...(q.namespace === undefined ? {} : { namespace: q.namespace }),
      ...(q.name === undefined ? {} : { name: q.name }),
    };
    const review = await this.#deadline("the access review", this.#authz.createSubjectAccessReview({
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: { user: who.user, groups: [...who.groups], ...(who.uid === undefined ? {} : { uid: who.uid }), resourceAttributes },
      },
    }));
    return review.status?.allowed === true && review.status.denied !== true;
  }

  /**
   * Merge-patches the PluginGrant `name`'s spec AS `who`, expecting `resourceVersion` when given
   * (a grant changed meanwhile is a 409), or creates it when `create` (no grant yet). With
   * `dryRun`, the API server authorizes, admits and validates without storing. Resolves to the
   * object the server answered; throws `KubeError`: `api_error` with the HTTP status the API
   * server refused with (403, 404, 409, 422), `api_unreachable` when it did not answer or failed.
   */
  async writeGrantAs(who: ReviewedUser, name: string, spec: unknown, o: { readonly resourceVersion?: string; readonly create?: boolean; readonly dryRun?: boolean }): Promise<Record<string, unknown>> {
    const base = `/apis/openfief.io/v1alpha1/namespaces/${encodeURIComponent(this.namespace)}/plugingrants`;
    const query = new URLSearchParams({ fieldManager: "openfief-console" });
    if (o.dryRun === true) query.set("dryRun", "All");
    const body = o.create === true
      ? { apiVersion: "openfief.io/v1alpha1", kind: "PluginGrant", metadata: { name, namespace: this.namespace }, spec }
      : { metadata: o.resourceVersion === undefined ? {} : { resourceVersion: o.resourceVersion }, spec };
    const path = o.create === true ? `${base}?${query}` : `${base}/${encodeURIComponent(name)}?${query}`;
    const contentType = o.create === true ? "application/json" : "application/merge-patch+json";
    return this.#impersonated(who, o.create === true ? "POST" : "PATCH", path, contentType, JSON.stringify(body));
  }

  /** Reads the PluginGrant `name` with the console's own rights; null when there is none. */
  async readGrant(name: string): Promise<Record<string, unknown> | null> {
    try {
      return await this.#impersonated(null, "GET", `/apis/openfief.io/v1alpha1/namespaces/${encodeURIComponent(this.namespace)}/plugingrants/${encodeURIComponent(name)}`, undefined, undefined);
    } catch (err) {
      if (err instanceof KubeError && err.status === 404) return null;
      throw err;
    }
  }

  async #deadline<T>(what: string, p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new KubeError(KubeErrorCode.Unreachable, `${what} took longer than ${this.#timeoutMs} ms: refused`)), this.#timeoutMs);
    });
    try {
      return await Promise.race([p, late]);
    } catch (err) {
      if (err instanceof KubeError) throw err;
      const status = httpStatus(err);
      throw new KubeError(KubeErrorCode.Unreachable, `${what} failed${status === undefined ? "" : ` (HTTP ${status})`}: refused`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The request's options: the kubeconfig's TLS settings and credentials, the impersonation headers. */
  async #options(who: ReviewedUser | null, method: string, path: string, contentType: string | undefined, body: string | undefined): Promise<RequestOptions> {
    const cluster = this.#kc.getCurrentCluster();
    if (cluster === null) throw new KubeError(KubeErrorCode.NotInCluster, "no cluster in the kubeconfig");
    const server = new URL(cluster.server);
    const opts: RequestOptions & { headers: OutgoingHttpHeaders } = { headers: {} };
    await this.#kc.applyToHTTPSOptions(opts);
    const headers: OutgoingHttpHeaders = { ...(opts.headers as Record<string, string>), Accept: "application/json", ...impersonation(who) };
    if (contentType !== undefined) headers["Content-Type"] = contentType;
    if (body !== undefined) headers["Content-Length"] = Buffer.byteLength(body);
    const https = server.protocol === "https:";
    return {
      ...opts,
      protocol: server.protocol,
      hostname: server.hostname.replace(/^\[|\]$/g, ""),
      port: server.port === "" ? (https ? 443 : 80) : Number(server.port),
      path: `${server.pathname.replace(/\/$/, "")}${path}`,
      method,
      headers,
      timeout: this.#timeoutMs,
      ...(cluster.skipTLSVerify ? { rejectUnauthorized: false } : {}),
    };
  }

  /** One request to the API server, as `who` (impersonated) or, with null, as the console itself. */
  async #impersonated(who: ReviewedUser | null, method: string, path: string, contentType: string | undefined, body: string | undefined): Promise<Record<string, unknown>> {
    const target = await this.#options(who, method, path, contentType, body);
    const request = target.protocol === "https:" ? httpsRequest : httpRequest;
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(target, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) req.destroy(new Error("answer too large"));
          else chunks.push(c);
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      });
      req.on("timeout", () => req.destroy(new Error("deadline")));
      req.on("error", reject);
      req.end(body);
    }).catch((err: unknown) => {
      throw new KubeError(KubeErrorCode.Unreachable, `the API server did not answer (${err instanceof Error ? err.message : "error"}): refused`);
    });
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // Not JSON (a proxy's page): the status decides.
    }
    if (status >= 200 && status < 300) return parsed;
    const message = typeof parsed["message"] === "string" ? parsed["message"].slice(0, 300) : `HTTP ${status}`;
    if (status >= 500 || status === 0) throw new KubeError(KubeErrorCode.Unreachable, `the API server failed: ${message}`, status);
    throw new KubeError(KubeErrorCode.ApiError, `the API server refused: ${message}`, status);
  }
}

/** The impersonation headers for `who`: one `Impersonate-Group` per group (a comma-joined one would name a single group). */
function impersonation(who: ReviewedUser | null): OutgoingHttpHeaders {
  if (who === null) return {};
  return {
    "Impersonate-User": who.user,
    ...(who.groups.length === 0 ? {} : { "Impersonate-Group": [...who.groups] }),
    ...(who.uid === undefined ? {} : { "Impersonate-Uid": who.uid }),
  };
}
