import { ProxyAgent, fetch as undiciFetch, type RequestInit, type Response } from "undici";
import { ENV, DEFAULT_EGRESS_TOKEN_FILE, type Environment } from "./env.js";
import { SdkError } from "./errors.js";
import { tokenFile, type TokenSource } from "./token-file.js";

/** The proxy user name the egress proxy expects (D-63). */
export const EGRESS_PROXY_USER = "plugin";

const MAX_REDIRECTS = 5;

/** Options for createEgressClient; everything defaults to the operator's environment. */
export interface EgressClientOptions {
  /** The egress proxy, such as `http://10.0.0.9:4750`; HTTPS_PROXY by default. */
  readonly proxyUrl?: string;
  /** The `openfief-egress` token; OPENFIEF_EGRESS_TOKEN_FILE (re-read per request) by default. */
  readonly token?: TokenSource;
  /** The environment to read; process.env by default. */
  readonly env?: Environment;
  /** TLS options towards the institution (tests pass their own CA). */
  readonly requestTls?: ProxyAgent.Options["requestTls"];
}

/** An HTTP client for reaching institutions through the egress proxy (seed 000, NewEgressClient). */
export interface EgressClient {
  /** Sends an https request through the egress proxy with the current egress token. */
  fetch(url: string | URL, init?: RequestInit): Promise<Response>;
  /** Closes the proxy connections. */
  close(): Promise<void>;
}

/** The proxy URL for one request: user `plugin`, the current egress token as the password. */
export function egressProxyUrl(proxy: string, token: string): string {
  const url = new URL(proxy);
  url.username = EGRESS_PROXY_USER;
  url.password = token; // the URL setter percent-encodes; undici decodes it into Basic auth
  return url.href;
}

/**
 * A client that sends every request through the egress proxy (D-63). For every request it reads
 * the egress token afresh and rebuilds the proxy URL with it, so a rotated token is used at once;
 * undici sends it as a Basic Proxy-Authorization header on the CONNECT. It refuses plain http and
 * refuses to send anything when no proxy is configured.
 */
export function createEgressClient(options: EgressClientOptions = {}): EgressClient {
  const env = options.env ?? process.env;
  const proxy = options.proxyUrl ?? env[ENV.httpsProxy] ?? env.https_proxy;
  const configuredFile = env[ENV.egressTokenFile]?.trim();
  const token = options.token ?? tokenFile(configuredFile !== undefined && configuredFile !== "" ? configuredFile : DEFAULT_EGRESS_TOKEN_FILE);
  let current: { href: string; agent: ProxyAgent } | undefined;

  const agentFor = (href: string): ProxyAgent => {
    if (current?.href === href) return current.agent;
    const previous = current?.agent;
    const agent = new ProxyAgent({ uri: href, ...(options.requestTls !== undefined ? { requestTls: options.requestTls } : {}) });
    current = { href, agent };
    void previous?.close().catch(() => undefined); // finishes its requests, then closes
    return agent;
  };

  const send = async (target: URL, init: RequestInit): Promise<Response> => {
    if (target.protocol !== "https:") throw new SdkError("egress_plain_http", "the egress client sends only https requests");
    if (proxy === undefined || proxy.trim() === "") throw new SdkError("egress_no_proxy", `${ENV.httpsProxy} is not set: refusing to send without the egress proxy`);
    let proxyUrl: URL;
    try {
      proxyUrl = new URL(proxy.trim());
    } catch (cause) {
      throw new SdkError("egress_no_proxy", `${ENV.httpsProxy} is not a URL`, { cause });
    }
    if (proxyUrl.protocol !== "http:" && proxyUrl.protocol !== "https:") throw new SdkError("egress_no_proxy", `${ENV.httpsProxy} must be an http(s) URL`);
    const href = egressProxyUrl(proxyUrl.href, await token());
    return undiciFetch(target, { ...init, dispatcher: agentFor(href), redirect: "manual" });
  };

  return {
    async fetch(url, init = {}) {
      let target = new URL(url);
      const method = (init.method ?? "GET").toUpperCase();
      for (let hop = 0; ; hop++) {
        const response = await send(target, init);
        const location = response.headers.get("location");
        const redirect = [301, 302, 303, 307, 308].includes(response.status) && location !== null;
        // Redirects are followed only for safe methods, and each hop is checked like the first.
        if (!redirect || (method !== "GET" && method !== "HEAD") || hop >= MAX_REDIRECTS) return response;
        await response.body?.cancel();
        target = new URL(location, target);
      }
    },
    async close() {
      await current?.agent.close();
      current = undefined;
    },
  };
}
