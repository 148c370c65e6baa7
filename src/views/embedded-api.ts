/**
 * The embedded default upstream's resources (docs/adr/0028): the control plane's own state served
 * the way kube-apiserver serves resources, read-only, so a view written against Kubernetes works
 * unchanged — `plugins`, `plugingrants` and the log's `events` in `openfief.io/v1alpha1`, namespace
 * `openfief`, with discovery, get, list (field and label selectors, `limit` and `continue` for
 * events) and watch (from a `resourceVersion`, which is a log seq). Lists and watches are served
 * exactly the selection the gateway authorised (`served.ts`: a name in a watch's path is a
 * `metadata.name` field selector), because a rule with `resourceNames` admits a list or watch only
 * when it names the object; a named list or watch never sees another object (docs/adr/0093).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { pluginStream } from "../events/index.js";
import type { EventLog, KnownEvent } from "../events/index.js";
import { API_GROUP, API_VERSION, NAMESPACE } from "../plugins/index.js";
import type { RolloutPlanJSON } from "../plugins/index.js";
import { goParseInt64, parseRequestTarget } from "./go-url.js";
import { sendJson, statusBody } from "./http.js";
import { LogInstallations } from "./installations.js";
import type { RequestAttributes, ResourceAttributes } from "./request-info.js";
import { labelsMatch, parseFieldSelector, parseLabelSelector } from "./selectors.js";
import { selectionOf } from "./served.js";
import type { Selection } from "./served.js";
import type { FieldTerm, LabelRequirement } from "./selectors.js";

const GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;
/** The most events one list answers; the rest comes with `continue`. */
export const EVENTS_PAGE = 1000;
/** The longest watch, in seconds. */
export const MAX_WATCH_SECONDS = 3600;

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace: string; resourceVersion: string; labels?: Record<string, string>; [k: string]: unknown }; [k: string]: unknown };

interface Kind {
  readonly plural: string;
  readonly kind: string;
  readonly singular: string;
}
const KINDS: readonly Kind[] = [
  { plural: "plugins", kind: "Plugin", singular: "plugin" },
  { plural: "plugingrants", kind: "PluginGrant", singular: "plugingrant" },
  { plural: "events", kind: "Event", singular: "event" },
];

