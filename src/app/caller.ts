/**
 * Who calls and from where, read the same way whichever face a request came through (the JSON
 * API, the console's pages, the Connect RPC): the session it presents — `Authorization: Bearer`
 * first, then the console's cookie — and whether its `Origin` lets it write (docs/adr/0052). One
 * rule for every face, so that a route mounted on one cannot skip a check another makes.
 */
import type { CallerGate, MintCaller } from "../views/index.js";
import { AppError } from "./errors.js";

/** The request headers these rules read; a face fills it from its own request type. */
export type CallerHeaders = MintCaller;

/** The caller's headers from a header getter (Node's `IncomingMessage.headers`, Fetch's `Headers`). */
export function callerHeaders(get: (name: string) => string | string[] | null | undefined): CallerHeaders {
  const one = (name: string): string | undefined => {
    const v = get(name);
    return typeof v === "string" ? v : undefined;
  };
  return { authorization: one("authorization"), cookie: one("cookie"), origin: one("origin"), secFetchSite: one("sec-fetch-site") };
}

/** The session cookie's name: `__Host-` bound to the origin when served over TLS. */
export function cookieName(tls: boolean): string {
  return tls ? "__Host-openfief_session" : "openfief_session";
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

/** The session a request presents: a Bearer header first, then the cookie. Refuses (`unauthorized`) an `Authorization` that is not Bearer. */
export function presentedBy(h: CallerHeaders, tls: boolean): Presented {
  if (h.authorization !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h.authorization);
    if (m === null) throw new AppError("unauthorized", "Authorization must be `Bearer <token>` (openfief login prints one)");
    return { via: "bearer", token: m[1] ?? "" };
  }
  const token = readCookie(h.cookie, cookieName(tls));
  return token === undefined || token === "" ? { via: "none" } : { via: "cookie", token };
}

/**
 * Why a write may not come from where it says it comes from (CSRF), or null when it may: a write
 * carried by the cookie must send one of `origins`; under `Referrer-Policy: no-referrer` a browser
 * sends `Origin: null` with a form of the page's own origin (Fetch, "serializing a request
 * origin"), which passes only with `Sec-Fetch-Site: same-origin`, a header no page can set. A
 * Bearer write may omit `Origin` (a script) but may not send a foreign one.
 */
export function writeOriginProblem(h: CallerHeaders, origins: readonly string[], via: Presented["via"]): string | null {
  if (h.origin === undefined) {
    return via === "bearer" ? null : "a write from the console must send its Origin (refused as a possible cross-site request)";
  }
  if (h.origin === "null" && h.secFetchSite === "same-origin") return null;
  return origins.includes(h.origin) ? null : "the request comes from another site (Origin does not match): refused as a cross-site request";
}

/** Where the console answers: its origins (writes must come from one) and whether over TLS (the cookie's name). */
export interface ConsoleOrigins {
  readonly origins: readonly string[];
  readonly tls: boolean;
}

/**
 * The console's rule as the mint applies it: the session a request presents and whether it may
 * write from where it comes. Before the console serves (`at` gives null) every caller is refused.
 */
export function consoleCallerGate(at: () => ConsoleOrigins | null): CallerGate {
  return {
    check(h) {
      const console = at();
      if (console === null) return { token: undefined, crossSite: "the console does not serve yet" };
      let p: Presented;
      try {
        p = presentedBy(h, console.tls);
      } catch {
        // Not Bearer: handed on as it came, so the session check refuses it as malformed.
        return { token: h.authorization?.slice(0, 64) ?? "", crossSite: null };
      }
      return { token: p.via === "none" ? undefined : p.token, crossSite: writeOriginProblem(h, console.origins, p.via) };
    },
  };
}
