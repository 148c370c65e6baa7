/**
 * The OpenAPI 3.1 document of the JSON API and the operator's routes, served at
 * `/api/v1/openapi.json`. It is written here by hand, apart from the route table, and a test
 * holds the two together: every route is in it with the same method, path, parameters, headers
 * and statuses, and nothing else is.
 */

type Json = null | boolean | number | string | readonly Json[] | { readonly [k: string]: Json };

const ERROR_TEXT: Readonly<Record<number, string>> = {
  400: "a bad parameter, header or query (code usage)",
  401: "no session, or an expired or invalid one (code unauthorized)",
  403: "the role may not do this, or the write came from another site (code forbidden)",
  404: "no such plugin or decision (code not_found)",
  409: "the state does not allow it (code conflict), an approval for a version that cannot run whatever is approved (code spec_invalid, signature_refused or config_refused: the blocker), or an uninstall while another instance runs the plugin's module (code plugin_pinned)",
  412: "the plugin changed since the If-Match version: nothing was changed (code precondition_failed)",
  413: "a body or query over its limit (code too_large)",
  415: "a body in a media type the route does not read (code unsupported_media_type)",
  422: "a document that does not parse or validate; field names the first problem (code invalid_resource)",
  428: "If-Match is required (code precondition_required)",
  500: "an internal failure (code internal)",
  503: "a deadline passed, too many streams, or the log does not hold (code unavailable or log_broken)",
};

function errors(...codes: number[]): Record<string, Json> {
  return Object.fromEntries(codes.map((c) => [String(c), { description: ERROR_TEXT[c] ?? "an error", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } }]));
}

const MINT_TEXT: Readonly<Record<number, string>> = {
  401: "no session, an invalid one, or a PluginToken (code unauthorized; reason the token's problem)",
  403: "the user may not view the plugin (code forbidden, reason can_view)",
  404: "no such installation, or no views run (code not_found)",
  409: "the installation is being deleted, or no view of it runs: its grant was revoked or narrowed (code conflict, reason deleting or view_not_running)",
};

/** A refusal of the mint: an error with the mint's finer reason. */
function mintErrors(...codes: number[]): Record<string, Json> {
  return Object.fromEntries(codes.map((c) => [String(c), { description: MINT_TEXT[c] ?? ERROR_TEXT[c] ?? "an error", content: { "application/json": { schema: { $ref: "#/components/schemas/MintRefusal" } } } }]));
}

function ok(description: string, schema: Json, headers?: Record<string, Json>): Record<string, Json> {
  return { 200: { description, content: { "application/json": { schema } }, ...(headers === undefined ? {} : { headers }) } };
}

function ref(name: string): Json {
  return { $ref: `#/components/parameters/${name}` };
}

const BASE = [400, 413, 500, 503];
const READ_ERRORS = [401, ...BASE];
const WRITE_ERRORS = [401, 403, ...BASE];
const SECURED = [{ bearer: [] }, { cookie: [] }];
const ETAG = { ETag: { description: "the plugin stream's version, to send back as If-Match", schema: { type: "string" } } };
const LOG_FILTERS = [ref("PluginFilter"), ref("Type"), ref("Since"), ref("Until"), ref("After")];
const obj = (properties: Record<string, Json>, required: string[] = []): Json => ({ type: "object", properties, required });

function get(summary: string, responses: Record<string, Json>, parameters: Json[] = [], security: Json = SECURED): Json {
  return { summary, parameters, responses, security };
}

