/**
 * A TokenReviewer that verifies projected ServiceAccount tokens offline against published public
 * keys (a cluster's JWKS, or the embedded key of `openfief token`). Only the algorithms
 * Kubernetes signs with are allowed, so `none` and HMAC are refused before any key is tried.
 */
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from "jose";
import { EGRESS_AUDIENCE } from "../plugins/index.js";
import { systemClock, type Clock, type ReviewResult, type TokenReviewer } from "./reviewer.js";

/** Algorithms accepted: those Kubernetes signs ServiceAccount tokens with. */
export const JWKS_ALGORITHMS: readonly string[] = ["RS256", "ES256", "ES384", "ES512"];

/** Options of {@link JwksTokenReviewer}. */
export interface JwksTokenReviewerOptions {
  /** The key set, or a function returning the current one (re-read for rotation). */
  readonly jwks: JSONWebKeySet | (() => JSONWebKeySet | Promise<JSONWebKeySet>);
  readonly issuer: string;
  readonly audience?: string;
  readonly clock?: Clock;
  /** Leeway for exp/nbf, in seconds. */
  readonly clockToleranceSeconds?: number;
}

/** Verifies signature, issuer, audience and expiry; the username is the `sub` claim. */
export class JwksTokenReviewer implements TokenReviewer {
  readonly #options: JwksTokenReviewerOptions;

  constructor(options: JwksTokenReviewerOptions) {
    this.#options = options;
  }

  async review(token: string): Promise<ReviewResult> {
    let jwks: JSONWebKeySet;
    try {
      const source = this.#options.jwks;
      jwks = typeof source === "function" ? await source() : source;
    } catch {
      return { ok: false, code: "review_failed" };
    }
    const clock = this.#options.clock ?? systemClock;
    try {
      const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), {
        algorithms: [...JWKS_ALGORITHMS],
        audience: this.#options.audience ?? EGRESS_AUDIENCE,
        issuer: this.#options.issuer,
        requiredClaims: ["exp", "sub"],
        currentDate: new Date(clock.now()),
        clockTolerance: this.#options.clockToleranceSeconds ?? 0,
      });
      if (typeof payload.sub !== "string" || payload.sub === "") return { ok: false, code: "no_username" };
      return { ok: true, username: payload.sub };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === "ERR_JWT_CLAIM_VALIDATION_FAILED" && (err as { claim?: unknown }).claim === "aud") return { ok: false, code: "wrong_audience" };
      return { ok: false, code: "token_refused" };
    }
  }
}
