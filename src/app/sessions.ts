/**
 * The console's users: sign-in links and sessions. A session is an ES256 JWT for exactly one
 * audience, `openfief-user`, naming the user and a role (an `owner` may change things, a `viewer`
 * only reads). A sign-in link carries a one-time code: a JWT for the audience `openfief-sign-in`,
 * valid for ten minutes, redeemed once, and only by the control plane that was running when it
 * was made (a link used before a restart cannot be used again after it). Both are signed with the
 * data folder's session key, which is private to its owner (mode 0600): whoever can read it can
 * sign in as anyone. No token is ever logged, recorded or shown on a page.
 */
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { calculateJwkThumbprint, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT } from "jose";
import type { CryptoKey, JWK, JWTPayload } from "jose";
import { checkPrivateFile, lockHolder, SESSION_KEY_FILE } from "./data-dir.js";
import { AppError } from "./errors.js";

/** What a console user may do: an owner reads and writes, a viewer only reads. */
export type Role = "owner" | "viewer";

/** Every role. */
export const ROLES: readonly Role[] = ["owner", "viewer"];

/** The audience of a session token. */
export const USER_AUDIENCE = "openfief-user";
/** The audience of a sign-in link's code. */
export const SIGN_IN_AUDIENCE = "openfief-sign-in";
/** The issuer of both. */
export const SESSION_ISSUER = "openfief";
/** A console session's lifetime; it is refreshed while in use. */
export const SESSION_TTL_SECONDS = 15 * 60;
/** How long after signing in a console session may still be refreshed. */
export const MAX_SESSION_AGE_SECONDS = 12 * 60 * 60;
/** A sign-in link's lifetime. */
export const SIGN_IN_TTL_SECONDS = 10 * 60;
/** The longest a token `openfief login` prints may live. */
export const MAX_TOKEN_TTL_SECONDS = 24 * 60 * 60;
/** Tokens longer than this are refused before anything parses them. */
export const MAX_TOKEN_BYTES = 4096;

/** The file in a data folder holding the session signing key. */
export { SESSION_KEY_FILE };

const USER = /^[A-Za-z0-9._@-]{1,64}$/;
/** A Kubernetes user name as a session may hold it: printable ASCII without spaces (`system:serviceaccount:ns:name`, an OIDC `issuer#subject`). */
const KUBE_USER = /^[\x21-\x7e]{1,180}$/;
/** A Kubernetes group or uid as a session may hold it. */
const KUBE_NAME = /^[\x21-\x7e]{1,128}$/;
/** The most groups a cluster session carries (they travel in the cookie and in every impersonated request). */
export const MAX_KUBE_GROUPS = 32;

/** Who the cluster's API server says a user is (a TokenReview's answer): what impersonation repeats. */
export interface KubeIdentity {
  readonly groups: readonly string[];
  readonly uid?: string;
}

/** A verified session. */
export interface UserSession {
  readonly user: string;
  readonly role: Role;
  readonly issuedAt: Date;
  readonly expiresAt: Date;
  /** When the user signed in (a refreshed session keeps it). */
  readonly signedInAt: Date;
  /** A session of the console in a cluster: the user's groups and uid as the TokenReview gave them (`user` is the Kubernetes user name). */
  readonly kube?: KubeIdentity;
}

/** Why a token was refused. Never holds the token. */
export type SessionProblem =
  | "missing" | "too_large" | "malformed" | "wrong_alg" | "bad_signature" | "wrong_issuer" | "wrong_audience"
  | "expired" | "not_yet_valid" | "too_long_lived" | "bad_claims" | "already_used" | "from_before_start";

/** A token's check: the session, or why not. */
export type SessionCheck = { readonly ok: true; readonly session: UserSession } | { readonly ok: false; readonly problem: SessionProblem };

/**
 * The port other rooms take to know who a user's session names (the plugin-token mint of views,
 * issue 15): a valid `openfief-user` token and nothing else passes.
 */
export interface UserSessionVerifier {
  verifyUserSession(token: string | undefined): Promise<SessionCheck>;
}

/** A minted token and when it expires. */
export interface Minted {
  readonly token: string;
  readonly expiresAt: Date;
}

/** Refuses (`usage`) a user name an actor or a claim could not hold. */
export function checkUserName(user: string): string {
  if (!USER.test(user)) throw new AppError("usage", "a user name is 1 to 64 letters, digits, '.', '_', '@' or '-'", "user");
  return user;
}

