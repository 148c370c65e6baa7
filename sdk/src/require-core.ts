import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { TokenRefusedError, type CoreVerifier, type TokenRefusal } from "./verifier.js";

/** A request as either server hands it over: HTTP/1.1 or HTTP/2. */
export type AnyRequest = IncomingMessage | Http2ServerRequest;
/** A response of either server. */
export type AnyResponse = ServerResponse | Http2ServerResponse;
/** A request handler that serves both HTTP/1.1 and HTTP/2. */
export type RequestHandler = (req: AnyRequest, res: AnyResponse) => void;

/** Called for every refused request with the reason's code; never with the token. */
export type RefusalListener = (reason: TokenRefusal | "missing") => void;

const BEARER = /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)[ ]*$/i;

/** The bearer token of a request, or undefined when it carries none (or anything else). */
export function bearerToken(req: AnyRequest): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== "string") return undefined;
  return BEARER.exec(header)?.[1];
}

function refuse(res: AnyResponse): void {
  if (res.headersSent) return;
  // A Connect error body; gRPC clients map the HTTP 401 to Unauthenticated as well.
  res.writeHead(401, { "content-type": "application/json", "www-authenticate": "Bearer" });
  res.end(JSON.stringify({ code: "unauthenticated", message: "the core's token was refused" }));
}

/**
 * Wraps a handler so that only the core reaches it (D-59): a request whose bearer token the
 * verifier refuses gets 401 before `next` sees it. Fails closed on any verifier error.
 */
export function requireCore(verifier: CoreVerifier, next: RequestHandler, onRefused?: RefusalListener): RequestHandler {
  return (req, res) => {
    const token = bearerToken(req);
    if (token === undefined) {
      onRefused?.("missing");
      req.resume();
      refuse(res);
      return;
    }
    verifier.verify(token).then(
      () => next(req, res),
      (err: unknown) => {
        onRefused?.(err instanceof TokenRefusedError ? err.reason : "malformed");
        req.resume();
        refuse(res);
      },
    );
  };
}
