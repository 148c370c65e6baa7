/**
 * The control plane's own JWTs (seed 002, "Two token types"): a generic ES256 signer over the key
 * ring, and a validator that checks exactly one audience, the issuer, the expiry and lifetime, the
 * algorithm and the key ID. Two audiences exist: `openfief-user` (the console's session token)
 * and `openfief-plugin` (a PluginToken). A token naming both audiences passes neither validator, so
 * a PluginToken can never be taken for a session, nor a session for a PluginToken.
 *
 * Validation never throws and never echoes the token: it answers a stable problem code.
 */
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, SignJWT, type JSONWebKeySet, type JWTPayload } from "jose";
import type { KeyRing } from "./key-ring.js";

/** The audience of the console's session tokens. */
export const USER_AUDIENCE = "openfief-user";
/** The audience of PluginTokens. */
export const PLUGIN_AUDIENCE = "openfief-plugin";
/** The issuer of both, unless configured otherwise. */
export const DEFAULT_ISSUER = "openfief";
/** The only signing algorithm. */
export const TOKEN_ALGORITHM = "ES256";
/** Tokens longer than this are refused before anything parses them. */
export const MAX_TOKEN_BYTES = 8192;

/** Why a token was refused. Never includes the token. */
export type TokenProblem =
  | "missing"
  | "too_large"
  | "malformed"
  | "wrong_alg"
  | "no_kid"
  | "unknown_kid"
  | "bad_signature"
  | "wrong_issuer"
  | "wrong_audience"
  | "expired"
  | "not_yet_valid"
  | "issued_in_future"
  | "lifetime_too_long"
  | "missing_claim"
  | "unexpected_claim"
  | "keys_unavailable";

/** A verified token's claims, or why it was refused. */
export type Verified<C> = { readonly ok: true; readonly claims: C; readonly expiresAt: Date } | { readonly ok: false; readonly problem: TokenProblem };

/** Signs tokens with the ring's signing key. */
export class TokenSigner {
  constructor(
    readonly ring: KeyRing,
    readonly issuer: string = DEFAULT_ISSUER,
    readonly clock: () => number = Date.now,
  ) {}

  /**
   * Signs `claims` for one audience: `iss`, `aud` (a single string), `sub`, `iat` and `exp` are
   * set here and may not appear in `claims`.
   */
  async sign(subject: string, audience: string, ttlSeconds: number, claims: Readonly<Record<string, string>> = {}): Promise<{ token: string; expiresAt: Date }> {
    if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0) throw new RangeError("ttlSeconds must be a positive integer");
    for (const reserved of ["iss", "aud", "sub", "iat", "exp", "nbf", "jti"]) if (reserved in claims) throw new RangeError(`claim ${reserved} is set by the signer`);
    const { kid, key } = await this.ring.signingKey();
    const iat = Math.floor(this.clock() / 1000);
    const exp = iat + ttlSeconds;
    const token = await new SignJWT({ ...claims })
      .setProtectedHeader({ alg: TOKEN_ALGORITHM, typ: "JWT", kid })
      .setIssuer(this.issuer)
      .setAudience(audience)
      .setSubject(subject)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(key);
    return { token, expiresAt: new Date(exp * 1000) };
  }
}

/** Options of {@link TokenValidator}. */
export interface TokenValidatorOptions {
  /** The one audience accepted. */
  readonly audience: string;
  readonly issuer?: string;
  /** The public keys (re-read on every call, so a rotation is seen at once). */
  readonly jwks: () => JSONWebKeySet | Promise<JSONWebKeySet>;
  /** ms since the epoch. */
  readonly clock?: () => number;
  /** Leeway for `exp`, `nbf` and `iat`, in seconds (default 0). */
  readonly clockToleranceSeconds?: number;
  /** The longest `exp - iat` accepted. */
  readonly maxLifetimeSeconds: number;
}

/** The registered claims a signer sets. */
const REGISTERED = new Set(["iss", "aud", "sub", "iat", "exp"]);

/** Verifies tokens for exactly one audience. */
export class TokenValidator {
  readonly #o: TokenValidatorOptions;

