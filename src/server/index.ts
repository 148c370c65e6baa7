/**
 * The owner's HTTP face of `openfief up`: the JSON API (`/api/v1`, described by
 * `/api/v1/openapi.json`), the console (server-rendered HTML under a strict CSP, htmx as
 * enhancement), sign-in links and sessions, `/metrics`, `/healthz` and `/readyz`. It imports only
 * the application layer, whose use cases it calls.
 */

/** Starts the server over a control plane's context; whether a listener is allowed where it binds. */
export { checkListen, isLoopback, routeTable, startServer } from "./server.js";
export type { ServerOptions } from "./server.js";
/** The route table's shapes (the OpenAPI check reads them). */
export type { Access, Method, Route, RouteKind } from "./routes.js";
/** The OpenAPI 3.1 document of the API. */
export { OPENAPI } from "./openapi.js";
/** The console's Content-Security-Policy. */
export { CSP, consoleCsp } from "./http.js";
/** The one escaping helper of the console's markup. */
export { escapeHtml, html, Markup } from "./console/html.js";
/** The core API for plugins (docs/adr/0196): its handler, mounted under `/core/` by `up`, and a listener of its own for a cluster's core address. */
export { CORE_PREFIX, CORE_ROUTES, coreHandler, DEFAULT_CORE_DEADLINE_MS, MAX_CORE_TARGET, serveCoreApi } from "./core-api.js";
export type { CoreHandlerOptions, CoreListener } from "./core-api.js";
