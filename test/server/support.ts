/**
 * Talking to the server as a client does: real HTTP(S) on 127.0.0.1 through `node:http`, so a
 * test controls every header (Host, Origin, Cookie, Content-Length) and can send a body slowly or
 * without end. Every answer is recorded with the route it matched, so a test file can check at
 * the end that it reached every route and saw only statuses the route and the OpenAPI document name.
 */
import { request as httpRequest } from "node:http";
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import { pino } from "pino";
import type { FaceContext } from "../../src/app/index.js";
import type { ControlPlane } from "../../src/compose/index.js";
import { routeTable } from "../../src/server/index.js";
import type { Route } from "../../src/server/index.js";

/** An answer. */
export interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  json<T = Record<string, unknown>>(): T;
}

/** What a request sends. */
export interface Ask {
  readonly method?: string;
  readonly headers?: OutgoingHttpHeaders;
  readonly body?: string | Buffer;
  /** The CA to trust (HTTPS). */
  readonly ca?: string;
  /** A connection of its own, not one kept alive from an earlier request. */
  readonly fresh?: boolean;
}

/** Every (route, status) seen, by `METHOD path-pattern`. */
export const seen = new Map<string, Set<number>>();

const ROUTES = routeTable();

/** The route a request matches, as `METHOD /api/v1/plugins/{name}`, or null. */
export function routeOf(method: string, path: string): Route | null {
  const segs = path.split("?")[0]?.split("/") ?? [];
  return ROUTES.find((r) => {
    if (r.method !== (method === "HEAD" ? "GET" : method)) return false;
    const want = r.path.split("/");
    return want.length === segs.length && want.every((w, i) => (w.startsWith("{") ? (segs[i] ?? "") !== "" : w === segs[i]));
  }) ?? null;
}

/** Sends one request to `base` + `path`. */
export function call(base: string, path: string, ask: Ask = {}): Promise<Answer> {
  const url = new URL(path, base);
  const method = ask.method ?? "GET";
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method, headers: ask.headers ?? {}, ...(ask.ca === undefined ? {} : { ca: ask.ca }), ...(ask.fresh === true ? { agent: false } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const status = res.statusCode ?? 0;
        const route = routeOf(method, url.pathname);
        if (route !== null) {
          const key = `${route.method} ${route.path}`;
          seen.set(key, (seen.get(key) ?? new Set()).add(status));
        }
        resolve({ status, headers: res.headers, text, json: <T>() => JSON.parse(text) as T });
      });
    });
    req.on("error", reject);
    req.end(ask.body);
  });
}

/** A Bearer header. */
export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** The context `startControlPlane` hands a face, for starting a second server with other options. */
export function faceContext(cp: ControlPlane): FaceContext {
  return {
    dataDir: cp.dataDir, store: cp.runtime.store, sessions: cp.sessions, views: cp.views, metrics: cp.metrics, logger: pino({ level: "silent" }),
    clock: () => new Date(), readiness: () => cp.readiness(),
  };
}

/** The cookie a sign-in set, as a Cookie header value. */
export function cookieOf(a: Answer): string {
  const set = a.headers["set-cookie"]?.[0] ?? "";
  return set.split(";")[0] ?? "";
}
