/**
 * CORS exactly as FUN-17 ("The CSP confines outbound network calls") asks of the gateway: the
 * plugin proxy's origin only, `Authorization` allowed (the token rides in it), credentials off
 * (no `Access-Control-Allow-Credentials`, so no cookie ever goes along), the data path's methods,
 * and preflights answered. `Content-Type` is allowed too, or no JSON create or patch could pass
 * (docs/adr/0026). Every answer varies by `Origin`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** The methods the data path uses. */
export const CORS_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE";
/** The request headers a view may send. */
export const CORS_HEADERS = "Authorization, Content-Type";
/** How long a browser may cache a preflight's answer, in seconds. */
export const CORS_MAX_AGE = 600;

/** What CORS says of a request. */
export type CorsVerdict =
  /** No Origin: not a cross-origin browser request (a CLI, a same-origin navigation). */
  | { readonly kind: "none" }
  /** The plugin proxy's origin. */
  | { readonly kind: "allowed"; readonly origin: string }
  /** Any other origin. */
  | { readonly kind: "foreign" };

/** The CORS policy of one plugin-proxy origin (`https://plugins.example:8443`, no path). */
export class CorsPolicy {
  readonly origin: string;

  constructor(pluginProxyOrigin: string) {
    const u = new URL(pluginProxyOrigin);
    if (u.origin !== pluginProxyOrigin) throw new RangeError(`the plugin proxy's origin must be written as an origin, such as ${u.origin}`);
    this.origin = u.origin;
  }

  /** What the request's `Origin` header says. */
  verdict(req: IncomingMessage): CorsVerdict {
    const o = req.headers.origin;
    if (o === undefined) return { kind: "none" };
    return o === this.origin ? { kind: "allowed", origin: o } : { kind: "foreign" };
  }

  /** Whether the request is a CORS preflight (OPTIONS naming the method it will use). */
  isPreflight(req: IncomingMessage): boolean {
    return req.method === "OPTIONS" && req.headers.origin !== undefined && req.headers["access-control-request-method"] !== undefined;
  }

  /** Answers a preflight: 204 with the policy for the plugin proxy, 403 without any CORS header otherwise. */
  answerPreflight(req: IncomingMessage, res: ServerResponse): void {
    if (this.verdict(req).kind !== "allowed") {
      res.writeHead(403, { vary: "Origin", "content-length": "0" });
      res.end();
      return;
    }
    res.writeHead(204, {
      "access-control-allow-origin": this.origin,
      "access-control-allow-methods": CORS_METHODS,
      "access-control-allow-headers": CORS_HEADERS,
      "access-control-max-age": String(CORS_MAX_AGE),
      vary: "Origin",
      "content-length": "0",
    });
    res.end();
  }

  /** The headers every answer to the plugin proxy's origin carries. */
  responseHeaders(verdict: CorsVerdict): Record<string, string> {
    return verdict.kind === "allowed" ? { "access-control-allow-origin": this.origin, vary: "Origin" } : { vary: "Origin" };
  }
}
