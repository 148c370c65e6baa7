/**
 * Forwarding one HTTP request upstream and its answer back, streaming both ways (a watch or a log
 * tail passes through as it comes), with a deadline on the upstream's answer and the upstream
 * request aborted when the client goes away.
 */
import { request as httpRequest } from "node:http";
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { RequestOptions } from "node:https";
import { forwardableHeaders, returnableHeaders } from "./upstream.js";
import { sendJson, statusBody } from "./http.js";

/** How long an upstream may take to answer with its status line. */
export const UPSTREAM_HEADERS_TIMEOUT_MS = 30_000;

/** Where to send a request: a base URL (its path is a prefix) and TLS settings for https. */
export interface UpstreamEndpoint {
  readonly baseUrl: string;
  /** PEM CA bundle for https upstreams. */
  readonly ca?: string | Buffer;
  /** Client certificate and key, when the upstream authenticates the gateway that way. */
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
}

/** Request options for `target` (a raw path and query, sent as is: never normalised). */
export function requestOptions(endpoint: UpstreamEndpoint, method: string, target: string, headers: OutgoingHttpHeaders): { https: boolean; options: RequestOptions } {
  const base = new URL(endpoint.baseUrl);
  const prefix = base.pathname.replace(/\/+$/, "");
  const options: RequestOptions = {
    protocol: base.protocol,
    hostname: base.hostname.startsWith("[") ? base.hostname.slice(1, -1) : base.hostname,
    port: base.port === "" ? undefined : Number(base.port),
    method,
    // Raw: a URL object would resolve `..` and re-encode, changing what was authorised.
    path: `${prefix}${target}`,
    headers: { ...headers, host: base.host },
  };
  if (endpoint.ca !== undefined) options.ca = endpoint.ca;
  if (endpoint.cert !== undefined) options.cert = endpoint.cert;
  if (endpoint.key !== undefined) options.key = endpoint.key;
  return { https: base.protocol === "https:", options };
}

/** One request to forward. */
export interface Forwarding {
  readonly endpoint: UpstreamEndpoint;
  /** The raw path and query to send, appended to the endpoint's path. */
  readonly target: string;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Set on the upstream request (the credential). */
  readonly extraHeaders: Readonly<Record<string, string>>;
  /** Set on the answer (CORS). */
  readonly responseHeaders: Readonly<Record<string, string>>;
  /** Ends the exchange when aborted: the upstream request is dropped and the answer ended. */
  readonly signal?: AbortSignal;
}

/** Forwards `req` to `endpoint` + `target` with `extraHeaders` set, piping the answer to `res`. */
export function forwardHttp({ endpoint, target, req, res, extraHeaders, responseHeaders, signal }: Forwarding): Promise<void> {
  return new Promise((resolve) => {
    const { https, options } = requestOptions(endpoint, req.method ?? "GET", target, { ...forwardableHeaders(req), ...extraHeaders });
    const upstream = (https ? httpsRequest : httpRequest)(options);
    let answered = false;
    const timer = setTimeout(() => upstream.destroy(new Error("the upstream did not answer in time")), UPSTREAM_HEADERS_TIMEOUT_MS);
    const fail = (status: number, message: string): void => {
      clearTimeout(timer);
      if (!answered && !res.headersSent) sendJson(res, status, statusBody(status, message), { ...responseHeaders });
      else res.destroy();
      resolve();
    };
    let finished = false;
    let ended = false;
    let answer: IncomingMessage | null = null;
    upstream.on("response", (up) => {
      clearTimeout(timer);
      answered = true;
      if (ended) return void up.destroy();
      answer = up;
      res.writeHead(up.statusCode ?? 502, { ...returnableHeaders(up.headers), ...responseHeaders });
      // A watch's events must reach the client as they come.
      res.flushHeaders();
      up.pipe(res);
      up.on("error", () => res.destroy());
      up.on("end", () => {
        finished = true;
        resolve();
      });
      up.on("close", () => resolve());
    });
    upstream.on("error", (err) => {
      if (!ended) fail(err.message.includes("in time") ? 504 : 502, "the upstream could not be reached");
    });
    res.on("close", () => {
      // The client left, or the answer was ended here: the upstream is dropped either way.
      if (!finished) upstream.destroy();
      resolve();
    });
    signal?.addEventListener("abort", () => {
      if (ended || finished) return;
      ended = true;
      clearTimeout(timer);
      const up: IncomingMessage | null = answer;
      if (up !== null) {
        // Detached first, so that dropping the upstream neither writes to nor cuts the answer.
        up.unpipe(res);
        up.removeAllListeners("error");
        up.on("error", () => undefined);
      }
      upstream.destroy();
      if (res.headersSent) res.end();
      else res.destroy();
      resolve();
    }, { once: true });
    req.pipe(upstream);
  });
}