/** Refuses (`unauthorized`) a Kubernetes identity a session cannot carry: too long a name, spaces, too many groups. */
export function checkKubeIdentity(user: string, kube: KubeIdentity): void {
  if (!KUBE_USER.test(user)) throw new AppError("unauthorized", "the cluster names this user with characters or a length the console does not accept (printable ASCII without spaces, at most 180)", "user");
  if (kube.groups.length > MAX_KUBE_GROUPS) throw new AppError("unauthorized", `the cluster gives this user more than ${MAX_KUBE_GROUPS} groups; the console cannot act for them`, "groups");
  if (!kube.groups.every((g) => KUBE_NAME.test(g)) || (kube.uid !== undefined && !KUBE_NAME.test(kube.uid))) throw new AppError("unauthorized", "the cluster names a group or uid of this user with characters the console does not accept", "groups");
}

function kubeClaim(value: unknown): KubeIdentity | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const { groups, uid } = value as { groups?: unknown; uid?: unknown };
  if (!Array.isArray(groups) || groups.length > MAX_KUBE_GROUPS || !groups.every((g): g is string => typeof g === "string" && KUBE_NAME.test(g))) return null;
  if (uid !== undefined && (typeof uid !== "string" || !KUBE_NAME.test(uid))) return null;
  return uid === undefined ? { groups } : { groups, uid };
}

/** Refuses (`usage`) anything but a role. */
export function parseRole(text: string): Role {
  const r = ROLES.find((x) => x === text);
  if (r === undefined) throw new AppError("usage", `role must be ${ROLES.join(" or ")}`, "role");
  return r;
}

interface SessionKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
}

function checkKeyFile(path: string): void {
  checkPrivateFile(path, "the session signing key");
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new AppError("bad_setting", `the session signing key ${path} is readable by others (mode ${mode.toString(8).padStart(4, "0")}): run chmod 600 ${path}`);
  }
}

async function readKey(path: string): Promise<SessionKey> {
  checkKeyFile(path);
  try {
    const text = readFileSync(path, "utf8");
    if (text.length > 4096) throw new Error("too large");
    const jwk = JSON.parse(text) as JWK;
    if (jwk.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.d !== "string") throw new Error("not a P-256 private key");
    const { d: _d, ...pub } = jwk;
    return { kid: await calculateJwkThumbprint(pub), privateKey: (await importJWK(jwk, "ES256")) as CryptoKey, publicKey: (await importJWK(pub, "ES256")) as CryptoKey };
  } catch (err) {
    throw new AppError("bad_setting", `${path} is not a usable session key (${err instanceof Error ? err.message.split("\n")[0] : "unreadable"}): remove it to make a new one (every session ends)`);
  }
}

