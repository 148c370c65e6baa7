/**
 * The owner's HTTP face of `openfief up`: one `node:http` (or, with a certificate, `node:https`)
 * server for the JSON API, the console, the assets and the operator's routes. Every request is
 * bounded — the target's length, the headers (Node's limits and timeouts), the query (declared
 * parameters only, each value capped), the body (per route), and a deadline — and answered with
 * the security headers. It answers only at its origins (docs/adr/0095): a GET at another loopback
 * name of its listener is redirected to its canonical origin, anything else there refused.
 * Listening beyond loopback requires TLS. `close()` ends the event streams, stops taking
 * connections and ends the open ones.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { isIP } from "node:net";
import { AppError, toAppError } from "../app/index.js";
import type { Face, FaceContext, UserSession } from "../app/index.js";
import { createListener, listenerOptions, NO_BODY, refuseBody, requestLogger, withLimits } from "../http/index.js";
import type { Logger } from "pino";
import { apiRoutes } from "./api.js";
import { authenticate, checkOrigin, isWrite, presented, sessionCookie } from "./auth.js";
import { assetRoutes } from "./console/assets.js";
import { consolePageRoutes, errorPage } from "./console/pages.js";
import { secureHeaders, sendError, sendHtml } from "./http.js";
import { opsRoutes } from "./ops.js";
import { allowed, matchPath, MAX_URL, Query } from "./routes.js";
import type { RequestContext, Route, ServerSettings } from "./routes.js";
import { EventStreams, STREAM_LIMITS } from "./sse.js";
import { tlogRoutes } from "./tlog-routes.js";
import type { StreamLimits } from "./sse.js";

/** How the server listens and what it allows. */
export interface ServerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** PEM text of the certificate (chain) and its key; required beyond loopback. */
  readonly tls?: { readonly cert: string; readonly key: string };
  /** Origins writes may also come from (a public name in front of a TLS listener). */
  readonly origins?: readonly string[];
  /** The longest a request may take (ms); default 15 s. */
  readonly deadlineMs?: number;
  readonly streams?: StreamLimits;
}

const DEFAULT_DEADLINE_MS = 15_000;

/** Whether an address only this machine can reach. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

/** Refuses (`usage`) a listener beyond loopback without TLS. */
export function checkListen(o: Pick<ServerOptions, "host" | "tls">): void {
  if (!isLoopback(o.host) && o.tls === undefined) {
    throw new AppError("usage", `listening on ${o.host} reaches beyond this machine: give --tls-cert and --tls-key (or listen on 127.0.0.1)`, "listen");
  }
}

function hostPort(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Where the console answers (docs/adr/0095): its canonical origin (the configured console origin,
 * else its own address), its own address, and the configured `--origin`s. The other loopback names
 * of a loopback listener are not among them: cookies are not port-scoped, so a console opened as
 * `localhost:4780` would share its cookie with views on `localhost:4781`. A GET or HEAD there is
 * redirected to the canonical origin, anything else refused.
 */
function originsOf(o: ServerOptions, port: number, consoleOrigin: string | undefined): { canonical: string; base: string; answered: string[]; aliases: Set<string> } {
  const scheme = o.tls === undefined ? "http" : "https";
  const base = `${scheme}://${hostPort(isLoopback(o.host) && o.host !== "::1" ? "127.0.0.1" : o.host, port)}`;
  const canonical = consoleOrigin ?? base;
  const answered = [...new Set([canonical, base, ...(o.origins ?? [])])];
  const hosts = new Set(answered.map((u) => new URL(u).host.toLowerCase()));
  const loopbackNames = isLoopback(o.host) ? ["127.0.0.1", "localhost", "::1"] : [];
  const aliases = new Set(loopbackNames.map((n) => hostPort(n, port).toLowerCase()).filter((h) => !hosts.has(h)));
  return { canonical, base, answered, aliases };
}

/** A route for a method and path; `HEAD` is answered as `GET`. */
function findRoute(routes: readonly Route[], method: string, path: string): { route: Route; params: Record<string, string> } | { route: null; pathKnown: boolean } {
  const m = method === "HEAD" ? "GET" : method;
  let pathKnown = false;
  for (const route of routes) {
    const params = matchPath(route.path, path);
    if (params === null) continue;
    if (route.method === m) return { route, params };
    pathKnown = true;
  }
  return { route: null, pathKnown };
}

class HttpFace implements Face {
  readonly #server: Server;
  readonly #streams: EventStreams;
  #closed: Promise<void> | null = null;

  readonly url: string;
  readonly origin: string;
  readonly origins: readonly string[];
  readonly tls: boolean;

  constructor(at: Pick<Face, "url" | "origin" | "origins" | "tls">, server: Server, streams: EventStreams) {
    ({ url: this.url, origin: this.origin, origins: this.origins, tls: this.tls } = at);
    this.#server = server;
    this.#streams = streams;
  }

  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      this.#streams.closeAll();
      this.#server.close(() => resolve());
      this.#server.closeIdleConnections();
      // Requests under way had their deadline; whatever is left after it is cut.
      setTimeout(() => this.#server.closeAllConnections(), 2000).unref();
    });
    return this.#closed;
  }
}

