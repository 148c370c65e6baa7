/**
 * The JSON API (`/api/v1/…`) over the application's use cases: plugins, one plugin, its timeline,
 * why, pending approvals, approve (`If-Match`), apply, delete and uninstall, the log (paged and streamed),
 * replay, verify-log, check-decisions, egress decisions and their summary, the caller's session.
 * Each handler parses its request, calls one use case and answers; none decides anything.
 */
import {
  APP_ERRORS, AppError, applyResources, EGRESS_OUTCOMES, approve, checkLogDecisions, deleteResource, egressDecisions, egressSummary, eventRemovals, explain, listPlugins,
  parseReplayPoint, parseResources, pendingApprovals, pluginTimeline, pluginView, readLog, replay, uninstallPlugin, verifyLog, webActor,
} from "../app/index.js";
import type { AppErrorCode, NextSteps, UserSession } from "../app/index.js";
import { callerOf } from "./auth.js";
import { etag, ifMatchVersion, mediaType, optionalIfMatch, readBody, sendJson } from "./http.js";
import { deliveriesRoutes } from "./deliveries-api.js";
import { OPENAPI } from "./openapi.js";
import { limitOf, logFilters, pluginParam, resumeAfter, seqOf, timeOf } from "./params.js";
import type { RequestContext, Route } from "./routes.js";
import type { EventStreams } from "./sse.js";

/** How the API's `why` sentences say what to do next. */
export const API_STEPS: NextSteps = {
  approve: (p) => `POST /api/v1/plugins/${p}/approve with If-Match (or Approve in the console)`,
  check: "GET /api/v1/check-decisions",
};

/** Statuses every route may answer: a bad or oversized query, a failure, a deadline passed. */
export const BASE_STATUSES = [400, 413, 500, 503] as const;
const READ = [200, 401, ...BASE_STATUSES];
const WRITE = [200, 401, 403, ...BASE_STATUSES];