/** The data folder's session key, made (mode 0600) when missing. */
async function loadOrCreateKey(dataDir: string): Promise<SessionKey> {
  const path = join(dataDir, SESSION_KEY_FILE);
  if (!existsSync(path)) {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(privateKey);
    try {
      writeFileSync(path, `${JSON.stringify({ ...jwk, alg: "ES256" })}\n`, { mode: 0o600, flag: "wx" });
    } catch (err) {
      // Another process made it first: use theirs.
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return readKey(path);
}

function problemOf(err: unknown): SessionProblem {
  const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
  switch (code) {
    case "ERR_JWT_EXPIRED": return "expired";
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED": return "bad_signature";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED": {
      const claim = (err as { claim?: string }).claim;
      if (claim === "iss") return "wrong_issuer";
      if (claim === "nbf" || claim === "iat") return "not_yet_valid";
      return "bad_claims";
    }
    case "ERR_JOSE_ALG_NOT_ALLOWED": return "wrong_alg";
    default: return "malformed";
  }
}

/** Exactly one audience, and it is `audience`: a token for two audiences is for neither. */
function oneAudience(payload: JWTPayload, audience: string): boolean {
  const aud = payload.aud;
  if (typeof aud === "string") return aud === audience;
  return Array.isArray(aud) && aud.length === 1 && aud[0] === audience;
}

/** Issues and checks sign-in links and sessions with a data folder's key. */
export class Sessions implements UserSessionVerifier {
  readonly #key: SessionKey;
  readonly #clock: () => Date;
  /** Sign-in codes redeemed, until they expire. */
  readonly #used = new Map<string, number>();
  /** Seconds since the epoch when this process took the key: older sign-in codes are refused. */
  readonly #startedAt: number;

  private constructor(key: SessionKey, clock: () => Date) {
    this.#key = key;
    this.#clock = clock;
    this.#startedAt = Math.floor(clock().getTime() / 1000);
  }

  /** The sessions of a data folder (its key made when missing, refused when others may read or write it). */
  static async open(dataDir: string, clock: () => Date = () => new Date()): Promise<Sessions> {
    return new Sessions(await loadOrCreateKey(dataDir), clock);
  }

  #now(): number {
    return Math.floor(this.#clock().getTime() / 1000);
  }

  async #sign(audience: string, sub: string, claims: Record<string, string | number | KubeIdentity>, ttl: number): Promise<Minted> {
    const iat = this.#now();
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: this.#key.kid })
      .setIssuer(SESSION_ISSUER)
      .setAudience(audience)
      .setSubject(sub)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttl)
      .sign(this.#key.privateKey);
    return { token, expiresAt: new Date((iat + ttl) * 1000) };
  }

  async #verify(token: string | undefined, audience: string): Promise<{ ok: true; payload: JWTPayload } | { ok: false; problem: SessionProblem }> {
    if (token === undefined || token === "") return { ok: false, problem: "missing" };
    if (token.length > MAX_TOKEN_BYTES) return { ok: false, problem: "too_large" };
    try {
      const h = decodeProtectedHeader(token);
      if (h.alg !== "ES256") return { ok: false, problem: "wrong_alg" };
      if (h.kid !== this.#key.kid) return { ok: false, problem: "bad_signature" };
      const { payload } = await jwtVerify(token, this.#key.publicKey, { algorithms: ["ES256"], issuer: SESSION_ISSUER, currentDate: this.#clock(), requiredClaims: ["sub", "iat", "exp"] });
      if (!oneAudience(payload, audience)) return { ok: false, problem: "wrong_audience" };
      const iat = payload.iat ?? 0;
      if (iat > this.#now() + 5) return { ok: false, problem: "not_yet_valid" };
      if ((payload.exp ?? 0) - iat > MAX_TOKEN_TTL_SECONDS) return { ok: false, problem: "too_long_lived" };
      return { ok: true, payload };
    } catch (err) {
      return { ok: false, problem: problemOf(err) };
    }
  }

  /** A session token for `user` in `role`, living `ttlSeconds` (at most a day). */
  async mintSession(user: string, role: Role, ttlSeconds: number = SESSION_TTL_SECONDS, signedInAt?: Date): Promise<Minted> {
    checkUserName(user);
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TOKEN_TTL_SECONDS) {
      throw new AppError("usage", `a token lives 1 to ${MAX_TOKEN_TTL_SECONDS} seconds`, "ttl");
    }
    const at = Math.floor((signedInAt ?? this.#clock()).getTime() / 1000);
    return this.#sign(USER_AUDIENCE, user, { role, auth_time: at }, ttlSeconds);
  }

  /**
   * A console session in a cluster for a user the API server authenticated (`user` is the
   * Kubernetes user name), carrying the groups and uid approvals impersonate; refused
   * (`unauthorized`) when the identity cannot travel in a cookie.
   */
  async mintKubeSession(user: string, kube: KubeIdentity, role: Role, ttlSeconds: number = SESSION_TTL_SECONDS, signedInAt?: Date): Promise<Minted> {
    checkKubeIdentity(user, kube);
    const at = Math.floor((signedInAt ?? this.#clock()).getTime() / 1000);
    const claim: KubeIdentity = kube.uid === undefined ? { groups: [...kube.groups] } : { groups: [...kube.groups], uid: kube.uid };
    const minted = await this.#sign(USER_AUDIENCE, user, { role, auth_time: at, kube: claim }, ttlSeconds);
    if (minted.token.length > MAX_TOKEN_BYTES) throw new AppError("unauthorized", "this user's identity (name and groups) is too large for a console session", "groups");
    return minted;
  }

  /** Who a session token names, or why it names no one. */
  async verifyUserSession(token: string | undefined): Promise<SessionCheck> {
    const v = await this.#verify(token, USER_AUDIENCE);
    if (!v.ok) return v;
    const { sub, role, auth_time: authTime, iat, exp } = v.payload;
    const kube = v.payload["kube"] === undefined ? undefined : kubeClaim(v.payload["kube"]);
    if (kube === null || typeof sub !== "string" || !(kube === undefined ? USER : KUBE_USER).test(sub) || (role !== "owner" && role !== "viewer") || typeof authTime !== "number") return { ok: false, problem: "bad_claims" };
    const session: UserSession = { user: sub, role, issuedAt: new Date((iat ?? 0) * 1000), expiresAt: new Date((exp ?? 0) * 1000), signedInAt: new Date(authTime * 1000) };
    return { ok: true, session: kube === undefined ? session : { ...session, kube } };
  }

  /**
   * A fresh console session for one in use when less than half of its life is left, or null (not
   * yet due, or signed in longer ago than {@link MAX_SESSION_AGE_SECONDS}: the user signs in again).
   */
  async refresh(s: UserSession): Promise<Minted | null> {
    const now = this.#now();
    const left = s.expiresAt.getTime() / 1000 - now;
    const life = (s.expiresAt.getTime() - s.issuedAt.getTime()) / 1000;
    if (left > life / 2 || now - s.signedInAt.getTime() / 1000 > MAX_SESSION_AGE_SECONDS) return null;
    if (s.kube !== undefined) return this.mintKubeSession(s.user, s.kube, s.role, SESSION_TTL_SECONDS, s.signedInAt);
    return this.mintSession(s.user, s.role, SESSION_TTL_SECONDS, s.signedInAt);
  }

  /** A one-time sign-in code for `user` in `role` (the `code` of the console's `/signin` link). */
  async mintSignIn(user: string, role: Role): Promise<Minted> {
    checkUserName(user);
    return this.#sign(SIGN_IN_AUDIENCE, user, { role, jti: randomUUID() }, SIGN_IN_TTL_SECONDS);
  }

  /** Redeems a sign-in code once: a console session for its user, or why not. */
  async redeemSignIn(code: string | undefined): Promise<{ ok: true; minted: Minted; session: UserSession } | { ok: false; problem: SessionProblem }> {
    const v = await this.#verify(code, SIGN_IN_AUDIENCE);
    if (!v.ok) return v;
    const { sub, role, jti, iat, exp } = v.payload;
    if (typeof sub !== "string" || !USER.test(sub) || (role !== "owner" && role !== "viewer") || typeof jti !== "string") return { ok: false, problem: "bad_claims" };
    if ((iat ?? 0) < this.#startedAt) return { ok: false, problem: "from_before_start" };
    const now = this.#now();
    for (const [k, until] of this.#used) if (until < now) this.#used.delete(k);
    if (this.#used.has(jti)) return { ok: false, problem: "already_used" };
    this.#used.set(jti, exp ?? now);
    const minted = await this.mintSession(sub, role);
    const session = await this.verifyUserSession(minted.token);
    if (!session.ok) return session;
    return { ok: true, minted, session: session.session };
  }
}

/** A refusal's words for a person (never the token). */
export function sessionProblemText(p: SessionProblem): string {
  switch (p) {
    case "missing": return "sign in first";
    case "expired": return "the session or link has expired: sign in again";
    case "already_used": return "this sign-in link was used already: ask for a new one (openfief login --link)";
    case "from_before_start": return "this sign-in link is from before the control plane restarted: ask for a new one (openfief login --link)";
    case "wrong_audience": return "this token is not a console session";
    default: return "the session or link is not valid: sign in again";
  }
}

/** The user a link or token names when none is given: this machine's user, or `owner`. */
export function defaultUser(): string {
  let name = "";
  try {
    name = userInfo().username;
  } catch {
    // No user database entry (a container): fall back.
  }
  return USER.test(name) ? name : "owner";
}

/** The console's URL of the `up` serving a data folder; `not_found` when none does. */
export function runningConsole(dataDir: string): string {
  const line = (lockHolder(dataDir)?.serving ?? []).find((s) => s.startsWith("console "));
  if (line === undefined) throw new AppError("not_found", `no openfief up serves the console for ${dataDir}: start it (openfief up --data ${dataDir}), then ask again`);
  return line.slice("console ".length);
}

/** A one-time sign-in link to a console for `user` in `role`. */
export async function signInLink(sessions: Sessions, consoleUrl: string, user: string, role: Role): Promise<Minted & { readonly url: string }> {
  const m = await sessions.mintSignIn(user, role);
  return { ...m, url: `${consoleUrl}/signin?code=${encodeURIComponent(m.token)}` };
}