  constructor(options: TokenValidatorOptions) {
    if (options.audience === "") throw new RangeError("a validator needs its audience");
    this.#o = options;
  }

  /** The audience this validator accepts. */
  get audience(): string {
    return this.#o.audience;
  }

  /** Verifies `token`, returning its claims or the problem. Never throws. */
  async verify(token: string | undefined | null): Promise<Verified<JWTPayload>> {
    const head = precheck(token);
    if (typeof head === "string") return { ok: false, problem: head };
    let jwks: JSONWebKeySet;
    try {
      jwks = await this.#o.jwks();
    } catch {
      return { ok: false, problem: "keys_unavailable" };
    }
    if (!jwks.keys.some((k) => k.kid === head.kid)) return { ok: false, problem: "unknown_kid" };
    const now = (this.#o.clock ?? Date.now)();
    const tolerance = this.#o.clockToleranceSeconds ?? 0;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(head.token, createLocalJWKSet(jwks), {
        algorithms: [TOKEN_ALGORITHM],
        issuer: this.#o.issuer ?? DEFAULT_ISSUER,
        requiredClaims: ["exp", "iat", "sub"],
        currentDate: new Date(now),
        clockTolerance: tolerance,
      }));
    } catch (err) {
      return { ok: false, problem: joseProblem(err) };
    }
    const problem = this.#claimsProblem(payload, now / 1000 + tolerance);
    return problem === null ? { ok: true, claims: payload, expiresAt: new Date((payload.exp as number) * 1000) } : { ok: false, problem };
  }

  /** Exactly one audience (a string, or a list of one: a token for two audiences is for neither), and a bounded life. */
  #claimsProblem(payload: JWTPayload, latestIat: number): TokenProblem | null {
    const aud = payload.aud;
    const audiences = typeof aud === "string" ? [aud] : Array.isArray(aud) ? aud : [];
    if (audiences.length !== 1 || audiences[0] !== this.#o.audience) return "wrong_audience";
    const iat = payload.iat as number;
    if (iat > latestIat) return "issued_in_future";
    if ((payload.exp as number) - iat > this.#o.maxLifetimeSeconds) return "lifetime_too_long";
    if (typeof payload.sub !== "string" || payload.sub === "") return "missing_claim";
    return null;
  }
}

/** The checks before any key is looked at: present, not too large, a JWS header with ES256 and a key ID. */
function precheck(token: string | undefined | null): TokenProblem | { token: string; kid: string } {
  if (token === undefined || token === null || token === "") return "missing";
  if (typeof token !== "string" || token.length > MAX_TOKEN_BYTES) return "too_large";
  let header: { alg?: unknown; kid?: unknown };
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return "malformed";
  }
  if (header.alg !== TOKEN_ALGORITHM) return "wrong_alg";
  if (typeof header.kid !== "string" || header.kid === "") return "no_kid";
  return { token, kid: header.kid };
}

function joseProblem(err: unknown): TokenProblem {
  const code = (err as { code?: unknown }).code;
  const claim = (err as { claim?: unknown }).claim;
  switch (code) {
    case "ERR_JWT_EXPIRED": return "expired";
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED": return "bad_signature";
    case "ERR_JWKS_NO_MATCHING_KEY": return "unknown_kid";
    case "ERR_JOSE_ALG_NOT_ALLOWED": return "wrong_alg";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      if (claim === "iss") return "wrong_issuer";
      if (claim === "nbf") return "not_yet_valid";
      if (claim === "exp" || claim === "iat" || claim === "sub") return "missing_claim";
      return "malformed";
    default: return "malformed";
  }
}

// ---- PluginTokens ---------------------------------------------------------------------------------

/** A PluginToken lives 15 minutes and is never refreshed: the console mints a new one. */
export const PLUGIN_TOKEN_TTL_SECONDS = 900;

/**
 * A PluginToken's claims: FUN-17's (`sub`, `installation_id`, `cluster_id`, `plugin_name`,
 * `plugin_version`, `definition_hash`) plus `installation_name`. No scope: the plugin half lives
 * in the cluster, the user half is reviewed per request.
 */
