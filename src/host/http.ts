/**
 * The HTTP capability a call may be granted (seed 003, `HTTP`): a small port, and its
 * implementation through the egress proxy. The host checks the origin, the method, the headers
 * and the sizes before the port is asked; the port sends exactly one request, never follows a
 * redirect, reads at most `maxResponseBytes` of the answer and stops when `signal` aborts.
 */
import type { ProxyAgent, request } from "undici";
import { basicProxyAuthorization } from "../egress/index.js";

/** A request a plugin makes, already checked by the host. */
export interface PluginHttpRequest {
  readonly method: string;
  /** An `https:` URL whose origin is one of the call's approved origins. */
  readonly url: string;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Uint8Array;
}

/** The answer, whatever its status (a 3xx is returned, not followed). */
export interface PluginHttpResponse {
  readonly status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
}

/** What one request came to. The message never carries the token. */
export type HttpOutcome = { readonly ok: true; readonly response: PluginHttpResponse } | { readonly ok: false; readonly message: string };

/** What the host hands the port with each request. */
export interface HttpContext {
  /** The plugin's own egress token: the proxy identifies the plugin by it. */
  readonly egressToken: string;
  /** Aborts when the call's time is up. */
  readonly signal: AbortSignal;
  readonly maxResponseBytes: number;
}

/** The HTTP capability's port. */
export interface HttpCapability {
  send(request: PluginHttpRequest, context: HttpContext): Promise<HttpOutcome>;
  /** Releases connections. */
  close(): Promise<void>;
}

/** Options of {@link proxyHttp}. */
export interface ProxyHttpOptions {
  /** The egress proxy, `http://host:port` (CONNECT-only; no credentials in the URL). */
  readonly proxyUrl: string;
  /** Extra CA certificates for the upstream TLS (tests); the system's CAs otherwise. */
  readonly ca?: string | readonly string[];
  /** Connect timeout to the proxy, ms. */
  readonly connectTimeoutMs?: number;
}

const MAX_AGENTS = 32;

/** What the capability takes from undici. */
interface UndiciClient {
  readonly ProxyAgent: typeof ProxyAgent;
  readonly request: typeof request;
}

/**
 * undici (a megabyte of code), loaded by the first request: commands that never call a plugin
 * never compile it. The names are taken by destructuring, which the bundle's test checks against
 * what the loaded chunk exports.
 */
let undici: Promise<UndiciClient> | null = null;
const loadUndici = (): Promise<UndiciClient> => (undici ??= import("./undici-client.js").then(({ ProxyAgent, request }) => ({ ProxyAgent, request })));

/**
 * The HTTP capability through the egress proxy: every request is a CONNECT tunnel with the
 * plugin's own token in `Proxy-Authorization: Basic base64("plugin:" + token)`, so the proxy's
 * allow-list, address checks and `egress.decision` events apply; TLS runs end to end.
 */
export function proxyHttp(o: ProxyHttpOptions): HttpCapability {
  const proxy = new URL(o.proxyUrl);
  if (proxy.protocol !== "http:" || proxy.username !== "" || proxy.password !== "") {
    throw new Error("the egress proxy URL must be http://host:port without credentials");
  }
  // One agent per token (a plugin's connections are its own); the least recently used closes.
  const agents = new Map<string, ProxyAgent>();
  const agentFor = (lib: UndiciClient, token: string): ProxyAgent => {
    const found = agents.get(token);
    if (found !== undefined) {
      agents.delete(token);
      agents.set(token, found);
      return found;
    }
    const agent = new lib.ProxyAgent({
      uri: proxy.href,
      token: basicProxyAuthorization("plugin", token),
      connectTimeout: o.connectTimeoutMs ?? 10_000,
      ...(o.ca === undefined ? {} : { requestTls: { ca: typeof o.ca === "string" ? o.ca : [...o.ca] } }),
    });
    agents.set(token, agent);
    if (agents.size > MAX_AGENTS) {
      const [oldest, a] = agents.entries().next().value as [string, ProxyAgent];
      agents.delete(oldest);
      void a.close();
    }
    return agent;
  };

  return {
    async send(req, ctx) {
      try {
        const lib = await loadUndici();
        const res = await lib.request(req.url, {
          method: req.method as "GET",
          headers: { ...req.headers },
          ...(req.body === undefined ? {} : { body: Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength) }),
          dispatcher: agentFor(lib, ctx.egressToken),
          signal: ctx.signal,
        });
        const chunks: Buffer[] = [];
        let total = 0;
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          total += chunk.length;
          if (total > ctx.maxResponseBytes) {
            res.body.destroy();
            return { ok: false, message: `the response body is larger than the cap of ${ctx.maxResponseBytes} bytes` };
          }
          chunks.push(chunk);
        }
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) {
          if (v === undefined) continue;
          headers[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
        }
        return { ok: true, response: { status: res.statusCode, headers, body: new Uint8Array(Buffer.concat(chunks, total)) } };
      } catch (err) {
        if (ctx.signal.aborted) return { ok: false, message: "the call's time ran out before the response arrived" };
        return { ok: false, message: describe(err) };
      }
    },
    async close() {
      const all = [...agents.values()];
      agents.clear();
      await Promise.all(all.map((a) => a.close().catch(() => undefined)));
    },
  };
}

/** Fixed descriptions by undici or system error code. */
const BY_CODE: Readonly<Record<string, string>> = {
  UND_ERR_CONNECT_TIMEOUT: "connecting timed out",
  ECONNREFUSED: "the egress proxy is not reachable",
  UND_ERR_SOCKET: "the connection was closed",
  ECONNRESET: "the connection was closed",
  UND_ERR_HEADERS_TIMEOUT: "the origin did not answer in time",
  UND_ERR_BODY_TIMEOUT: "the origin did not answer in time",
};

/**
 * What the egress proxy's answer to the CONNECT says, by its status (undici hands on the status,
 * not the proxy's Proxy-Status header): a 407 is a refusal by policy (the origin is not granted
 * to the plugin, or its token was refused); a 502 or 504 means the origin could not be reached,
 * or (502) its address is one the proxy never dials. The proxy's recorded decision says which.
 */
function proxyAnswer(status: string): string {
  switch (status) {
    case "407": return "the egress proxy refused the connection (407)";
    case "502": return "the egress proxy could not reach the origin, or refused its address (502)";
    case "504": return "the egress proxy timed out reaching the origin (504)";
    case "429":
    case "503": return `the egress proxy could not take the connection now (${status})`;
    default: return `the egress proxy did not open the connection (${status})`;
  }
}

/** A fixed description per failure kind: undici's messages are not passed on as they are. */
function describe(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown } };
  const message = typeof e.message === "string" ? e.message : "";
  const status = /Proxy response \((\d{3})\)/.exec(message);
  if (status !== null) return proxyAnswer(status[1] ?? "");
  const code = typeof e.code === "string" ? e.code : typeof e.cause?.code === "string" ? e.cause.code : "";
  const known = BY_CODE[code];
  if (known !== undefined) return known;
  if (/certificate|self.signed|SSL|TLS/i.test(message) || /^ERR_TLS|CERT|SSL/.test(code)) return "the TLS handshake with the origin failed";
  return code !== "" && /^[A-Z_]{1,40}$/.test(code) ? `the request failed (${code})` : "the request failed";
}
