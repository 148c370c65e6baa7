/**
 * The operator's routes: `/healthz` (the process answers), `/readyz` (the log was checked and a
 * first reconcile pass done, and the last did not fail) and `/metrics` (Prometheus text format).
 * They need no session: they hold no names, hosts or tokens, only counts by type and outcome.
 */
import { BASE_STATUSES } from "./api.js";
import { sendJson } from "./http.js";
import type { Route } from "./routes.js";

function ops(r: Omit<Route, "kind" | "query" | "headers" | "access">): Route {
  return { kind: "ops", access: "public", query: [], headers: [], ...r };
}

/** `/healthz`, `/readyz`, `/metrics`. */
export function opsRoutes(): Route[] {
  return [
    ops({ method: "GET", path: "/healthz", summary: "the process answers", statuses: [200, ...BASE_STATUSES],
      handle: ({ res }) => sendJson(res, 200, { ok: true }) }),
    ops({ method: "GET", path: "/readyz", summary: "ready when the log was checked and a reconcile pass finished without failing; 503 with the reasons otherwise", statuses: [200, ...BASE_STATUSES],
      handle: ({ res, app }) => {
        const r = app.readiness();
        sendJson(res, r.ready ? 200 : 503, { ready: r.ready, reasons: r.reasons });
      } }),
    ops({ method: "GET", path: "/metrics", summary: "the control plane's metrics in Prometheus text format", statuses: [200, ...BASE_STATUSES],
      handle: async ({ res, app }) => {
        const body = await app.metrics.registry.metrics();
        res.writeHead(200, { "Content-Type": app.metrics.registry.contentType, "Cache-Control": "no-store", "Content-Length": Buffer.byteLength(body) });
        res.end(body);
      } }),
  ];
}