/** Media types `apply` reads (a form's types are refused: no cross-site form can send these). */
const RESOURCE_TYPES = new Set(["application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "application/json"]);
/** The most bytes `apply` reads. */
export const MAX_APPLY_BYTES = 1 << 20;

function actorOf(s: UserSession | null) {
  if (s === null) throw new AppError("unauthorized", "sign in first");
  return webActor(s.role, s.user);
}

function api(r: Omit<Route, "kind" | "query" | "headers"> & Partial<Pick<Route, "query" | "headers">>): Route {
  return { kind: "api", query: [], headers: [], ...r };
}

const LOG_QUERY = ["plugin", "type", "since", "until", "after", "limit"];

function pluginRoutes(): Route[] {
  return [
    api({ method: "GET", path: "/api/v1/plugins", access: "viewer", summary: "every plugin: status, running, asked for, verdict, pending, problems", statuses: READ,
      handle: async ({ res, app }) => sendJson(res, 200, { plugins: await listPlugins(app.store) }) }),
    api({ method: "GET", path: "/api/v1/plugins/{name}", access: "viewer", summary: "one plugin: what runs, the grant, why, what an approval would add; ETag is the version to approve against", statuses: [...READ, 404],
      handle: async ({ res, app, params }) => {
        const v = await pluginView(app.store, pluginParam(app.store, params.name), { steps: API_STEPS });
        sendJson(res, 200, v, { ETag: etag(v.version) });
      } }),
    api({ method: "GET", path: "/api/v1/plugins/{name}/timeline", access: "viewer", summary: "a page of the plugin's events with their causes", query: ["after", "limit", "egress"], statuses: [...READ, 404],
      handle: async ({ res, app, params, query }) => {
        const name = pluginParam(app.store, params.name);
        const egress = query.get("egress");
        if (egress !== undefined && egress !== "true" && egress !== "false") throw new AppError("usage", "egress must be true or false", "egress");
        if ((await listPlugins(app.store)).every((r) => r.name !== name)) throw new AppError("not_found", `no plugin ${name}`);
        const after = seqOf(query, "after");
        sendJson(res, 200, await pluginTimeline(app.store, name, { limit: limitOf(query), includeEgress: egress === "true", ...(after === undefined ? {} : { afterSeq: after }) }));
      } }),
    api({ method: "GET", path: "/api/v1/plugins/{name}/why", access: "viewer", summary: "the latest rollout decision, its inputs and causes, in codes and sentences", statuses: [...READ, 404],
      handle: async ({ res, app, params }) => sendJson(res, 200, await explain(app.store, pluginParam(app.store, params.name), API_STEPS)) }),
    api({ method: "GET", path: "/api/v1/pending", access: "viewer", summary: "every plugin waiting for approval, with exactly what approving adds and the version to send", statuses: READ,
      handle: async ({ res, app }) => sendJson(res, 200, { pending: await pendingApprovals(app.store) }) }),
    api({ method: "POST", path: "/api/v1/plugins/{name}/approve", access: "owner", summary: "add exactly the pending permissions to the grant, if the plugin is still at the If-Match version", headers: ["If-Match"], statuses: [...WRITE, 404, 409, 412, 428],
      handle: async ({ res, app, params, req, session }) => {
        const name = pluginParam(app.store, params.name);
        const version = ifMatchVersion(req);
        const r = app.cluster === undefined || session === null ? await approve(app.store, name, actorOf(session), version) : await app.cluster.approve(app.store, name, session, version);
        sendJson(res, 200, r, { ETag: etag(r.version) });
      } }),
  ];
}

/** Refuses (`conflict`) a write of Plugins or grants in a cluster: there they are Kubernetes resources, changed with kubectl. */
function notInCluster(app: RequestContext["app"]): void {
  if (app.cluster !== undefined) throw new AppError("conflict", `in a cluster, Plugins and PluginGrants are Kubernetes resources: change them with kubectl in namespace ${app.cluster.namespace} (approvals are taken here)`);
}

function writeRoutes(): Route[] {
  const del = (kind: "plugin" | "grant") => async ({ res, app, params, req, session }: RequestContext): Promise<void> => {
    notInCluster(app);
    const name = pluginParam(app.store, params.name);
    const expected = optionalIfMatch(req);
    sendJson(res, 200, await deleteResource(app.store, kind, name, actorOf(session), expected));
  };
  return [
    api({ method: "POST", path: "/api/v1/apply", access: "owner", summary: "record Plugin and PluginGrant documents (YAML or JSON, several with ---), validated as the CLI does", statuses: [...WRITE, 415, 422],
      body: { types: [...RESOURCE_TYPES], maxBytes: MAX_APPLY_BYTES, unsupported: "send the documents as application/yaml or application/json" },
      handle: async ({ res, app, req, session }) => {
        notInCluster(app);
        const type = mediaType(req);
        if (!RESOURCE_TYPES.has(type)) throw new AppError("unsupported_media_type", `send the documents as application/yaml or application/json, not ${JSON.stringify(type.slice(0, 64)) || "nothing"}`, "Content-Type");
        const text = await readBody(req, MAX_APPLY_BYTES, "the documents");
        const resources = parseResources(text, "the request body");
        if (resources.length === 0) throw new AppError("invalid_resource", "the request body holds no Plugin or PluginGrant documents");
        sendJson(res, 200, { applied: await applyResources(app.store, resources, actorOf(session)) });
      } }),
    api({ method: "DELETE", path: "/api/v1/plugins/{name}", access: "owner", summary: "record that a Plugin is deleted (its workload stops); If-Match optional", headers: ["If-Match"], statuses: [...WRITE, 404, 412], handle: del("plugin") }),
    api({ method: "POST", path: "/api/v1/plugins/{name}/uninstall", access: "owner", summary: "uninstall a plugin and leave nothing behind (openfief delete --purge): record the intent with the Plugin's and grant's deletion; the reconciler removes its objects, its own Secrets and its module and records plugin.uninstalled; If-Match optional", headers: ["If-Match"], statuses: [202, 401, 403, ...BASE_STATUSES, 404, 409, 412],
      handle: async ({ res, app, params, req, session }) => {
        const name = pluginParam(app.store, params.name);
        const { request } = await uninstallPlugin(app.store, name, actorOf(session), null, optionalIfMatch(req));
        sendJson(res, 202, request);
      } }),
    api({ method: "DELETE", path: "/api/v1/grants/{name}", access: "owner", summary: "record that a PluginGrant is deleted; If-Match optional", headers: ["If-Match"], statuses: [...WRITE, 404, 412], handle: del("grant") }),
  ];
}

function logRoutes(streams: EventStreams): Route[] {
  return [
    api({ method: "GET", path: "/api/v1/events", access: "viewer", summary: "a page of the log in sequence order, filtered as openfief log; next is the after of the next page; removed names, by seq, the removed instance an event came from", query: LOG_QUERY, statuses: READ,
      handle: async ({ res, app, query }) => {
        const after = seqOf(query, "after");
        const page = await readLog(app.store, { ...logFilters(app.store, query), limit: limitOf(query), ...(after === undefined ? {} : { afterSeq: after }) });
        sendJson(res, 200, { ...page, removed: await eventRemovals(app.store, page.events) });
      } }),
    api({ method: "GET", path: "/api/v1/events/stream", access: "viewer", summary: "the log as server-sent events (id = seq), resuming after Last-Event-ID or after", query: ["plugin", "type", "since", "until", "after"], headers: ["Last-Event-ID"], statuses: READ, stream: true,
      handle: ({ res, req, app, query }) => {
        const filters = logFilters(app.store, query);
        streams.open(app.store, res, filters, resumeAfter(req.headers["last-event-id"], query));
      } }),
    api({ method: "GET", path: "/api/v1/replay", access: "viewer", summary: "the state as of a sequence number or an ISO-8601 time", query: ["at"], statuses: READ,
      handle: async ({ res, app, query }) => {
        const at = query.get("at");
        if (at === undefined) throw new AppError("usage", "at is required: a sequence number or an ISO-8601 time", "at");
        sendJson(res, 200, await replay(app.store, parseReplayPoint(at)));
      } }),
    api({ method: "GET", path: "/api/v1/verify-log", access: "viewer", summary: "walk the hash chain and check the guards; ok is false when the log does not hold", statuses: READ,
      handle: async ({ res, app }) => sendJson(res, 200, await verifyLog(app.store)) }),
    api({ method: "GET", path: "/api/v1/check-decisions", access: "viewer", summary: "re-run the deciders over the log, each decision under the rules it names, and list those that do not reproduce and, apart, those today's rules would decide differently", statuses: READ,
      handle: async ({ res, app }) => sendJson(res, 200, await checkLogDecisions(app.store)) }),
  ];
}

function egressRoutes(): Route[] {
  return [
    api({ method: "GET", path: "/api/v1/egress/decisions", access: "viewer", summary: "a page of the egress proxy's decisions by plugin, host and outcome", query: ["plugin", "host", "outcome", "after", "limit"], statuses: READ,
      handle: async ({ res, app, query }) => {
        const given = query.get("outcome");
        const outcome = EGRESS_OUTCOMES.find((o) => o === given);
        if (given !== undefined && outcome === undefined) throw new AppError("usage", `outcome must be one of ${EGRESS_OUTCOMES.join(", ")}`, "outcome");
        const plugin = query.get("plugin");
        const host = query.get("host");
        const after = seqOf(query, "after");
        sendJson(res, 200, await egressDecisions(app.store, {
          limit: limitOf(query), ...(plugin === undefined ? {} : { plugin }), ...(host === undefined ? {} : { host }), ...(outcome === undefined ? {} : { outcome }), ...(after === undefined ? {} : { afterSeq: after }),
        }));
      } }),
    api({ method: "GET", path: "/api/v1/egress/summary", access: "viewer", summary: "allowed, refused and failed destinations per plugin and the counts over time, between since and until (default: the last 24 hours)", query: ["plugin", "since", "until", "buckets"], statuses: READ,
      handle: async ({ res, app, query }) => {
        const until = timeOf(query, "until") ?? app.clock();
        const since = timeOf(query, "since") ?? new Date(until.getTime() - 24 * 3600_000);
        const plugin = query.get("plugin");
        const buckets = seqOf(query, "buckets");
        sendJson(res, 200, await egressSummary(app.store, { since, until, ...(plugin === undefined ? {} : { plugin }), ...(buckets === undefined ? {} : { buckets }) }));
      } }),
  ];
}

function sessionRoutes(): Route[] {
  return [
    api({ method: "GET", path: "/api/v1/session", access: "viewer", summary: "who the session names, its role and when it expires", statuses: READ,
      handle: ({ res, session }) => {
        if (session === null) throw new AppError("unauthorized", "sign in first");
        sendJson(res, 200, { user: session.user, role: session.role, expiresAt: session.expiresAt.toISOString(), signedInAt: session.signedInAt.toISOString() });
      } }),
    api({ method: "GET", path: "/api/v1/openapi.json", access: "public", summary: "this document", statuses: [200, ...BASE_STATUSES],
      handle: ({ res }) => sendJson(res, 200, OPENAPI) }),
  ];
}

/** The most bytes a mint request may send. */
export const MAX_MINT_BYTES = 4096;

/** The mint's refusals as the API's codes (each with its status), the mint's reason kept beside. */
const MINT_CODES = {
  unauthenticated: "unauthorized", invalid_argument: "usage", permission_denied: "forbidden", not_found: "not_found", failed_precondition: "conflict", unavailable: "unavailable",
} as const satisfies Record<string, AppErrorCode>;

/** `{installationId}` from a JSON body, or a refusal. */
async function installationIdOf(req: RequestContext["req"]): Promise<unknown> {
  if (mediaType(req) !== "application/json") throw new AppError("unsupported_media_type", "send {\"installationId\": …} as application/json", "Content-Type");
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req, MAX_MINT_BYTES, "the request"));
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError("usage", "the body is not JSON");
  }
  return typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>)["installationId"] : undefined;
}