export interface PluginTokenClaims {
  /** The user acting through the plugin. */
  readonly sub: string;
  readonly installation_id: string;
  readonly cluster_id: string;
  /** The plugin: its image repository. */
  readonly plugin_name: string;
  /** The version: its image digest. */
  readonly plugin_version: string;
  /** `sha256:` of the manifest the user's mint saw pinned. */
  readonly definition_hash: string;
  /** The installation's name: the Plugin's name. */
  readonly installation_name: string;
}

/** The claims a PluginToken carries beyond `sub` and the registered ones. */
export const PLUGIN_CLAIMS = ["installation_id", "cluster_id", "plugin_name", "plugin_version", "definition_hash", "installation_name"] as const;
const MAX_CLAIM = 512;

/** Signs a PluginToken: audience `openfief-plugin`, 15 minutes. */
export function signPluginToken(signer: TokenSigner, claims: PluginTokenClaims, ttlSeconds = PLUGIN_TOKEN_TTL_SECONDS): Promise<{ token: string; expiresAt: Date }> {
  const extra: Record<string, string> = {};
  for (const k of PLUGIN_CLAIMS) extra[k] = claims[k];
  return signer.sign(claims.sub, PLUGIN_AUDIENCE, ttlSeconds, extra);
}

/** A validator of PluginTokens: audience `openfief-plugin`, at most 15 minutes, exactly the claims above. */
export class PluginTokenValidator {
  readonly #v: TokenValidator;

  constructor(options: Omit<TokenValidatorOptions, "audience" | "maxLifetimeSeconds"> & { readonly maxLifetimeSeconds?: number }) {
    this.#v = new TokenValidator({ ...options, audience: PLUGIN_AUDIENCE, maxLifetimeSeconds: options.maxLifetimeSeconds ?? PLUGIN_TOKEN_TTL_SECONDS });
  }

  async verify(token: string | undefined | null): Promise<Verified<PluginTokenClaims>> {
    const r = await this.#v.verify(token);
    if (!r.ok) return r;
    const c = r.claims as Record<string, unknown>;
    for (const k of Object.keys(c)) if (!REGISTERED.has(k) && !(PLUGIN_CLAIMS as readonly string[]).includes(k)) return { ok: false, problem: "unexpected_claim" };
    for (const k of ["sub", ...PLUGIN_CLAIMS]) {
      const v = c[k];
      if (typeof v !== "string" || v === "" || v.length > MAX_CLAIM) return { ok: false, problem: "missing_claim" };
    }
    return { ok: true, claims: c as unknown as PluginTokenClaims, expiresAt: r.expiresAt };
  }
}

// ---- user sessions --------------------------------------------------------------------------------

/** A user, as a verified session token names them. */
export interface UserIdentity {
  /** The user's stable ID (the token's `sub`). */
  readonly sub: string;
}

/** A validator of the console's session tokens: audience `openfief-user`. */
export class UserTokenValidator {
  readonly #v: TokenValidator;

  /** `maxLifetimeSeconds` is the longest session the console issues. */
  constructor(options: Omit<TokenValidatorOptions, "audience">) {
    this.#v = new TokenValidator({ ...options, audience: USER_AUDIENCE });
  }

  async verify(token: string | undefined | null): Promise<Verified<UserIdentity>> {
    const r = await this.#v.verify(token);
    if (!r.ok) return r;
    const sub = r.claims.sub as string;
    if (sub.length > MAX_CLAIM) return { ok: false, problem: "missing_claim" };
    return { ok: true, claims: { sub }, expiresAt: r.expiresAt };
  }
}

/** Signs a session token for `sub` (the console's sessions use this, with the same ring). */
export function signUserToken(signer: TokenSigner, sub: string, ttlSeconds: number): Promise<{ token: string; expiresAt: Date }> {
  return signer.sign(sub, USER_AUDIENCE, ttlSeconds);
}

/** The bearer token of an `Authorization` header, or undefined. Case-insensitive scheme, one space. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== "string") return undefined;
  const m = /^bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
  return m === null ? undefined : m[1];
}