const paths: Record<string, Record<string, Json>> = {
  "/api/v1/plugins": { get: get("every plugin", { ...ok("the plugins", obj({ plugins: { type: "array", items: { $ref: "#/components/schemas/PluginRow" } } }, ["plugins"])), ...errors(...READ_ERRORS) }) },
  "/api/v1/plugins/{name}": {
    get: get("one plugin", { ...ok("the plugin", { $ref: "#/components/schemas/PluginView" }, ETAG), ...errors(...READ_ERRORS, 404) }, [ref("Name")]),
    delete: { summary: "delete a Plugin", parameters: [ref("Name"), ref("IfMatchOptional")], responses: { ...ok("what was recorded", { $ref: "#/components/schemas/Deleted" }), ...errors(...WRITE_ERRORS, 404, 412) }, security: SECURED },
  },
  "/api/v1/plugins/{name}/timeline": { get: get("the plugin's events with their causes", { ...ok("a page", obj({ entries: { type: "array" }, next: { type: ["integer", "null"] } }, ["entries", "next"])), ...errors(...READ_ERRORS, 404) }, [ref("Name"), ref("After"), ref("Limit"), ref("Egress")]) },
  "/api/v1/plugins/{name}/why": { get: get("why the plugin runs what it runs", { ...ok("the answer", obj({ answer: { type: "object" }, sentences: { type: "array", items: { type: "string" } } }, ["answer", "sentences"])), ...errors(...READ_ERRORS, 404) }, [ref("Name")]) },
  "/api/v1/plugins/{name}/approve": {
    post: {
      summary: "approve exactly what is pending, at the If-Match version",
      parameters: [ref("Name"), ref("IfMatch")],
      responses: { ...ok("what was added", { $ref: "#/components/schemas/Approved" }, ETAG), ...errors(...WRITE_ERRORS, 404, 409, 412, 428) },
      security: SECURED,
    },
  },
  "/api/v1/plugins/{name}/uninstall": {
    post: {
      summary: "uninstall a plugin and leave nothing behind, as openfief delete --purge: the intent is recorded with the Plugin's and grant's deletion, and the reconciler removes its objects, its own Secrets and its module and records plugin.uninstalled",
      parameters: [ref("Name"), ref("IfMatchOptional")],
      responses: {
        202: { description: "the intent recorded (or, resumed, the open one); the reconciler carries it out", content: { "application/json": { schema: { $ref: "#/components/schemas/UninstallRequest" } } } },
        ...errors(...WRITE_ERRORS, 404, 409, 412),
      },
      security: SECURED,
    },
  },
  "/api/v1/pending": { get: get("every pending approval", { ...ok("the approvals", obj({ pending: { type: "array", items: { $ref: "#/components/schemas/PendingApproval" } } }, ["pending"])), ...errors(...READ_ERRORS) }) },
  "/api/v1/apply": {
    post: {
      summary: "record Plugin and PluginGrant documents",
      parameters: [],
      requestBody: { required: true, content: { "application/yaml": { schema: { type: "string" } }, "application/json": { schema: { type: "object" } } } },
      responses: { ...ok("what was recorded", obj({ applied: { type: "array" } }, ["applied"])), ...errors(...WRITE_ERRORS, 415, 422) },
      security: SECURED,
    },
  },
  "/api/v1/grants/{name}": { delete: { summary: "delete a PluginGrant", parameters: [ref("Name"), ref("IfMatchOptional")], responses: { ...ok("what was recorded", { $ref: "#/components/schemas/Deleted" }), ...errors(...WRITE_ERRORS, 404, 412) }, security: SECURED } },
  "/api/v1/events": { get: get("a page of the log", { ...ok("a page", obj({ events: { type: "array", items: { $ref: "#/components/schemas/Event" } }, next: { type: ["integer", "null"] }, head: { type: "integer" }, removed: { type: "object", description: "by seq, the removed instance an event of the page came from (name, how, seq, at, doneSeq, text); events of installed plugins are not in it" } }, ["events", "next", "head", "removed"])), ...errors(...READ_ERRORS) }, [...LOG_FILTERS, ref("Limit")]) },
  "/api/v1/events/stream": {
    get: {
      summary: "the log as server-sent events",
      parameters: [...LOG_FILTERS, ref("LastEventId")],
      responses: { 200: { description: "an event stream; each event's id is its seq and its data the event as JSON", content: { "text/event-stream": { schema: { type: "string" } } } }, ...errors(...READ_ERRORS) },
      security: SECURED,
    },
  },
  "/api/v1/replay": { get: get("the state as of a point", { ...ok("the state", { type: "object" }), ...errors(...READ_ERRORS) }, [ref("At")]) },
  "/api/v1/verify-log": { get: get("the hash chain and guards", { ...ok("the result", obj({ ok: { type: "boolean" }, chain: { type: "object" }, guards: { type: "object" } }, ["ok", "chain", "guards"])), ...errors(...READ_ERRORS) }) },
  "/api/v1/check-decisions": { get: get("the decisions re-checked", { ...ok("the result: each decision re-decided under the rules it names (divergences fail), and under today's rules when older (upgrades, apart)", obj({
    checked: { type: "integer" }, reproduced: { type: "integer" }, diverged: { type: "integer" }, upgraded: { type: "integer" },
    divergences: { type: "array", description: "decisions, and verdicts (family signature: the catalog part, from the catalog each cites; config; grant) the rules they name do not reproduce" }, upgrades: { type: "array" }, rules: { type: "object" }, notRedecided: { type: "object" },
    verdicts: { type: "integer", description: "verdicts re-decided: signature verdicts whose catalog part was re-decided from the catalog.observed each cites, config and grant verdicts" },
    verdictsDiverged: { type: "integer", description: "verdicts the rules they name do not reproduce" },
    verdictRules: { type: "object", description: "per verdict family (signature, config, grant): its rules today and the verdicts re-decided under each version" },
  }, ["checked", "reproduced", "diverged", "upgraded", "divergences", "upgrades", "rules", "notRedecided"])), ...errors(...READ_ERRORS) }) },
  "/api/v1/egress/decisions": { get: get("egress decisions", { ...ok("a page", obj({ decisions: { type: "array" }, next: { type: ["integer", "null"] } }, ["decisions", "next"])), ...errors(...READ_ERRORS) }, [ref("PluginFilter"), ref("Host"), ref("Outcome"), ref("After"), ref("Limit")]) },
  "/api/v1/egress/summary": { get: get("egress counted by destination and over time", { ...ok("the summary", { type: "object" }), ...errors(...READ_ERRORS) }, [ref("PluginFilter"), ref("Since"), ref("Until"), ref("Buckets")]) },
  "/api/v1/deliveries": { get: get("the deliveries kept, newest first; removed names the removed instance each came from (null while installed)", { ...ok("the deliveries", obj({ deliveries: { type: "array", items: { $ref: "#/components/schemas/Delivery" } } }, ["deliveries"])), ...errors(...READ_ERRORS) }, [ref("DeliveriesPlugin"), ref("Limit")]) },
  "/api/v1/deliveries/{batch}": { get: get("one delivery kept, with its contents", { ...ok("the delivery", { $ref: "#/components/schemas/Delivery" }), ...errors(...READ_ERRORS, 404) }, [ref("Batch")]) },
  "/api/v1/session": { get: get("the caller's session", { ...ok("the session", obj({ user: { type: "string" }, role: { enum: ["owner", "viewer"] }, expiresAt: { type: "string" }, signedInAt: { type: "string" } }, ["user", "role", "expiresAt"])), ...errors(...READ_ERRORS) }) },
  "/api/v1/plugin-tokens": {
    post: {
      summary: "a PluginToken for a view, acting as the session's user (15 minutes at most; mint again, never refresh)",
      requestBody: { required: true, content: { "application/json": { schema: obj({ installationId: { type: "string", maxLength: 80 } }, ["installationId"]) } } },
      responses: {
        ...ok("the token", obj({ token: { type: "string" }, expiresAt: { type: "string" }, installationId: { type: "string" } }, ["token", "expiresAt", "installationId"])),
        ...mintErrors(401, 403, 404, 409, 415, ...BASE),
      },
      security: SECURED,
    },
  },
  "/api/v1/log/key": { get: get("the log's verifier key (signed-note, <name>+<key ID>+<base64>) and its checkpoints' origin; needs no session", { ...ok("the key", obj({ origin: { type: "string" }, key: { type: "string" } }, ["origin", "key"])), ...errors(404, ...BASE) }, [], []) },
  "/api/v1/openapi.json": { get: get("this document", { ...ok("the document", { type: "object" }), ...errors(...BASE) }, [], []) },
  "/healthz": { get: get("liveness", { ...ok("the process answers", obj({ ok: { type: "boolean" } })), ...errors(...BASE) }, [], []) },
  "/readyz": { get: get("readiness (503 with reasons when not ready)", { ...ok("ready", obj({ ready: { type: "boolean" }, reasons: { type: "array", items: { type: "string" } } })), ...errors(...BASE) }, [], []) },
  "/metrics": { get: get("Prometheus metrics", { 200: { description: "Prometheus text format", content: { "text/plain": { schema: { type: "string" } } } }, ...errors(...BASE) }, [], []) },
};