function viewRoutes(): Route[] {
  return [
    api({ method: "POST", path: "/api/v1/plugin-tokens", access: "viewer", summary: "a PluginToken for a view, acting as the session's user within what both the user and the plugin may do; refusals carry the mint's reason", statuses: [200, 401, 403, 404, 409, 415, ...BASE_STATUSES],
      body: { types: ["application/json"], maxBytes: MAX_MINT_BYTES, unsupported: "send {\"installationId\": …} as application/json" },
      handle: async ({ res, app, req }) => {
        if (app.views === null) throw new AppError("not_found", "no views run here (openfief up without --no-views serves them)");
        const installationId = await installationIdOf(req);
        // The use case reads the session and checks the Origin itself, as it does for the Connect face.
        const r = await app.views.mint(callerOf(req), installationId);
        if (!r.ok) {
          const code = MINT_CODES[r.error.code];
          return sendJson(res, APP_ERRORS[code].status, { code, message: r.error.message, reason: r.error.reason });
        }
        sendJson(res, 200, { token: r.value.token, expiresAt: r.value.expiresAt.toISOString(), installationId: r.value.installation.id });
      } }),
  ];
}

/** Every route of the JSON API. */
export function apiRoutes(streams: EventStreams): Route[] {
  return [...pluginRoutes(), ...writeRoutes(), ...logRoutes(streams), ...egressRoutes(), ...deliveriesRoutes(), ...sessionRoutes(), ...viewRoutes()];
}
