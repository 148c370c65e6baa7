import { Agent, Headers, fetch as undiciFetch, type Dispatcher, type RequestInit, type Response } from "undici";
import { coreUrl, type Environment } from "./env.js";
import { SdkError } from "./errors.js";
import { coreTokenSource, type TokenSource } from "./token-file.js";

/** Options for createCoreClient; everything defaults to the operator's environment. */
export interface CoreClientOptions {
  /** The core's base URL; OPENFIEF_CORE_ADDRESS by default. */
  readonly baseUrl?: string | URL;
  /** The `openfief-core` token; OPENFIEF_TOKEN_FILE (re-read on every request) by default. */
  readonly token?: TokenSource;
  /** The environment to read; process.env by default. */
  readonly env?: Environment;
  /** The connection pool; a plain undici Agent by default, never a proxy. */
  readonly dispatcher?: Dispatcher;
}

/** An HTTP client for the core (seed 000, CoreHTTPClient). */
export interface CoreClient {
  /** The core's base URL. */
  readonly baseUrl: URL;
  /** Sends a request to a path on the core with the current `openfief-core` token. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Closes idle connections. */
  close(): Promise<void>;
}

/**
 * A client for the core that adds the current `openfief-core` token as a bearer token on every
 * request and never uses a proxy: it dials the core's ClusterIP directly (NO_PROXY holds it).
 * Requests may only go to the core's own origin, so the token never leaves for anywhere else.
 */
export function createCoreClient(options: CoreClientOptions = {}): CoreClient {
  const env = options.env ?? process.env;
  const base = options.baseUrl !== undefined ? new URL(options.baseUrl) : coreUrl(env);
  const token = options.token ?? coreTokenSource(env);
  const ownDispatcher = options.dispatcher === undefined;
  const dispatcher = options.dispatcher ?? new Agent();
  return {
    baseUrl: base,
    async fetch(path, init = {}) {
      const url = new URL(path, base);
      if (url.origin !== base.origin) throw new SdkError("core_wrong_origin", "a core request may only go to the core");
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${await token()}`);
      // Redirects are not followed: a redirect elsewhere would carry the token away.
      return undiciFetch(url, { ...init, headers, dispatcher, redirect: "manual" });
    },
    async close() {
      if (ownDispatcher) await dispatcher.close();
    },
  };
}
