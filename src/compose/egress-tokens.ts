/**
 * The egress tokens of the plugins the cluster's plugin host runs (ADR 0080): for each plugin, a
 * token of its own ServiceAccount `plugin-<name>` with the one audience `openfief-egress`, from a
 * TokenRequest, so the egress proxy's TokenReview names the plugin and its allow-list applies.
 * Short lived (10 minutes), cached until a fifth of its life is left; concurrent calls share one
 * request. A token is never logged, recorded or put in an error.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { EGRESS_AUDIENCE, NAMESPACE, SERVICE_ACCOUNT_PREFIX } from "../plugins/index.js";

/** The lifetime asked for. Kubernetes' minimum is 600 s. */
export const EGRESS_TOKEN_SECONDS = 600;
/** How long one TokenRequest may take. */
export const TOKEN_REQUEST_TIMEOUT_MS = 10_000;

/** Where a plugin's egress token comes from. */
export interface EgressTokens {
  /** The plugin's current egress token; rejects (without the token) when none can be had. */
  token(plugin: string): Promise<string>;
  /** Forgets a plugin's token (it no longer runs). */
  forget(plugin: string): void;
}

/** Options of {@link tokenRequestTokens}. */
export interface TokenRequestOptions {
  readonly namespace?: string;
  readonly clock?: () => number;
  /** The ServiceAccount whose token is asked for a key (default: the plugin's own, `plugin-<key>`). */
  readonly account?: (key: string) => string;
  /** The one audience asked for a key (default `openfief-egress`). */
  readonly audience?: (key: string) => string;
}

interface Cached {
  readonly token: string;
  readonly refreshAt: number;
}

/** Egress tokens from TokenRequests, through the Kubernetes API. */
export async function tokenRequestTokens(kc: KubeConfig, o: TokenRequestOptions = {}): Promise<EgressTokens & { readonly requests: () => number }> {
  const { CoreV1Api } = await import("@kubernetes/client-node");
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = o.namespace ?? NAMESPACE;
  const clock = o.clock ?? Date.now;
  const account = o.account ?? ((plugin: string) => SERVICE_ACCOUNT_PREFIX + plugin);
  const audience = o.audience ?? (() => EGRESS_AUDIENCE);
  const cache = new Map<string, Cached>();
  const pending = new Map<string, Promise<Cached>>();
  let requests = 0;

  const request = async (plugin: string): Promise<Cached> => {
    requests++;
    const now = clock();
    const sa = account(plugin);
    const call = core.createNamespacedServiceAccountToken({
      name: sa,
      namespace,
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { audiences: [audience(plugin)], expirationSeconds: EGRESS_TOKEN_SECONDS } },
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the TokenRequest for ${sa} took longer than ${TOKEN_REQUEST_TIMEOUT_MS} ms`)), TOKEN_REQUEST_TIMEOUT_MS);
    });
    let answer: Awaited<typeof call>;
    try {
      answer = await Promise.race([call, timeout]);
    } catch (err) {
      // client-node's errors carry the request and its headers (the host's own bearer token):
      // only the status goes on, never the error itself as a cause.
      const status = (err as { code?: unknown }).code;
      // eslint-disable-next-line preserve-caught-error -- the caught error holds credentials (above)
      throw new Error(`the TokenRequest for ${sa} failed${typeof status === "number" ? ` with ${status}` : ""}`);
    } finally {
      clearTimeout(timer);
    }
    const token = answer.status?.token;
    const expiry = answer.status?.expirationTimestamp === undefined ? NaN : new Date(answer.status.expirationTimestamp).getTime();
    if (typeof token !== "string" || token === "" || !Number.isFinite(expiry)) throw new Error(`the TokenRequest for ${sa} returned no token`);
    return { token, refreshAt: now + Math.max(0, expiry - now) * 0.8 };
  };

  return {
    requests: () => requests,
    async token(plugin) {
      const hit = cache.get(plugin);
      if (hit !== undefined && clock() < hit.refreshAt) return hit.token;
      let p = pending.get(plugin);
      if (p === undefined) {
        p = request(plugin).finally(() => pending.delete(plugin));
        pending.set(plugin, p);
      }
      const fresh = await p;
      cache.set(plugin, fresh);
      return fresh.token;
    },
    forget(plugin) {
      cache.delete(plugin);
    },
  };
}
