/**
 * `/healthz` and `/readyz` for the operator's pod. Live while the process serves; ready once the
 * source has listed Plugins and PluginGrants and this replica knows its role (leader, or standby
 * that saw the Lease), and only while the last successful list is recent: a source whose lists
 * keep failing is not ready, so Kubernetes shows it rather than hiding a blind operator.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createListener, sendJson } from "../http/index.js";

/** What readiness looks at. */
export interface HealthState {
  /** The source finished its first full list. */
  synced(): boolean;
  /** When the source last listed successfully. */
  lastSuccessfulList(): Date | null;
  /** Leader election ran at least once (leader or standby). */
  electionStarted(): boolean;
  /** Whether this replica leads; reported, not required for readiness. */
  isLeader(): boolean;
}

/** Options of {@link healthHandler}. */
export interface HealthOptions {
  /** A list older than this makes the pod unready; default 15 minutes (three relist periods). */
  readonly maxListAgeMs?: number;
  readonly now?: () => Date;
}

/** The request handler: `/healthz` 200; `/readyz` 200 or 503 with a one-line JSON reason. */
export function healthHandler(state: HealthState, options: HealthOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const maxAge = options.maxListAgeMs ?? 15 * 60_000;
  const now = options.now ?? (() => new Date());
  return (req, res) => {
    const path = new URL(req.url ?? "/", "http://health").pathname;
    if (req.method !== "GET" && req.method !== "HEAD") return reply(res, 405, { ok: false, reason: "method not allowed" });
    if (path === "/healthz") return reply(res, 200, { ok: true });
    if (path !== "/readyz") return reply(res, 404, { ok: false, reason: "not found" });
    const last = state.lastSuccessfulList();
    const role = state.isLeader() ? "leader" : "standby";
    if (!state.synced() || last === null) return reply(res, 503, { ok: false, reason: "not synced: Plugins and PluginGrants not listed yet" });
    if (!state.electionStarted()) return reply(res, 503, { ok: false, reason: "leader election not started" });
    const age = now().getTime() - last.getTime();
    if (age > maxAge) return reply(res, 503, { ok: false, reason: `last successful list ${Math.round(age / 1000)} s ago`, role });
    return reply(res, 200, { ok: true, role, lastSuccessfulList: last.toISOString() });
  };
}

/** Starts the health server on `port` (all interfaces: the kubelet probes the pod IP). */
export async function startHealthServer(port: number, state: HealthState, options: HealthOptions = {}, host = "0.0.0.0"): Promise<Server> {
  // The limits every listener has (src/http): a probe is small and quick, a slow client is cut.
  const server = createListener(healthHandler(state, options));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

function reply(res: ServerResponse, code: number, body: Record<string, unknown>): void {
  sendJson(res, code, body);
}
