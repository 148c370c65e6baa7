/**
 * Who calls the core (D-27 of the specification; docs/adr/0196): a plugin presents its
 * `openfief-core` token, a verifier says whose it is (a Kubernetes username), and the
 * ServiceAccount name rule maps that back to the instance. The verifier is a port with two
 * adapters: the published JWKS (the embedded mode: the data folder's key, issuer
 * `openfief-embedded`) and the cluster's TokenReview, each for the audience `openfief-core` only,
 * so a plugin's egress token, or any other audience's, is refused here.
 *
 * A verifier answers a refusal code, never throws, and never puts the token in an answer.
 */
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from "jose";
import { reviewWithin } from "../egress/index.js";
import type { ReviewRefusal, TokenReviewer } from "../egress/index.js";
import type { CoreRefusalCode } from "../events/index.js";
import { CORE_AUDIENCE } from "../plugins/index.js";

/** The algorithms Kubernetes signs ServiceAccount tokens with; `none` and HMAC never pass. */
export const PLUGIN_TOKEN_ALGORITHMS: readonly string[] = ["RS256", "ES256", "ES384", "ES512"];
/** A bearer token longer than this is refused unread. */
export const MAX_PLUGIN_TOKEN_CHARS = 8 * 1024;

/** Why a token was refused. */
export type TokenRefusal = Extract<CoreRefusalCode, "missing_token" | "malformed_token" | "wrong_audience" | "token_expired" | "wrong_issuer" | "token_refused" | "review_failed" | "review_timeout">;

/** The outcome of one check: the token's Kubernetes username, or why not. */
export type TokenCheck = { readonly ok: true; readonly username: string } | { readonly ok: false; readonly code: TokenRefusal };

/** The port: checks one `openfief-core` token. Never throws. */
export interface PluginTokenVerifier {
  verify(token: string): Promise<TokenCheck>;
}

/**
 * The shape a bearer token must have before any verifier sees it: base64url segments, three of
 * them, within the cap. Checked first, so that nothing oversized or odd is parsed or sent on.
 */
export function tokenShapeProblem(token: string | undefined): TokenRefusal | null {
  if (token === undefined || token === "") return "missing_token";
  if (token.length > MAX_PLUGIN_TOKEN_CHARS || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) return "malformed_token";
  return null;
}

/** Options of {@link jwksPluginVerifier}. */
export interface JwksVerifierOptions {
  /** The current key set (called on every check, so a rotated key works at once). */
  readonly jwks: () => JSONWebKeySet | Promise<JSONWebKeySet>;
  readonly issuer: string;
  /** `openfief-core` unless told. */
  readonly audience?: string;
  readonly now?: () => Date;
  /** Leeway on expiry and not-before, in seconds (default 0: the embedded mode mints on this machine's clock). */
  readonly clockToleranceSeconds?: number;
}

/** What jose's errors mean here: the claim that failed, or a token that is not a JWS at all. */
function joseRefusal(err: unknown): TokenRefusal {
  const e = err as { code?: unknown; claim?: unknown };
  if (e.code === "ERR_JWT_EXPIRED") return "token_expired";
  if (e.code === "ERR_JWT_CLAIM_VALIDATION_FAILED") {
    if (e.claim === "aud") return "wrong_audience";
    if (e.claim === "iss") return "wrong_issuer";
    return "token_refused";
  }
  if (e.code === "ERR_JWS_INVALID" || e.code === "ERR_JWT_INVALID") return "malformed_token";
  return "token_refused";
}

/**
 * The JWKS adapter: the signature (by a key of the set, with an algorithm Kubernetes uses), then
 * the issuer, the one audience, an expiry; the username is `sub`. The claims are looked at only once
 * the signature holds, so a forged token learns nothing but `token_refused`.
 */
export function jwksPluginVerifier(o: JwksVerifierOptions): PluginTokenVerifier {
  // The key set built once per set read (a source that caches its file returns the same object).
  let last: { jwks: JSONWebKeySet; set: ReturnType<typeof createLocalJWKSet> } | null = null;
  return {
    async verify(token) {
      const shape = tokenShapeProblem(token);
      if (shape !== null) return { ok: false, code: shape };
      let set: ReturnType<typeof createLocalJWKSet>;
      try {
        const jwks = await o.jwks();
        if (last === null || last.jwks !== jwks) last = { jwks, set: createLocalJWKSet(jwks) };
        set = last.set;
      } catch {
        return { ok: false, code: "review_failed" };
      }
      try {
        const { payload } = await jwtVerify(token, set, {
          algorithms: [...PLUGIN_TOKEN_ALGORITHMS],
          audience: o.audience ?? CORE_AUDIENCE,
          issuer: o.issuer,
          requiredClaims: ["exp", "sub"],
          currentDate: (o.now ?? (() => new Date()))(),
          clockTolerance: o.clockToleranceSeconds ?? 0,
        });
        return typeof payload.sub === "string" && payload.sub !== "" ? { ok: true, username: payload.sub } : { ok: false, code: "token_refused" };
      } catch (err) {
        return { ok: false, code: joseRefusal(err) };
      }
    },
  };
}

const REVIEW_CODES: Readonly<Record<ReviewRefusal, TokenRefusal>> = {
  token_refused: "token_refused",
  wrong_audience: "wrong_audience",
  no_username: "token_refused",
  review_failed: "review_failed",
  review_timeout: "review_timeout",
};

/** The longest a TokenReview may take before the call is refused (`review_timeout`). */
export const DEFAULT_REVIEW_TIMEOUT_MS = 3000;

/**
 * The TokenReview adapter: any TokenReviewer built for `openfief-core` (the egress room's
 * `KubeTokenReviewer.fromKubeConfig(kc, CORE_AUDIENCE)`, cached or not), asked within a deadline.
 * The API server does not say why it refused a token, so an expired token, another issuer's or a
 * bad signature are all `token_refused` here.
 */
export function reviewerPluginVerifier(reviewer: TokenReviewer, timeoutMs = DEFAULT_REVIEW_TIMEOUT_MS): PluginTokenVerifier {
  return {
    async verify(token) {
      const shape = tokenShapeProblem(token);
      if (shape !== null) return { ok: false, code: shape };
      const r = await reviewWithin(reviewer, token, timeoutMs);
      return r.ok ? { ok: true, username: r.username } : { ok: false, code: REVIEW_CODES[r.code] };
    },
  };
}
