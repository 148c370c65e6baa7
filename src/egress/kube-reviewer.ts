/**
 * The Kubernetes TokenReview adapter (seed 004): built for one audience, it accepts a review only
 * when the API server says the token is authenticated AND lists that audience, so a plugin's
 * core token (audience openfief-core) is refused here.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { EGRESS_AUDIENCE } from "../plugins/index.js";
import type { ReviewResult, TokenReviewer } from "./reviewer.js";

/** The one call this adapter makes; a seam for embedders with their own client. */
export interface TokenReviewApi {
  createTokenReview(param: {
    body: { apiVersion: string; kind: string; spec: { token: string; audiences: string[] } };
  }): Promise<{ status?: { authenticated?: boolean; audiences?: string[]; user?: { username?: string }; error?: string } }>;
}

/** Reviews tokens with the TokenReview API. Any API error is a refusal (`review_failed`). */
export class KubeTokenReviewer implements TokenReviewer {
  readonly #api: TokenReviewApi;
  readonly #audience: string;

  constructor(api: TokenReviewApi, audience: string = EGRESS_AUDIENCE) {
    this.#api = api;
    this.#audience = audience;
  }

  /** Builds the adapter on client-node's AuthenticationV1Api (loaded now: the client is heavy, and only cluster mode needs it). */
  static async fromKubeConfig(kc: KubeConfig, audience: string = EGRESS_AUDIENCE): Promise<KubeTokenReviewer> {
    const { AuthenticationV1Api } = await import("@kubernetes/client-node");
    return new KubeTokenReviewer(kc.makeApiClient(AuthenticationV1Api) as unknown as TokenReviewApi, audience);
  }

  async review(token: string): Promise<ReviewResult> {
    let status;
    try {
      const answer = await this.#api.createTokenReview({
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, audiences: [this.#audience] } },
      });
      status = answer.status;
    } catch {
      // The error may quote the request; it is dropped, never logged, so the token cannot leak.
      return { ok: false, code: "review_failed" };
    }
    if (status?.authenticated !== true) return { ok: false, code: "token_refused" };
    if (!(status.audiences ?? []).includes(this.#audience)) return { ok: false, code: "wrong_audience" };
    const username = status.user?.username;
    if (typeof username !== "string" || username === "") return { ok: false, code: "no_username" };
    return { ok: true, username };
  }
}
