/**
 * The core API's HTTP face (docs/adr/0196): `GET /core/v1/whoami` and `GET /core/v1/connector/state`,
 * for plugins calling with their `openfief-core` token (the SDK's core client). Mounted on `up`'s
 * listener under `/core/`, and served on a listener of its own where a cluster's plugins dial the
 * core address ({@link serveCoreApi}).
 *
 * Everything is bounded before the use case sees it: the target's length, no query, no body (by
 * its headers, before a byte is read), GET or HEAD only, the `Authorization` header's length (the
 * listener's header limit, then the token's cap), and a deadline per call. Answers are JSON
 * `{code, message}` for refusals, never naming the token; an unknown path is 404 and not recorded.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { CoreAnswer, CoreApi, CoreCall } from "../app/index.js";
import { createListener, NO_BODY, refuseBody, sendJson } from "../http/index.js";

/** The prefix every core route is under. */
export const CORE_PREFIX = "/core/";

/** The routes, by path. */
export const CORE_ROUTES: Readonly<Record<string, CoreCall>> = {
  "/core/v1/whoami": "whoami",
  "/core/v1/connector/state": "connector.state",
};

/** The longest request target the core API reads. */
export const MAX_CORE_TARGET = 1024;
/** The longest a call may take, by default (ms). */
export const DEFAULT_CORE_DEADLINE_MS = 5000;

/** Options of {@link coreHandler}. */
export interface CoreHandlerOptions {
  readonly deadlineMs?: number;
  readonly logger?: Logger;
}

function refuse(res: ServerResponse, status: number, code: string, message: string, headers: Readonly<Record<string, string>> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, status, { code, message }, headers);
}

function answer(res: ServerResponse, a: CoreAnswer, head: boolean): void {
  if (a.ok) {
    if (head) {
      res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store" });
      res.end();
    } else sendJson(res, 200, a.body);
    return;
  }
  const headers: Record<string, string> = {};
  if (a.status === 401) headers["WWW-Authenticate"] = 'Bearer realm="openfief-core"';
  if (a.retryAfterSeconds !== undefined) headers["Retry-After"] = String(a.retryAfterSeconds);
  refuse(res, a.status, a.code, a.message, headers);
}

/** Runs `work` within `ms`; past it, the answer is `deadline` (the work's own answer is dropped). */
async function within(work: Promise<CoreAnswer>, ms: number): Promise<CoreAnswer> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CoreAnswer>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, status: 503, code: "busy", message: `the call took longer than ${ms} ms: try again`, retryAfterSeconds: 1 }), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The core API as a `node:http` request handler (requests outside {@link CORE_PREFIX} are 404). */
export function coreHandler(api: CoreApi, o: CoreHandlerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const deadlineMs = o.deadlineMs ?? DEFAULT_CORE_DEADLINE_MS;
  return (req, res) => {
    const target = req.url ?? "/";
    if (target.length > MAX_CORE_TARGET) return refuse(res, 414, "too_large", `the request target is over ${MAX_CORE_TARGET} characters`);
    const q = target.indexOf("?");
    const path = q < 0 ? target : target.slice(0, q);
    if (q >= 0) return refuse(res, 400, "usage", "the core API reads no query");
    const call = Object.hasOwn(CORE_ROUTES, path) ? CORE_ROUTES[path] : undefined;
    if (call === undefined) return refuse(res, 404, "not_found", `nothing at ${path.slice(0, 200)}`);
    const method = req.method ?? "GET";
    if (method !== "GET" && method !== "HEAD") return refuse(res, 405, "usage", `${method.slice(0, 16)} is not a method of ${path}: use GET`, { Allow: "GET, HEAD" });
    const body = refuseBody(req, NO_BODY);
    if (body !== null) {
      res.setHeader("Connection", "close");
      return refuse(res, body.status, body.reason, body.message);
    }
    const source = req.socket.remoteAddress ?? "unknown";
    void within(api.handle({ call, authorization: req.headers.authorization, source }), deadlineMs).then(
      (a) => answer(res, a, method === "HEAD"),
      (err: unknown) => {
        o.logger?.error({ err: err instanceof Error ? err.message : String(err) }, "a core call failed");
        refuse(res, 500, "internal", "the call failed");
      },
    );
  };
}

/** A core API listening on its own. */
export interface CoreListener {
  /** `http://host:port`. */
  readonly url: string;
  readonly port: number;
  /** Stops taking calls and ends the open connections. */
  close(): Promise<void>;
}

/**
 * Serves the core API on a listener of its own (a cluster's core address, where plugins dial
 * `OPENFIEF_CORE_ADDRESS`), with the limits every listener of the product has.
 */
export async function serveCoreApi(api: CoreApi, o: { readonly host: string; readonly port: number } & CoreHandlerOptions): Promise<CoreListener> {
  const server = createListener();
  const handle = coreHandler(api, o);
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader("X-Content-Type-Options", "nosniff");
    handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = o.host.includes(":") ? `[${o.host}]` : o.host;
  let closed: Promise<void> | null = null;
  return {
    url: `http://${host}:${port}`,
    port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2000).unref();
      });
      return closed;
    },
  };
}