const q = (name: string, description: string, schema: Json = { type: "string" }): Json => ({ name, in: "query", required: false, description, schema });

const parameters: Record<string, Json> = {
  Name: { name: "name", in: "path", required: true, description: "the plugin's name", schema: { type: "string", pattern: "^[a-z]([-a-z0-9]*[a-z0-9])?$", maxLength: 56 } },
  After: q("after", "only events after this sequence number (the previous page's next)", { type: "integer", minimum: 0 }),
  Limit: q("limit", "page size, 1 to 500 (default 100)", { type: "integer", minimum: 1, maximum: 500 }),
  Batch: { name: "batch", in: "path", required: true, description: "the batch ID", schema: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$" } },
  DeliveriesPlugin: q("plugin", "only this plugin's deliveries (those of its removed instances too)"),
  PluginFilter: q("plugin", "only this plugin's events (its own stream and its egress decisions)"),
  Type: { name: "type", in: "query", required: false, description: "only events of these types (repeatable)", schema: { type: "array", items: { type: "string" }, maxItems: 32 }, style: "form", explode: true },
  Since: q("since", "only events at or after this ISO-8601 time", { type: "string", format: "date-time" }),
  Until: q("until", "only events at or before this ISO-8601 time", { type: "string", format: "date-time" }),
  At: { name: "at", in: "query", required: true, description: "a sequence number, or an ISO-8601 time", schema: { type: "string" } },
  Host: q("host", "only decisions about this destination host", { type: "string", maxLength: 253 }),
  Outcome: q("outcome", "only allowed decisions, only those refused by policy, or only those that failed to reach their destination", { enum: ["allowed", "refused", "failed"] }),
  Buckets: q("buckets", "how many equal buckets of time (1 to 200, default 24)", { type: "integer", minimum: 1, maximum: 200 }),
  Egress: q("egress", "include the plugin's egress decisions", { enum: ["true", "false"] }),
  IfMatch: { name: "If-Match", in: "header", required: true, description: "the plugin's version the owner looked at (its ETag)", schema: { type: "string" } },
  IfMatchOptional: { name: "If-Match", in: "header", required: false, description: "the plugin's version the owner looked at; without it the write re-reads the facts", schema: { type: "string" } },
  LastEventId: { name: "Last-Event-ID", in: "header", required: false, description: "resume after this sequence number (sent by EventSource on reconnect)", schema: { type: "string" } },
};

const schemas: Record<string, Json> = {
  Delivery: obj({
    batchId: { type: "string" }, plugin: { type: "string" }, kind: { enum: ["sync", "import"] }, digest: { type: "string" }, recordedAt: { type: "string" }, counts: { type: "object" },
    delivery: { type: "object", description: "the delivery's contents (one delivery only)" },
    removed: { type: ["object", "null"], description: "the removed instance it came from: name, how (deleted or uninstalled), seq, at, doneSeq, text; null while its plugin is installed" },
  }, ["batchId", "plugin", "kind", "digest", "recordedAt", "counts", "removed"]),
  Error: obj({ code: { type: "string" }, message: { type: "string" }, field: { type: "string" } }, ["code", "message"]),
  MintRefusal: obj({ code: { type: "string" }, message: { type: "string" }, reason: { type: "string" }, field: { type: "string" } }, ["code", "message"]),
  PluginRow: obj({
    name: { type: "string" }, status: { enum: ["running", "held_back", "stopped", "deleted"] }, running: { type: ["string", "null"] }, asked: { type: ["string", "null"] },
    verdict: { type: ["string", "null"] }, signature: { type: ["object", "null"] }, pending: { type: "array", items: { type: "string" } }, problems: { type: "array" },
    blockers: { type: "array", items: { $ref: "#/components/schemas/Blocker" } }, deleted: { type: "boolean" }, version: { type: "integer" },
    decided: { type: ["object", "null"] }, target: { type: ["string", "null"] },
  }, ["name", "status", "running", "asked", "verdict", "signature", "pending", "problems", "blockers", "deleted", "version"]),
  Blocker: obj({ code: { enum: ["spec_invalid", "signature_refused", "config_mismatch"] }, errors: { type: "array" }, digest: { type: "string" }, reason: { type: ["string", "null"] }, image: { type: "string" } }, ["code"]),
  PendingApproval: obj({
    name: { type: "string" }, pending: { type: "object" }, text: { type: "string" }, grantAfter: { type: "object" }, version: { type: "integer" },
    blockers: { type: "array", items: { $ref: "#/components/schemas/Blocker" }, description: "what keeps the version from running whatever is approved; while any, approve refuses (409)" },
  }, ["name", "pending", "text", "grantAfter", "version", "blockers"]),
  PluginView: obj({
    name: { type: "string" }, version: { type: "integer" }, row: { $ref: "#/components/schemas/PluginRow" }, asked: { type: ["object", "null"] }, grant: { type: ["object", "null"] },
    running: { type: ["object", "null"] }, pending: { oneOf: [{ $ref: "#/components/schemas/PendingApproval" }, { type: "null" }] }, why: { type: ["object", "null"] }, timeline: { type: "object" },
  }, ["name", "version", "row"]),
  Approved: obj({
    name: { type: "string" }, approved: { type: "object" }, seq: { type: ["integer", "null"] }, version: { type: "integer" },
    secretRoles: { type: "array", items: obj({ role: { type: "string" }, secret: { type: "string" } }, ["role", "secret"]), description: "each Secret role approved now with the plugin's own Secret it mounts; absent when none" },
  }, ["name", "approved", "seq", "version"]),
  UninstallRequest: obj({
    name: { type: "string" }, seq: { type: "integer", description: "the plugin.uninstall.requested event" }, grant: { type: "boolean", description: "whether the grant goes" },
    secrets: { type: "array", items: { type: "string" }, description: "the Secrets that go" }, module: { type: ["string", "null"], description: "the module that goes" },
    resumed: { type: "boolean", description: "the log already held this intent, still open" },
  }, ["name", "seq", "grant", "secrets", "module", "resumed"]),
  Deleted: obj({ kind: { enum: ["plugin", "grant"] }, name: { type: "string" }, seq: { type: "integer" } }, ["kind", "name", "seq"]),
  Event: obj({
    seq: { type: "integer" }, stream: { type: "string" }, version: { type: "integer" }, type: { type: "string" }, schemaVersion: { type: "integer" }, time: { type: "string" },
    actor: { type: "string" }, causedBy: { type: ["integer", "null"] }, data: {}, prevHash: { type: "string" }, hash: { type: "string" },
  }, ["seq", "stream", "version", "type", "time", "actor", "causedBy", "data", "hash"]),
};

/** The document. */
export const OPENAPI = {
  openapi: "3.1.0",
  info: {
    title: "OpenFief control plane API",
    version: "1",
    description: "The owner's HTTP API: plugins, why, approvals, the decision log and its integrity, egress decisions. Errors are {code, message, field?}. Writes check Origin; approve needs If-Match.",
    license: { name: "AGPL-3.0-only", identifier: "AGPL-3.0-only" },
  },
  servers: [{ url: "/" }],
  paths,
  components: {
    parameters,
    schemas,
    securitySchemes: {
      bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "a session token (audience openfief-user) from openfief login" },
      cookie: { type: "apiKey", in: "cookie", name: "openfief_session", description: "the console's session cookie (__Host-openfief_session over TLS)" },
    },
  },
} as const;
