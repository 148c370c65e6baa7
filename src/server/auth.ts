/**
 * Who is calling, and whether the call may write. A session arrives as a cookie (the console) or
 * as `Authorization: Bearer` (scripts; `openfief login` prints one); either is the same ES256
 * session token. A console session is refreshed (a new cookie) while in use. Every write checks
 * `Origin` against the server's own origins: a write carried by the cookie must send a matching
 * one; a Bearer write may omit it (a browser cannot attach that header cross-site without a CORS
 * preflight, which this server never grants) but may not send a foreign one.
 */
import type { IncomingMessage } from "node:http";
import { AppError, callerHeaders, cookieName, presentedBy, sessionProblemText, writeOriginProblem } from "../app/index.js";
import type { CallerHeaders, Minted, Presented, SessionCheck, Sessions } from "../app/index.js";

/** The caller's headers of a Node request. */
export function callerOf(req: IncomingMessage): CallerHeaders {
  return callerHeaders((name) => req.headers[name]);
}

/** The session's cookie: HttpOnly, SameSite=Strict, Path=/, Secure with TLS, living as long as the token. */
export function sessionCookie(m: Minted, tls: boolean, now: Date): string {
  const maxAge = Math.max(0, Math.floor((m.expiresAt.getTime() - now.getTime()) / 1000));
  return `${cookieName(tls)}=${m.token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${tls ? "; Secure" : ""}`;
}

/** A cookie that ends the session in this browser. */
export function clearedCookie(tls: boolean): string {
  return `${cookieName(tls)}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${tls ? "; Secure" : ""}`;
}

/** The session token a request carries: a Bearer header first, then the cookie. */
export function presented(req: IncomingMessage, tls: boolean): Presented {
  return presentedBy(callerOf(req), tls);
}

/** The request's session, or `unauthorized` saying why there is none. */
export async function authenticate(sessions: Sessions, p: Presented): Promise<Extract<SessionCheck, { ok: true }>["session"]> {
  if (p.via === "none") throw new AppError("unauthorized", "sign in first: open the link `openfief up` printed, or send a token from `openfief login`");
  const check = await sessions.verifyUserSession(p.token);
  if (!check.ok) throw new AppError("unauthorized", sessionProblemText(check.problem));
  return check.session;
}

/** Methods that change something. */
export function isWrite(method: string | undefined): boolean {
  return method !== "GET" && method !== "HEAD" && method !== "OPTIONS";
}

/** Refuses (`forbidden`) a write whose `Origin` is not the server's own (CSRF; the rule is the application's, which the mint applies too). */
export function checkOrigin(req: IncomingMessage, origins: readonly string[], via: Presented["via"]): void {
  const problem = writeOriginProblem(callerOf(req), origins, via);
  if (problem !== null) throw new AppError("forbidden", problem, "Origin");
}
