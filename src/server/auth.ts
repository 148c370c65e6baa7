/**
 * Who is calling, and whether the call may write. A session arrives as a cookie (the console) or
 * as `Authorization: Bearer` (scripts; `openfief login` prints one); either is the same ES256
 * session token. A console session is refreshed (a new cookie) while in use. Every write checks
 * `Origin` against the server's own origins: a write carried by the cookie must send a matching
 * one; a Bearer write may omit it (a browser cannot attach that header cross-site without a CORS
 * preflight, which this server never grants) but may not send a foreign one.
 */
import type { IncomingMessage } from "node:http";
import { AppError, sessionProblemText } from "../app/index.js";
import type { Minted, SessionCheck, Sessions } from "../app/index.js";

/** The cookie's name: `__Host-` bound to this origin when served over TLS. */
export function cookieName(tls: boolean): string {
  return tls ? "__Host-openfief_session" : "openfief_session";
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

/** One cookie's value from a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined || header.length > 8192) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** How the caller presented a session. */
export type Presented = { readonly via: "bearer" | "cookie"; readonly token: string } | { readonly via: "none" };

/** The session token a request carries: a Bearer header first, then the cookie. */
export function presented(req: IncomingMessage, tls: boolean): Presented {
  const auth = req.headers.authorization;
  if (auth !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m === null) throw new AppError("unauthorized", "Authorization must be `Bearer <token>` (openfief login prints one)");
    return { via: "bearer", token: m[1] ?? "" };
  }
  const token = readCookie(req.headers.cookie, cookieName(tls));
  return token === undefined || token === "" ? { via: "none" } : { via: "cookie", token };
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

/**
 * Refuses (`forbidden`) a write whose `Origin` is not the server's own (CSRF). Under
 * `Referrer-Policy: no-referrer` a browser sends `Origin: null` with a form of the page's own
 * origin (Fetch, "serializing a request origin"); such a write passes only when the browser also
 * says it is same-origin in `Sec-Fetch-Site`, a header no page can set.
 */
export function checkOrigin(req: IncomingMessage, origins: readonly string[], via: Presented["via"]): void {
  const origin = req.headers.origin;
  if (origin === undefined) {
    if (via === "bearer") return;
    throw new AppError("forbidden", "a write from the console must send its Origin (refused as a possible cross-site request)", "Origin");
  }
  if (origin === "null" && req.headers["sec-fetch-site"] === "same-origin") return;
  if (!origins.includes(origin)) throw new AppError("forbidden", "the request comes from another site (Origin does not match): refused as a cross-site request", "Origin");
}