/** The handler of every request. */
class Dispatcher {
  readonly routes: readonly Route[];

  constructor(
    private readonly app: FaceContext,
    private readonly settings: ServerSettings,
    private readonly base: string,
    private readonly at: { readonly canonical: string; readonly hosts: ReadonlySet<string>; readonly aliases: ReadonlySet<string> },
    streams: EventStreams,
  ) {
    this.routes = routeTable(streams);
  }

  /**
   * The request's URL, once its length and Host are checked; null when the request was redirected
   * to the canonical origin (a GET or HEAD at another loopback name of this listener).
   */
  #url(req: IncomingMessage, res: ServerResponse, target: string): URL | null {
    if (target.length > MAX_URL) throw new AppError("too_large", `the request target is over ${MAX_URL} characters`);
    const host = (req.headers.host ?? "").toLowerCase();
    if (this.at.hosts.has(host)) return new URL(target, this.base);
    if (this.at.aliases.has(host)) {
      if (req.method === "GET" || req.method === "HEAD") {
        const url = new URL(target, this.base);
        // Only the path and query travel: the target cannot name another host.
        res.writeHead(307, { Location: `${this.at.canonical}${url.pathname}${url.search}`, "Cache-Control": "no-store", "Content-Length": 0 });
        res.end();
        return null;
      }
      throw new AppError("usage", `the console answers only at ${this.at.canonical}: send this request there`, "Host");
    }
    // A name this server was not told it has (DNS rebinding) is refused before anything is read.
    throw new AppError("usage", `unknown Host: open the console at ${this.at.canonical}`, "Host");
  }

  /**
   * The request's URL for the route table, or null when it is answered already: redirected to the
   * canonical origin, the core API for plugins when it runs, or the MintPluginToken RPC (Connect)
   * when views run, whose use case reads the session and checks the Origin itself, as for the JSON route.
   */
  #unanswered(req: IncomingMessage, res: ServerResponse, target: string): URL | null {
    const url = this.#url(req, res, target);
    if (url === null) return null;
    // The core API for plugins (docs/adr/0196): their token, not a session, says who calls.
    const core = this.app.core;
    if (core !== undefined && core !== null && url.pathname.startsWith(core.prefix)) {
      core.handle(req, res);
      return null;
    }
    const views = this.app.views;
    if (views === null || !url.pathname.startsWith(views.connectPrefix)) return url;
    views.connect(req, res);
    return null;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    secureHeaders(res, this.app.views?.pluginProxyOrigin ?? null);
    const target = req.url ?? "/";
    const isApi = target.startsWith("/api/");
    let route: Route | null = null;
    let session: UserSession | null = null;
    const log = requestLogger(this.app.logger, req, res);
    try {
      const url = this.#unanswered(req, res, target);
      if (url === null) return;
      const found = findRoute(this.routes, req.method ?? "GET", url.pathname);
      if (found.route === null) {
        throw found.pathKnown ? new AppError("usage", `${req.method ?? "?"} is not a method of ${url.pathname}`) : new AppError("not_found", `nothing at ${url.pathname}`);
      }
      route = found.route;
      const query = new Query(url.searchParams, route.query);
      const extraHeaders: Record<string, string | string[]> = {};
      session = await this.#session(req, route, extraHeaders);
      checkBody(req, route);
      const ctx: RequestContext = { req, res, url, params: found.params, query, session, app: this.app, settings: this.settings, extraHeaders, signal: new AbortController().signal, log };
      for (const [k, v] of Object.entries(extraHeaders)) res.setHeader(k, v);
      await (route.stream === true ? route.handle(ctx) : this.#withDeadline(ctx, route));
    } catch (err) {
      // A body left unread (refused by its size, or before a deadline) is not read on: the connection ends.
      if (!req.complete) res.setHeader("Connection", "close");
      this.#fail(res, err, route === null ? (isApi ? "api" : "page") : route.kind, session, log);
    }
  }

  async #session(req: IncomingMessage, route: Route, extra: Record<string, string | string[]>): Promise<UserSession | null> {
    if (route.access === "public") return null;
    const p = presented(req, this.settings.tls);
    const session = this.app.cluster === undefined ? await authenticate(this.app.sessions, p) : await this.#clusterSession(p, extra);
    if (!allowed(route.access, session.role)) throw new AppError("forbidden", `a ${session.role} may not do this: only an owner may change what runs`);
    if (isWrite(req.method)) checkOrigin(req, this.settings.origins, p.via);
    if (p.via === "cookie") {
      const fresh = await this.app.sessions.refresh(session);
      if (fresh !== null) extra["Set-Cookie"] = sessionCookie(fresh, this.settings.tls, this.app.clock());
    }
    return session;
  }

  /**
   * In a cluster: a Bearer token is the cluster's (a TokenReview and the roles' reviews, each
   * request); a cookie is a session this console minted at sign-in, whose role is asked of the
   * cluster again (a role taken away ends it, a changed one is put in a fresh cookie).
   */
  async #clusterSession(p: ReturnType<typeof presented>, extra: Record<string, string | string[]>): Promise<UserSession> {
    const cluster = this.app.cluster;
    if (cluster === undefined) throw new AppError("internal", "not a cluster console");
    if (p.via === "bearer") {
      const u = await cluster.authenticate(p.token);
      const now = this.app.clock();
      return { user: u.user, role: u.role, kube: u.kube, issuedAt: now, expiresAt: now, signedInAt: now };
    }
    const session = await authenticate(this.app.sessions, p);
    if (session.kube === undefined) throw new AppError("unauthorized", "sign in with a token the cluster accepts");
    const role = await cluster.roleOf(session.user, session.kube);
    if (role === null) throw new AppError("forbidden", `the cluster no longer lets ${session.user} look at plugins: sign in again`);
    if (role === session.role) return session;
    const fresh = await this.app.sessions.mintKubeSession(session.user, session.kube, role, undefined, session.signedInAt);
    extra["Set-Cookie"] = sessionCookie(fresh, this.settings.tls, this.app.clock());
    return { ...session, role };
  }

  async #withDeadline(ctx: RequestContext, route: Route): Promise<void> {
    const controller = new AbortController();
    const onClose = () => controller.abort();
    ctx.req.once("close", onClose);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new AppError("unavailable", `the request took longer than ${this.settings.deadlineMs} ms: try again`));
      }, this.settings.deadlineMs);
    });
    try {
      await Promise.race([Promise.resolve(route.handle({ ...ctx, signal: controller.signal })), deadline]);
    } finally {
      clearTimeout(timer);
      ctx.req.off("close", onClose);
    }
  }

  #fail(res: ServerResponse, err: unknown, kind: Route["kind"], session: UserSession | null, log: Logger): void {
    const e = toAppError(err);
    if (e.code === "internal") log.error({ err: e.message }, "request failed");
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (kind === "page") sendHtml(res, e.status, errorPage(e, session, this.app.cluster !== undefined));
    else sendError(res, e);
  }
}