function rec(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** A Kubernetes NotFound, worded as kube-apiserver words it. */
function notFound(kind: Kind, name: string): Record<string, unknown> {
  return { ...statusBody(404, `${kind.plural}.${API_GROUP} "${name}" not found`), details: { name, group: API_GROUP, kind: kind.plural } };
}

/** The kind a request names, or the status that refuses it (404 not served here, 405 not read-only). */
function kindOf(a: ResourceAttributes): Kind | 404 | 405 {
  if (a.apiPrefix !== "apis" || a.apiGroup !== API_GROUP || a.apiVersion !== API_VERSION) return 404;
  const kind = KINDS.find((k) => k.plural === a.resource);
  if (kind === undefined || a.subresource !== "" || a.parts.length > 2) return 404;
  return a.verb === "get" || a.verb === "list" || a.verb === "watch" ? kind : 405;
}

/** A list's page from `limit` and `continue`, or why they do not read. */
function pageOf(limitText: string | undefined, cont: string | undefined): { after: number; limit: number | null } | string {
  const limit = limitText === undefined ? null : goParseInt64(limitText);
  if (limitText !== undefined && limit === null) return "limit must be an integer";
  const after = cont === undefined || cont === "" ? 0 : Number(cont);
  if (!Number.isSafeInteger(after) || after < 0) return "continue is not one this server gave";
  const capped = limit === null || limit <= 0n ? null : Number(limit < BigInt(EVENTS_PAGE) ? limit : BigInt(EVENTS_PAGE));
  return { after, limit: capped };
}

/** One watch to serve. */
interface WatchRequest {
  readonly kind: Kind;
  readonly match: (o: Obj) => boolean;
  readonly rv: string | undefined;
  readonly timeout: string | undefined;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly headers: Readonly<Record<string, string>>;
  readonly signal: AbortSignal | undefined;
}

/** One request the gateway let through, as {@link EmbeddedApi.serve} takes it. */
export interface EmbeddedRequest {
  readonly attributes: RequestAttributes;
  /** The raw Kubernetes request target. */
  readonly target: string;
  /** What a list or watch may be served; computed from the request when not given. */
  readonly served?: Selection | null;
  readonly responseHeaders: Readonly<Record<string, string>>;
  /** Aborted when the gateway ends the request: a watch then ends. */
  readonly signal?: AbortSignal;
}

/** Serves the embedded resources to requests that passed the gateway's gates. */
export class EmbeddedApi {
  readonly #store: EventLog;
  readonly #installations: LogInstallations;

  constructor(store: EventLog) {
    this.#store = store;
    this.#installations = new LogInstallations(store);
  }

  /** Every plugin stream and the seq of its latest event, by name. */
  #streams(): Promise<{ readonly stream: string; readonly seq: number }[]> {
    return this.#store.lookups.streamHeads("plugin/");
  }

  /** Answers one request. */
  async serve(r: EmbeddedRequest, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { attributes: a, target, responseHeaders: headers } = r;
    const send = (status: number, body: unknown): void => {
      if (req.method === "HEAD") {
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end();
      } else sendJson(res, status, body, { ...headers });
    };
    if (a.kind === "nonResource") return this.#nonResource(a.verb, a.path, send);
    const kind = kindOf(a);
    if (typeof kind === "number") return send(kind, statusBody(kind, kind === 405 ? `the embedded API is read-only: ${a.verb} is not served` : "the server could not find the requested resource"));
    const t = parseRequestTarget(target);
    if (!t.ok) return send(400, statusBody(400, "the request target cannot be read"));
    const q = t.value.query;
    const first = (k: string): string | undefined => q.get(k)?.[0];
    // A named get (the path names the object); a watch or list may name it too, in a field selector.
    if (a.verb === "get") {
      const obj = a.namespace === "" || a.namespace === NAMESPACE ? await this.#get(kind, a.name) : null;
      return obj === null ? send(404, notFound(kind, a.name)) : send(200, obj);
    }
    const filter = this.#filter(r.served ?? selectionOf(a, q), a);
    if (!filter.ok) return send(400, statusBody(400, filter.message));
    if (a.verb === "watch") return this.#watch({ kind, match: filter.match, rv: first("resourceVersion"), timeout: first("timeoutSeconds"), req, res, headers, signal: r.signal });
    const page = pageOf(first("limit"), first("continue"));
    if (typeof page === "string") return send(400, statusBody(400, page));
    const head = await this.#store.head();
    const list = await this.#list(kind, a.namespace, page.after, page.limit);
    const metadata: Record<string, string> = { resourceVersion: String(head) };
    if (list.continue !== null) metadata["continue"] = list.continue;
    send(200, { apiVersion: GROUP_VERSION, kind: `${kind.kind}List`, metadata, items: list.items.filter(filter.match) });
  }

  #nonResource(verb: string, path: string, send: (status: number, body: unknown) => void): void {
    if (verb !== "get" && verb !== "head") return send(405, statusBody(405, "the embedded API is read-only"));
    const doc = this.#discovery(path.replace(/\/+$/, ""));
    return doc === null ? send(404, statusBody(404, "the server could not find the requested resource")) : send(200, doc);
  }

  #discovery(path: string): unknown {
    const group = { name: API_GROUP, versions: [{ groupVersion: GROUP_VERSION, version: API_VERSION }], preferredVersion: { groupVersion: GROUP_VERSION, version: API_VERSION } };
    if (path === "/apis") return { kind: "APIGroupList", apiVersion: "v1", groups: [group] };
    if (path === `/apis/${API_GROUP}`) return { kind: "APIGroup", apiVersion: "v1", ...group };
    if (path === `/apis/${GROUP_VERSION}`) {
      return {
        kind: "APIResourceList", apiVersion: "v1", groupVersion: GROUP_VERSION,
        resources: KINDS.map((k) => ({ name: k.plural, singularName: k.singular, namespaced: true, kind: k.kind, verbs: ["get", "list", "watch"] })),
      };
    }
    if (path === "/api") return { kind: "APIVersions", versions: [] };
    return null;
  }

  /** The match of a selection (the gateway's, or one read from the request when none is given). */
  #filter(given: Selection | ReturnType<typeof selectionOf>, a: ResourceAttributes): { ok: true; match: (o: Obj) => boolean } | { ok: false; message: string } {
    if ("ok" in given && !given.ok) return { ok: false, message: given.problem.message };
    const served = "ok" in given ? given.value : given;
    if (served === null) return { ok: false, message: `${a.verb} is not served` };
    const { fieldSelector, labelSelector } = served;
    let terms: FieldTerm[] = [];
    if (fieldSelector !== "") {
      const parsed = parseFieldSelector(fieldSelector);
      if (parsed === null) return { ok: false, message: `invalid field selector "${fieldSelector.slice(0, 200)}"` };
      const bad = parsed.find((t) => t.field !== "metadata.name" && t.field !== "metadata.namespace");
      if (bad !== undefined) return { ok: false, message: `field label not supported: ${bad.field.slice(0, 200)}` };
      terms = parsed;
    }
    let labels: LabelRequirement[] = [];
    if (labelSelector !== "") {
      const parsed = parseLabelSelector(labelSelector);
      if (parsed === null) return { ok: false, message: `unable to parse requirement: "${labelSelector.slice(0, 200)}"` };
      labels = parsed;
    }
    const namespace = a.namespace;
    // Whatever the selectors say, a named list or watch sees only the object it named.
    const name = served.name === "" ? a.name : served.name;
    return {
      ok: true,
      match: (o) =>
        (name === "" || o.metadata.name === name) &&
        (namespace === "" || o.metadata.namespace === namespace) &&
        terms.every((t) => {
          const v = t.field === "metadata.name" ? o.metadata.name : o.metadata.namespace;
          return t.op === "=" ? v === t.value : v !== t.value;
        }) &&
        labelsMatch(labels, o.metadata.labels ?? {}),
    };
  }

  async #get(kind: Kind, name: string): Promise<Obj | null> {
    if (kind.plural === "events") {
      if (!/^[1-9][0-9]{0,15}$/.test(name)) return null;
      const e = await this.#store.get(Number(name));
      return e === null ? null : eventObject(e);
    }
    return kind.plural === "plugins" ? this.#plugin(name) : this.#grant(name);
  }

  async #list(kind: Kind, namespace: string, after: number, limit: number | null): Promise<{ items: Obj[]; continue: string | null }> {
    if (namespace !== "" && namespace !== NAMESPACE) return { items: [], continue: null };
    if (kind.plural === "events") {
      const page = limit ?? EVENTS_PAGE;
      const events = await this.#store.read({ afterSeq: after, limit: page + 1 });
      const items = events.slice(0, page).map(eventObject);
      return { items, continue: events.length > page ? String(items[items.length - 1]?.metadata.resourceVersion ?? after) : null };
    }
    const items: Obj[] = [];
    for (const { stream } of await this.#streams()) {
      const name = stream.slice("plugin/".length);
      const obj = kind.plural === "plugins" ? await this.#plugin(name) : await this.#grant(name);
      if (obj !== null) items.push(obj);
    }
    return { items, continue: null };
  }

  async #plugin(name: string): Promise<Obj | null> {
    const stream = pluginStream(name);
    const observed = await this.#store.last(stream, "plugin.observed");
    const deleted = await this.#store.last(stream, "plugin.deleted");
    if (observed === null || (deleted !== null && deleted.seq > observed.seq)) return null;
    const latest = (await this.#store.last(stream))?.seq ?? observed.seq;
    const plan = (await this.#store.last(stream, "rollout.decided"))?.data.plan ?? null;
    const installation = await this.#installations.byName(name);
    return {
      apiVersion: GROUP_VERSION, kind: "Plugin",
      metadata: { name, namespace: NAMESPACE, uid: installation?.id ?? "", resourceVersion: String(latest), creationTimestamp: observed.time },
      spec: observed.data.spec,
      status: pluginStatus(plan, installation?.state ?? "inactive"),
    };
  }

  async #grant(name: string): Promise<Obj | null> {
    const stream = pluginStream(name);
    const granted = await this.#store.last(stream, "grant.observed");
    const revoked = await this.#store.last(stream, "grant.deleted");
    if (granted === null || (revoked !== null && revoked.seq > granted.seq)) return null;
    return { apiVersion: GROUP_VERSION, kind: "PluginGrant", metadata: { name, namespace: NAMESPACE, resourceVersion: String(granted.seq), creationTimestamp: granted.time }, spec: granted.data.spec };
  }

  #watch({ kind, match, rv, timeout, req, res, headers, signal }: WatchRequest): void {
    const from = rv === undefined || rv === "" || rv === "0" ? null : Number(rv);
    if (from !== null && (!Number.isSafeInteger(from) || from < 0)) {
      sendJson(res, 400, statusBody(400, "resourceVersion must be one this server gave"), { ...headers });
      return;
    }
    const seconds = Math.min(MAX_WATCH_SECONDS, timeout === undefined ? 1800 : Math.max(1, Number(goParseInt64(timeout) ?? 1800n)));
    res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store", "x-content-type-options": "nosniff", ...headers });
    res.flushHeaders();
    const known = new Set<string>();
    let queue = Promise.resolve();
    const send = (type: "ADDED" | "MODIFIED" | "DELETED", obj: Obj): void => {
      if (!match(obj)) return;
      res.write(`${JSON.stringify({ type, object: obj })}\n`);
    };
    const emitName = async (name: string): Promise<void> => {
      const obj = kind.plural === "plugins" ? await this.#plugin(name) : await this.#grant(name);
      if (obj !== null) {
        send(known.has(name) ? "MODIFIED" : "ADDED", obj);
        known.add(name);
      } else if (known.has(name)) {
        known.delete(name);
        send("DELETED", { apiVersion: GROUP_VERSION, kind: kind.kind, metadata: { name, namespace: NAMESPACE, resourceVersion: String(await this.#store.head()) } });
      }
    };
    const onEvents = (events: readonly KnownEvent[]): void => {
      queue = queue.then(async () => {
        if (res.writableEnded) return;
        if (kind.plural === "events") {
          for (const e of events) send("ADDED", eventObject(e));
          return;
        }
        const names = new Set<string>();
        for (const e of events) if (e.stream.startsWith("plugin/") && relevant(kind, e.type)) names.add(e.stream.slice("plugin/".length));
        for (const n of names) await emitName(n);
      });
    };
    const unsubscribe = this.#store.subscribe(onEvents);
    const stop = (): void => {
      clearTimeout(timer);
      unsubscribe();
      if (!res.writableEnded) res.end();
    };
    const timer = setTimeout(stop, seconds * 1000);
    req.on("close", stop);
    res.on("close", stop);
    if (signal !== undefined) {
      if (signal.aborted) queueMicrotask(stop);
      else signal.addEventListener("abort", stop, { once: true });
    }
    // The start: everything there is (no resourceVersion), or what changed after it.
    queue = queue.then(async () => {
      if (kind.plural === "events") {
        const start = from ?? Math.max(0, (await this.#store.head()) - EVENTS_PAGE);
        for (const e of await this.#store.read({ afterSeq: start, limit: EVENTS_PAGE })) send("ADDED", eventObject(e));
        return;
      }
      for (const { stream, seq } of await this.#streams()) {
        const name = stream.slice("plugin/".length);
        if (from !== null) {
          const obj = kind.plural === "plugins" ? await this.#plugin(name) : await this.#grant(name);
          if (seq <= from) {
            if (obj !== null) known.add(name);
            continue;
          }
          // Changed since: the client may hold it, so it is MODIFIED, or DELETED when gone.
          known.add(name);
        }
        await emitName(name);
      }
    });
  }
}

/** A Plugin object's status: the latest decision's outcome, what it runs, what waits, the view's state. */
function pluginStatus(plan: RolloutPlanJSON | null, view: string): Record<string, unknown> {
  if (plan === null) return { outcome: null, deployed: null, pendingApproval: null, view };
  return { outcome: plan.outcome, deployed: plan.run === null ? null : { image: plan.run.image }, pendingApproval: plan.pending, view };
}

function relevant(kind: Kind, type: string): boolean {
  if (kind.plural === "plugins") return type === "plugin.observed" || type === "plugin.deleted" || type === "rollout.decided";
  return type === "grant.observed" || type === "grant.deleted";
}

function eventObject(e: KnownEvent): Obj {
  return {
    apiVersion: GROUP_VERSION, kind: "Event",
    metadata: { name: String(e.seq), namespace: NAMESPACE, resourceVersion: String(e.seq), creationTimestamp: e.time },
    spec: { seq: e.seq, stream: e.stream, type: e.type, schemaVersion: e.schemaVersion, time: e.time, actor: e.actor, causedBy: e.causedBy, data: rec(e.data), hash: e.hash },
  };
}