/** Refuses a body the route does not take (its media type, its declared size) before a byte of it is read. */
function checkBody(req: IncomingMessage, route: Route): void {
  const refused = refuseBody(req, route.body ?? NO_BODY);
  if (refused !== null) throw new AppError(refused.reason, refused.message, refused.status === 415 ? "Content-Type" : undefined);
}

/** Starts the server over a control plane's context. */
export async function startServer(app: FaceContext, o: ServerOptions): Promise<Face> {
  checkListen(o);
  // The limits every listener has (src/http).
  const server: Server = o.tls === undefined ? createListener() : withLimits(createHttpsServer({ ...listenerOptions(), cert: o.tls.cert, key: o.tls.key }));
  await new Promise<void>((resolve, reject) => {
    const refused = (err: NodeJS.ErrnoException) => {
      const where = hostPort(o.host, o.port);
      reject(err.code === "EADDRINUSE" ? new AppError("conflict", `${where} is in use by another program: pass another --listen (or --no-server)`, "listen")
        : new AppError("bad_setting", `cannot listen on ${where}: ${err.code ?? err.message}`, "listen"));
    };
    server.once("error", refused);
    server.listen(o.port, o.host, () => {
      server.off("error", refused);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : o.port;
  const { canonical, base, answered, aliases } = originsOf(o, port, app.consoleOrigin);
  const hosts = new Set(answered.map((u) => new URL(u).host.toLowerCase()));
  const settings: ServerSettings = { origins: answered, tls: o.tls !== undefined, deadlineMs: o.deadlineMs ?? DEFAULT_DEADLINE_MS };
  const streams = new EventStreams(o.streams ?? STREAM_LIMITS);
  const dispatcher = new Dispatcher(app, settings, base, { canonical, hosts, aliases }, streams);
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    void dispatcher.handle(req, res);
  });
  return new HttpFace({ url: base, origin: canonical, origins: answered, tls: settings.tls }, server, streams);
}

/** Every route the server answers (the OpenAPI check reads it). */
export function routeTable(streams: EventStreams = new EventStreams()): readonly Route[] {
  return [...apiRoutes(streams), ...opsRoutes(), ...consolePageRoutes(), ...assetRoutes(), ...tlogRoutes()];
}
