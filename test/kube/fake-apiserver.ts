/**
 * A fake Kubernetes API server on 127.0.0.1 that the real @kubernetes/client-node talks HTTP to.
 * No API server can run on these machines (STACK.md), so this models just enough of one:
 * discovery, list with resourceVersion, watch streams (with scriptable failures), create, replace
 * with optimistic concurrency, JSON merge patch, server-side apply with a simple per-manager field
 * ownership model, the status subresource, owner-reference garbage collection, and a request log.
 *
 * For the view gateway it also answers SubjectAccessReviews and TokenRequests, and enforces RBAC
 * (ClusterRoleBindings, and RoleBindings within their namespace) on the tokens its TokenRequests issued and on impersonated requests (`Impersonate-User`, each
 * `Impersonate-Group`); merge patches and creates honour `dryRun=All`: the ClusterRoles and ClusterRoleBindings it stores are
 * evaluated with Kubernetes' semantics (the gateway's own RequestInfo and matcher), plus the
 * discovery rule real clusters bind to every authenticated user. pods/exec, attach and portforward
 * answer an upgrade by echoing what they receive.
 *
 * The ownership model: each manager owns a set of field paths. A path is `data.<key>` (also
 * `binaryData`, `stringData`), `metadata.labels.<key>`, `metadata.annotations.<key>`,
 * `metadata.ownerReferences`, or a whole top-level field (`spec`, `status`, ...). That is what the
 * tests need: one plugin's apply to the allow-list ConfigMap never removes another plugin's key,
 * and a manager's apply that omits a field it owned removes it (unless another manager owns it).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";
import { DISCOVERY_RULES, requestInfo, rulesAllow } from "../../src/views/index.js";
import type { RequestAttributes } from "../../src/views/index.js";
import { parsePolicyRules } from "../../src/plugins/index.js";
import type { PolicyRule } from "../../src/plugins/index.js";

/** A resource the fake serves. */
export interface FakeResource {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly status?: boolean;
  readonly verbs?: readonly string[];
}

const ALL_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"] as const;

/** Everything OpenFief's operator and proxy talk to. */
export const FAKE_RESOURCES: readonly FakeResource[] = [
  { group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true },
  { group: "", version: "v1", kind: "ServiceAccount", plural: "serviceaccounts", namespaced: true },
  { group: "", version: "v1", kind: "Service", plural: "services", namespaced: true, status: true },
  { group: "", version: "v1", kind: "Secret", plural: "secrets", namespaced: true },
  { group: "apps", version: "v1", kind: "Deployment", plural: "deployments", namespaced: true, status: true },
  { group: "networking.k8s.io", version: "v1", kind: "NetworkPolicy", plural: "networkpolicies", namespaced: true },
  { group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases", namespaced: true },
  { group: "authentication.k8s.io", version: "v1", kind: "TokenReview", plural: "tokenreviews", namespaced: false, verbs: ["create"] },
  { group: "", version: "v1", kind: "Pod", plural: "pods", namespaced: true, status: true },
  { group: "authorization.k8s.io", version: "v1", kind: "SubjectAccessReview", plural: "subjectaccessreviews", namespaced: false, verbs: ["create"] },
  { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRole", plural: "clusterroles", namespaced: false },
  { group: "rbac.authorization.k8s.io", version: "v1", kind: "ClusterRoleBinding", plural: "clusterrolebindings", namespaced: false },
  { group: "rbac.authorization.k8s.io", version: "v1", kind: "Role", plural: "roles", namespaced: true },
  { group: "rbac.authorization.k8s.io", version: "v1", kind: "RoleBinding", plural: "rolebindings", namespaced: true },
  { group: "openfief.io", version: "v1alpha1", kind: "Plugin", plural: "plugins", namespaced: true, status: true },
  { group: "openfief.io", version: "v1alpha1", kind: "PluginGrant", plural: "plugingrants", namespaced: true, status: true },
];

/** One request as the server saw it. */
export interface LoggedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly contentType: string | undefined;
  readonly body: unknown;
  /** The bearer token the client sent: tells replicas apart (each gets its own {@link FakeApiServer.kubeConfig}). */
  readonly client: string | undefined;
  /** Every header as received. */
  readonly headers: IncomingMessage["headers"];
  /** The headers as sent, name and value alternating (repeated headers stay apart: `Impersonate-Group`). */
  readonly rawHeaders?: readonly string[];
}

/** What the next watch request on a resource gets instead of a normal stream. */
export type WatchFault = "500" | "410" | "drop";

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

interface Stored {
  readonly res: FakeResource;
  obj: Obj;
  /** manager -> owned field paths */
  managers: Map<string, Set<string>>;
}

interface WatchEvent {
  readonly rv: number;
  readonly res: FakeResource;
  readonly namespace: string;
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly obj: Obj;
}

interface Watcher {
  readonly res: FakeResource;
  readonly namespace: string | undefined;
  readonly labelSelector: string | undefined;
  readonly fieldSelector: string | undefined;
  readonly response: ServerResponse;
  readonly socket: Socket;
  silent: boolean;
}

/** Per-object fields split so ConfigMap keys and labels are owned one by one. */
const KEYED_TOP = new Set(["data", "binaryData", "stringData"]);
const KEYED_META = new Set(["labels", "annotations"]);

/** The fake API server. Start with {@link FakeApiServer.start}; close with {@link close}. */
export class FakeApiServer {
  /** Every request, in order. */
  readonly requests: LoggedRequest[] = [];
  /** How TokenReviews are answered; the default authenticates nobody. */
  tokenReviewer: (token: string, audiences: readonly string[]) => Record<string, unknown> = () => ({ authenticated: false });
  /** How SubjectAccessReviews are answered; the default evaluates the stored RBAC objects. */
  accessReviewer: (spec: Record<string, unknown>) => Record<string, unknown> = (spec) => this.#reviewSpec(spec);
  /** Answers a request before the server does when it returns a status and body (scripted failures); null lets it through. */
  interceptor: (req: LoggedRequest) => { status: number; body: unknown } | null = () => null;
  /** The clock of issued tokens' expiry (ms since the epoch). */
  clock: () => number = Date.now;
  /**
   * Signs the tokens TokenRequests issue as the cluster would (a JWT with `sub`, `aud` and `exp`),
   * when set: the token plugins and the plugin host verify against the cluster's published keys.
   * Unset, a token is an opaque `fake-sa.…` string.
   */
  tokenSigner: ((t: { readonly subject: string; readonly audiences: readonly string[]; readonly expiresAt: number }) => Promise<string>) | undefined = undefined;
  /** The tokens TokenRequests issued, and whom each authenticates. */
  readonly issuedTokens = new Map<string, { user: string; groups: string[]; expiresAt: number }>();

  readonly #server: Server;
  readonly #store = new Map<string, Stored>();
  readonly #events: WatchEvent[] = [];
  readonly #watchers = new Set<Watcher>();
  readonly #faults = new Map<string, WatchFault[]>();
  readonly #sockets = new Set<Socket>();
  #rv = 100;
  /** Watches from a resourceVersion older than this get ERROR 410 Gone. */
  #compactedBefore = 0;

  private constructor(server: Server) {
    this.#server = server;
  }

  /** Starts a fake API server on 127.0.0.1 and an ephemeral port. */
  static async start(): Promise<FakeApiServer> {
    const server = createServer();
    const fake = new FakeApiServer(server);
    server.on("request", (req, res) => fake.#handle(req, res));
    server.on("upgrade", (req, socket, head) => fake.#upgrade(req, socket as Socket, head));
    server.on("connection", (socket) => {
      fake.#sockets.add(socket);
      socket.on("close", () => fake.#sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** The server's base URL. */
  get url(): string {
    const addr = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${addr.port}`;
  }

  /** A KubeConfig pointing at this server with a dummy bearer token (default `fake-token`) and namespace openfief. */
  kubeConfig(token = "fake-token"): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "fake", server: this.url, skipTLSVerify: true }],
      users: [{ name: "tester", token }],
      contexts: [{ name: "fake", cluster: "fake", user: "tester", namespace: "openfief" }],
      currentContext: "fake",
    });
    return kc;
  }

  /** Stops the server and every open watch. */
  async close(): Promise<void> {
    for (const w of this.#watchers) w.response.destroy();
    this.#watchers.clear();
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  // ---- scripting -------------------------------------------------------------------------------

  /** The next watch request on `plural` fails this way (queued; one fault per request). */
  failNextWatch(plural: string, fault: WatchFault): void {
    const list = this.#faults.get(plural) ?? [];
    list.push(fault);
    this.#faults.set(plural, list);
  }

  /** Sends `ERROR` 410 Gone to every open watch on `plural` and ends those streams. */
  expireWatches(plural: string): void {
    this.#compactedBefore = this.#rv + 1;
    for (const w of [...this.#watchers]) {
      if (w.res.plural !== plural) continue;
      const status = statusBody(410, "Expired", "too old resource version");
      w.response.write(JSON.stringify({ type: "ERROR", object: status }) + "\n");
      w.response.end();
      this.#watchers.delete(w);
    }
  }

  /** Destroys the TCP connection of every open watch on `plural`, mid-stream. */
  dropWatches(plural: string): void {
    for (const w of [...this.#watchers]) {
      if (w.res.plural !== plural) continue;
      this.#watchers.delete(w);
      w.socket.destroy();
    }
  }

  /** Open watches on `plural` stop receiving events but stay open: a half-open connection. */
  silenceWatches(plural: string): void {
    for (const w of this.#watchers) if (w.res.plural === plural) w.silent = true;
  }

  /** How many watches are open on `plural`. */
  openWatches(plural: string): number {
    return [...this.#watchers].filter((w) => w.res.plural === plural && !w.silent).length;
  }

  // ---- direct store access for tests ------------------------------------------------------------

  /** Creates or replaces an object as an owner with kubectl would (manager `kubectl`), emitting watch events. */
  put(obj: Record<string, unknown>): Obj {
    const res = resourceFor(String(obj["apiVersion"]), String(obj["kind"]));
    const meta = (obj["metadata"] ?? {}) as Record<string, unknown>;
    const ns = res.namespaced ? String(meta["namespace"] ?? "default") : "";
    const key = storeKey(res, ns, String(meta["name"]));
    const existing = this.#store.get(key);
    const next = structuredClone(obj) as Obj;
    if (existing === undefined) {
      this.#create(res, ns, next, "kubectl");
    } else {
      next.metadata = { ...existing.obj.metadata, ...next.metadata };
      if (res.status === true && next["status"] === undefined && existing.obj["status"] !== undefined) next["status"] = existing.obj["status"];
      if (JSON.stringify(next["spec"]) !== JSON.stringify(existing.obj["spec"])) next.metadata["generation"] = Number(existing.obj.metadata["generation"] ?? 1) + 1;
      existing.obj = next;
      this.#touch(existing, "MODIFIED");
    }
    return this.get(String(obj["apiVersion"]), String(obj["kind"]), ns, String(meta["name"])) as Obj;
  }

  /** A copy of the stored object, or undefined. */
  get(apiVersion: string, kind: string, namespace: string, name: string): Obj | undefined {
    const res = resourceFor(apiVersion, kind);
    const s = this.#store.get(storeKey(res, res.namespaced ? namespace : "", name));
    return s === undefined ? undefined : structuredClone(s.obj);
  }

  /** Every stored object of a kind in a namespace, sorted by name. */
  list(apiVersion: string, kind: string, namespace: string): Obj[] {
    const res = resourceFor(apiVersion, kind);
    return [...this.#store.values()]
      .filter((s) => s.res === res && (!res.namespaced || s.obj.metadata["namespace"] === namespace))
      .map((s) => structuredClone(s.obj))
      .sort((a, b) => String(a.metadata["name"]).localeCompare(String(b.metadata["name"])));
  }

  /** The field paths each manager owns on an object. */
  managers(apiVersion: string, kind: string, namespace: string, name: string): Record<string, string[]> {
    const res = resourceFor(apiVersion, kind);
    const s = this.#store.get(storeKey(res, res.namespaced ? namespace : "", name));
    const out: Record<string, string[]> = {};
    for (const [m, fields] of s?.managers ?? []) out[m] = [...fields].sort();
    return out;
  }

  /** Deletes an object as a user would, with owner-reference garbage collection. */
  remove(apiVersion: string, kind: string, namespace: string, name: string): boolean {
    const res = resourceFor(apiVersion, kind);
    return this.#delete(storeKey(res, res.namespaced ? namespace : "", name));
  }

  /** Requests matching a method and a path prefix. */
  requestsTo(method: string, pathPrefix: string): LoggedRequest[] {
    return this.requests.filter((r) => r.method === method && r.path.startsWith(pathPrefix));
  }

  // ---- HTTP ------------------------------------------------------------------------------------

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const query: Record<string, string> = {};
      for (const [k, v] of url.searchParams) query[k] = v;
      const text = Buffer.concat(chunks).toString("utf8");
      const contentType = req.headers["content-type"];
      let body: unknown = undefined;
      if (text !== "") {
        try {
          body = contentType?.includes("yaml") ? parseYaml(text) : JSON.parse(text);
        } catch {
          body = text;
        }
      }
      const method = req.method ?? "GET";
      const auth = req.headers.authorization;
      const client = auth?.startsWith("Bearer ") === true ? auth.slice("Bearer ".length) : undefined;
      const logged: LoggedRequest = { method, path: url.pathname, query, contentType, body, client, headers: req.headers, rawHeaders: [...req.rawHeaders] };
      this.requests.push(logged);
      const scripted = this.interceptor(logged);
      if (scripted !== null) return send(res, scripted.status, scripted.body);
      const refusal = this.#authorize(method, req.url ?? "/", client) ?? this.#authorizeImpersonated(method, req);
      if (refusal !== null) return send(res, 403, statusBody(403, "Forbidden", refusal));
      try {
        this.#route(method, url.pathname, query, contentType, body, req, res);
      } catch (err) {
        send(res, 500, statusBody(500, "InternalError", err instanceof Error ? err.message : String(err)));
      }
    });
  }

  #route(
    method: string,
    path: string,
    query: Record<string, string>,
    contentType: string | undefined,
    body: unknown,
    req: IncomingMessage,
    res: ServerResponse,
  ): void {
    if (method === "GET" && path === "/api") return send(res, 200, { kind: "APIVersions", versions: ["v1"] });
    if (method === "GET" && path === "/apis") return send(res, 200, apiGroupList());
    const parts = path.split("/").filter((p) => p !== "");
    let group: string;
    let version: string;
    let rest: string[];
    if (parts[0] === "api" && parts[1] !== undefined) {
      group = "";
      version = parts[1];
      rest = parts.slice(2);
    } else if (parts[0] === "apis" && parts[1] !== undefined && parts[2] !== undefined) {
      group = parts[1];
      version = parts[2];
      rest = parts.slice(3);
    } else {
      return send(res, 404, statusBody(404, "NotFound", `no route for ${path}`));
    }
    const resources = FAKE_RESOURCES.filter((r) => r.group === group && r.version === version);
    if (resources.length === 0) return send(res, 404, statusBody(404, "NotFound", `unknown group version ${group}/${version}`));
    if (rest.length === 0 && method === "GET") return send(res, 200, resourceList(group, version, resources));
    let namespace: string | undefined;
    if (rest[0] === "namespaces" && rest.length >= 3) {
      namespace = decodeURIComponent(rest[1] ?? "");
      rest = rest.slice(2);
    }
    const [plural, rawName, sub] = rest;
    const resource = resources.find((r) => r.plural === plural);
    if (resource === undefined) return send(res, 404, statusBody(404, "NotFound", `unknown resource ${plural ?? ""}`));
    if (resource.namespaced && namespace === undefined && rawName !== undefined) {
      return send(res, 404, statusBody(404, "NotFound", "namespaced resource needs a namespace"));
    }
    const ns = resource.namespaced ? (namespace ?? "") : "";
    const name = rawName === undefined ? undefined : decodeURIComponent(rawName);
    if (resource.plural === "serviceaccounts" && sub === "token" && name !== undefined && method === "POST") return this.#tokenRequest(ns, name, body, res);
    if (sub !== undefined && (sub !== "status" || resource.status !== true)) {
      return send(res, 404, statusBody(404, "NotFound", `no subresource ${sub}`));
    }

    if (name === undefined) {
      if (method === "GET" && query["watch"] === "true") return this.#watch(resource, namespace, query, req, res);
      if (method === "GET") return send(res, 200, this.#list(resource, namespace, query));
      if (method === "POST") return this.#post(resource, ns, body, query, res);
      return send(res, 405, statusBody(405, "MethodNotAllowed", method));
    }
    const key = storeKey(resource, ns, name);
    const stored = this.#store.get(key);
    switch (method) {
      case "GET":
        if (stored === undefined) return send(res, 404, notFound(resource, name));
        return send(res, 200, stored.obj);
      case "DELETE":
        if (stored === undefined) return send(res, 404, notFound(resource, name));
        {
          const copy = structuredClone(stored.obj);
          this.#delete(key);
          return send(res, 200, copy);
        }
      case "PUT":
        return this.#put(resource, ns, name, stored, body, sub === "status", res);
      case "PATCH":
        return this.#patch(resource, ns, name, stored, body, contentType, query, sub === "status", res);
      default:
        return send(res, 405, statusBody(405, "MethodNotAllowed", method));
    }
  }

  #list(res: FakeResource, namespace: string | undefined, query: Record<string, string>): Record<string, unknown> {
    const items = [...this.#store.values()]
      .filter((s) => s.res === res && (namespace === undefined || s.obj.metadata["namespace"] === namespace))
      .map((s) => s.obj)
      .filter((o) => matchesSelectors(o, query["labelSelector"], query["fieldSelector"]))
      .sort((a, b) => String(a.metadata["name"]).localeCompare(String(b.metadata["name"])));
    return {
      apiVersion: apiVersionOf(res),
      kind: `${res.kind}List`,
      metadata: { resourceVersion: String(this.#rv) },
      items,
    };
  }

  #watch(res: FakeResource, namespace: string | undefined, query: Record<string, string>, req: IncomingMessage, response: ServerResponse): void {
    const faults = this.#faults.get(res.plural);
    const fault = faults?.shift();
    if (fault === "500") return send(response, 500, statusBody(500, "InternalError", "scripted failure"));
    response.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    response.flushHeaders();
    const from = Number(query["resourceVersion"] ?? "0");
    if (fault === "410" || (from > 0 && from < this.#compactedBefore)) {
      response.end(JSON.stringify({ type: "ERROR", object: statusBody(410, "Expired", "too old resource version") }) + "\n");
      return;
    }
    if (fault === "drop") {
      req.socket.destroy();
      return;
    }
    const watcher: Watcher = {
      res,
      namespace,
      labelSelector: query["labelSelector"],
      fieldSelector: query["fieldSelector"],
      response,
      socket: req.socket,
      silent: false,
    };
    this.#watchers.add(watcher);
    response.on("close", () => this.#watchers.delete(watcher));
    for (const ev of this.#events) if (ev.rv > from) deliver(watcher, ev);
  }

  #post(res: FakeResource, ns: string, body: unknown, query: Record<string, string>, response: ServerResponse): void {
    if (!isObject(body)) return send(response, 400, statusBody(400, "BadRequest", "body must be an object"));
    if (res.kind === "SubjectAccessReview") {
      const spec = (body["spec"] ?? {}) as Record<string, unknown>;
      return send(response, 201, { ...body, apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview", status: this.accessReviewer(spec) });
    }
    if (res.kind === "TokenReview") {
      const spec = (body["spec"] ?? {}) as Record<string, unknown>;
      const status = this.tokenReviewer(String(spec["token"] ?? ""), (spec["audiences"] as string[] | undefined) ?? []);
      return send(response, 201, { ...body, apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", status });
    }
    const obj = structuredClone(body) as Obj;
    obj.metadata = { ...((obj.metadata as Record<string, unknown> | undefined) ?? {}) };
    if (res.namespaced) obj.metadata["namespace"] = ns;
    const name = obj.metadata["name"];
    if (typeof name !== "string" || name === "") return send(response, 422, statusBody(422, "Invalid", "metadata.name: Required value"));
    if (this.#store.has(storeKey(res, ns, name))) return send(response, 409, statusBody(409, "AlreadyExists", `${res.plural} "${name}" already exists`));
    if (query["dryRun"] === "All") return send(response, 201, { ...obj, apiVersion: apiVersionOf(res), kind: res.kind });
    const created = this.#create(res, ns, obj, query["fieldManager"] ?? "unknown");
    send(response, 201, created.obj);
  }

  #put(res: FakeResource, ns: string, name: string, stored: Stored | undefined, body: unknown, status: boolean, response: ServerResponse): void {
    if (stored === undefined) return send(response, 404, notFound(res, name));
    if (!isObject(body)) return send(response, 400, statusBody(400, "BadRequest", "body must be an object"));
    const meta = (body["metadata"] ?? {}) as Record<string, unknown>;
    const rv = meta["resourceVersion"];
    if (rv !== undefined && rv !== stored.obj.metadata["resourceVersion"]) {
      return send(response, 409, statusBody(409, "Conflict", `Operation cannot be fulfilled on ${res.plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`));
    }
    if (status) {
      stored.obj["status"] = structuredClone(body["status"]);
    } else {
      const next = structuredClone(body) as Obj;
      next.metadata = { ...stored.obj.metadata, ...meta };
      if (res.status === true) next["status"] = stored.obj["status"];
      if (JSON.stringify(next["spec"]) !== JSON.stringify(stored.obj["spec"])) next.metadata["generation"] = Number(stored.obj.metadata["generation"] ?? 1) + 1;
      stored.obj = next;
    }
    this.#touch(stored, "MODIFIED");
    send(response, 200, stored.obj);
  }

  #patch(
    res: FakeResource,
    ns: string,
    name: string,
    stored: Stored | undefined,
    body: unknown,
    contentType: string | undefined,
    query: Record<string, string>,
    status: boolean,
    response: ServerResponse,
  ): void {
    if (!isObject(body)) return send(response, 400, statusBody(400, "BadRequest", "patch body must be an object"));
    const type = (contentType ?? "").split(";")[0]?.trim();
    if (type === "application/merge-patch+json") {
      if (stored === undefined) return send(response, 404, notFound(res, name));
      const rv = isObject(body["metadata"]) ? body["metadata"]["resourceVersion"] : undefined;
      if (rv !== undefined && rv !== stored.obj.metadata["resourceVersion"]) {
        return send(response, 409, statusBody(409, "Conflict", `Operation cannot be fulfilled on ${res.plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`));
      }
      if (query["dryRun"] === "All") {
        const { status: _ignored, ...rest } = body;
        return send(response, 200, mergePatch(stored.obj, status || res.status !== true ? body : rest));
      }
      const before = JSON.stringify(stored.obj["spec"]);
      if (status) {
        stored.obj["status"] = mergePatch(stored.obj["status"], body["status"]);
      } else {
        const { status: _ignored, ...rest } = body;
        const patch = res.status === true ? rest : body;
        stored.obj = mergePatch(stored.obj, patch) as Obj;
      }
      if (JSON.stringify(stored.obj["spec"]) !== before) stored.obj.metadata["generation"] = Number(stored.obj.metadata["generation"] ?? 1) + 1;
      this.#touch(stored, "MODIFIED");
      return send(response, 200, stored.obj);
    }
    if (type !== "application/apply-patch+yaml") {
      return send(response, 415, statusBody(415, "UnsupportedMediaType", `the fake serves only apply and merge patches, not ${type ?? "none"}`));
    }
    const manager = query["fieldManager"];
    if (manager === undefined || manager === "") {
      return send(response, 400, statusBody(400, "BadRequest", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"));
    }
    const force = query["force"] === "true";
    const meta = (body["metadata"] ?? {}) as Record<string, unknown>;
    if (meta["name"] !== undefined && meta["name"] !== name) return send(response, 400, statusBody(400, "BadRequest", "name in body does not match URL"));
    // What this apply covers: on /status only status, on the main resource everything but status.
    const applied = structuredClone(body) as Obj;
    applied.metadata = { ...meta };
    if (res.status === true) {
      if (status) {
        for (const k of Object.keys(applied)) if (!["apiVersion", "kind", "metadata", "status"].includes(k)) delete applied[k];
        applied.metadata = {};
      } else {
        delete applied["status"];
      }
    }
    let target = stored;
    let created = false;
    if (target === undefined) {
      if (status) return send(response, 404, notFound(res, name));
      const fresh = { apiVersion: body["apiVersion"], kind: body["kind"], metadata: { name } } as Obj;
      if (res.namespaced) fresh.metadata["namespace"] = ns;
      target = this.#create(res, ns, fresh, manager, false);
      created = true;
    }
    const newFields = fieldPaths(applied);
    // Conflicts: a field another manager owns, applied with a different value, without force.
    const conflicts: string[] = [];
    for (const f of newFields) {
      for (const [m, owned] of target.managers) {
        if (m !== manager && owned.has(f) && JSON.stringify(getField(target.obj, f)) !== JSON.stringify(getField(applied, f))) conflicts.push(`${m}: ${f}`);
      }
    }
    if (conflicts.length > 0 && !force) {
      if (created) this.#store.delete(storeKey(res, ns, name));
      return send(response, 409, {
        ...statusBody(409, "Conflict", `Apply failed with ${conflicts.length} conflict(s): ${conflicts.join("; ")}`),
        details: { causes: conflicts.map((c) => ({ reason: "FieldManagerConflict", message: `conflict with ${c}` })) },
      });
    }
    if (force) for (const [m, owned] of target.managers) if (m !== manager) for (const f of newFields) owned.delete(f);
    const before = JSON.stringify(target.obj);
    const beforeSpec = JSON.stringify(target.obj["spec"]);
    const previous = target.managers.get(manager) ?? new Set<string>();
    // An apply to /status covers only status; an apply to the resource covers all but status.
    const inScope = (f: string): boolean => (res.status !== true ? true : status === (f === "status" || f.startsWith("status.")));
    const kept = [...previous].filter((f) => !inScope(f));
    for (const f of previous) {
      if (newFields.has(f) || !inScope(f)) continue;
      const sharedElsewhere = [...target.managers].some(([m, owned]) => m !== manager && owned.has(f));
      if (!sharedElsewhere) deleteField(target.obj, f);
    }
    for (const f of newFields) setField(target.obj, f, structuredClone(getField(applied, f)));
    const owned = new Set([...kept, ...newFields]);
    if (owned.size === 0) target.managers.delete(manager);
    else target.managers.set(manager, owned);
    if (JSON.stringify(target.obj["spec"]) !== beforeSpec && !created) {
      target.obj.metadata["generation"] = Number(target.obj.metadata["generation"] ?? 1) + 1;
    }
    if (created) {
      this.#touch(target, "ADDED");
      return send(response, 201, withManagedFields(target));
    }
    if (JSON.stringify(target.obj) !== before) this.#touch(target, "MODIFIED");
    send(response, 200, withManagedFields(target));
  }

  // ---- RBAC, TokenRequests, upgrades ---------------------------------------------------------------

  /**
   * Whether the stored ClusterRoleBindings, and the RoleBindings of the request's namespace (to a
   * Role there or a ClusterRole), give `user` (with `groups`) a rule allowing the request.
   */
  rbacAllows(user: string, groups: readonly string[], attrs: RequestAttributes): boolean {
    if (attrs.kind === "nonResource" && rulesAllow(attrs, DISCOVERY_RULES)) return true;
    const rules: PolicyRule[] = [];
    const namespaced = attrs.kind === "resource" && attrs.namespace !== "" ? this.list("rbac.authorization.k8s.io/v1", "RoleBinding", attrs.namespace) : [];
    for (const b of [...this.list("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", ""), ...namespaced]) {
      const subjects = (b["subjects"] ?? []) as Array<Record<string, unknown>>;
      const bound = subjects.some((s) =>
        (s["kind"] === "User" && s["name"] === user) ||
        (s["kind"] === "Group" && groups.includes(String(s["name"]))) ||
        (s["kind"] === "ServiceAccount" && `system:serviceaccount:${String(s["namespace"])}:${String(s["name"])}` === user));
      if (!bound) continue;
      const ref = (b["roleRef"] ?? {}) as Record<string, unknown>;
      const inNamespace = b.kind === "RoleBinding" && ref["kind"] === "Role";
      const role = this.get("rbac.authorization.k8s.io/v1", inNamespace ? "Role" : "ClusterRole", inNamespace ? String(b.metadata["namespace"]) : "", String(ref["name"]));
      const errors: never[] = [];
      const parsed = parsePolicyRules(role?.["rules"] ?? [], "rules", errors);
      if (parsed !== null) rules.push(...parsed);
    }
    // RoleBindings grant their rules within their own namespace only.
    if (attrs.kind === "resource" && attrs.namespace !== "") {
      for (const b of this.list("rbac.authorization.k8s.io/v1", "RoleBinding", attrs.namespace)) {
        const subjects = (b["subjects"] ?? []) as Array<Record<string, unknown>>;
        const bound = subjects.some((s) =>
          (s["kind"] === "User" && s["name"] === user) ||
          (s["kind"] === "Group" && groups.includes(String(s["name"]))) ||
          (s["kind"] === "ServiceAccount" && `system:serviceaccount:${String(s["namespace"] ?? attrs.namespace)}:${String(s["name"])}` === user));
        if (!bound) continue;
        const ref = (b["roleRef"] ?? {}) as Record<string, unknown>;
        const role = ref["kind"] === "ClusterRole"
          ? this.get("rbac.authorization.k8s.io/v1", "ClusterRole", "", String(ref["name"]))
          : this.get("rbac.authorization.k8s.io/v1", "Role", attrs.namespace, String(ref["name"]));
        const errors: never[] = [];
        const parsed = parsePolicyRules(role?.["rules"] ?? [], "rules", errors);
        if (parsed !== null) rules.push(...parsed);
      }
    }
    return rulesAllow(attrs, rules);
  }

  #reviewSpec(spec: Record<string, unknown>): Record<string, unknown> {
    const user = String(spec["user"] ?? "");
    const groups = ((spec["groups"] ?? []) as unknown[]).map(String);
    const ra = spec["resourceAttributes"] as Record<string, unknown> | undefined;
    const na = spec["nonResourceAttributes"] as Record<string, unknown> | undefined;
    let attrs: RequestAttributes;
    if (ra !== undefined) {
      const s = (k: string): string => String(ra[k] ?? "");
      attrs = { kind: "resource", verb: s("verb"), apiPrefix: s("group") === "" ? "api" : "apis", apiGroup: s("group"), apiVersion: s("version"), namespace: s("namespace"), resource: s("resource"), subresource: s("subresource"), name: s("name"), parts: [], path: "", fieldSelector: "", labelSelector: "" };
    } else if (na !== undefined) {
      attrs = { kind: "nonResource", verb: String(na["verb"] ?? ""), path: String(na["path"] ?? "") };
    } else return { allowed: false, reason: "no attributes" };
    return this.rbacAllows(user, groups, attrs) ? { allowed: true, reason: "RBAC: allowed" } : { allowed: false };
  }

  /**
   * A request with `Impersonate-User` is authorized as that user (with every `Impersonate-Group`
   * header, kept apart) against the stored RBAC, as the API server does after checking that the
   * caller may impersonate. Null: allowed (or not impersonated).
   */
  #authorizeImpersonated(method: string, req: IncomingMessage): string | null {
    const user = req.headersDistinct["impersonate-user"]?.[0];
    if (user === undefined) return null;
    const groups = req.headersDistinct["impersonate-group"] ?? [];
    const attrs = requestInfo(method, req.url ?? "/");
    if (!attrs.ok) return "unreadable request";
    return this.rbacAllows(user, groups, attrs.value) ? null : `User "${user}" cannot ${attrs.value.verb} ${attrs.value.kind === "resource" ? attrs.value.resource : attrs.value.path}`;
  }

  /** Refuses a request made with a token this server issued when RBAC does not allow it. */
  #authorize(method: string, target: string, token: string | undefined): string | null {
    if (token === undefined) return null;
    const who = this.issuedTokens.get(token);
    if (who === undefined) return null;
    if (who.expiresAt <= this.clock()) return "the token has expired";
    const attrs = requestInfo(method, target);
    if (!attrs.ok) return "unreadable request";
    return this.rbacAllows(who.user, who.groups, attrs.value) ? null : `User "${who.user}" cannot ${attrs.value.verb} ${attrs.value.kind === "resource" ? attrs.value.resource : attrs.value.path}`;
  }

  #tokenRequest(ns: string, name: string, body: unknown, res: ServerResponse): void {
    if (this.get("v1", "ServiceAccount", ns, name) === undefined) return send(res, 404, statusBody(404, "NotFound", `serviceaccounts "${name}" not found`));
    const spec = (isObject(body) ? body["spec"] : undefined) as Record<string, unknown> | undefined;
    const seconds = Number(spec?.["expirationSeconds"] ?? 3600);
    const expiresAt = this.clock() + seconds * 1000;
    const user = `system:serviceaccount:${ns}:${name}`;
    const issue = (token: string): void => {
      this.issuedTokens.set(token, { user, groups: ["system:serviceaccounts", `system:serviceaccounts:${ns}`, "system:authenticated"], expiresAt });
      send(res, 201, { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { ...spec }, status: { token, expirationTimestamp: new Date(expiresAt).toISOString() } });
    };
    if (this.tokenSigner === undefined) return issue(`fake-sa.${ns}.${name}.${randomUUID()}`);
    const audiences = Array.isArray(spec?.["audiences"]) ? (spec["audiences"] as unknown[]).map(String) : [];
    this.tokenSigner({ subject: user, audiences, expiresAt }).then(issue, () => send(res, 500, statusBody(500, "InternalError", "the token could not be signed")));
  }

  /** pods/{name}/exec, attach and portforward: a 101 and an echo, for tokens RBAC allows. */
  #upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    const auth = req.headers.authorization;
    const client = auth?.startsWith("Bearer ") === true ? auth.slice("Bearer ".length) : undefined;
    const url = new URL(req.url ?? "/", "http://fake");
    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) query[k] = v;
    this.requests.push({ method: req.method ?? "GET", path: url.pathname, query, contentType: req.headers["content-type"], body: undefined, client, headers: req.headers });
    const refusal = this.#authorize(req.method ?? "GET", req.url ?? "/", client);
    if (refusal !== null || !/\/pods\/[^/]+\/(exec|attach|portforward)$/.test(url.pathname)) {
      const text = JSON.stringify(statusBody(403, "Forbidden", refusal ?? "no such upgrade"));
      socket.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
      return;
    }
    const protocol = String(req.headers["sec-websocket-protocol"] ?? "").split(",")[0]?.trim();
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: ${String(req.headers.upgrade)}\r\nconnection: Upgrade\r\n${protocol ? `sec-websocket-protocol: ${protocol}\r\n` : ""}\r\n`);
    if (head.length > 0) socket.write(head);
    socket.on("data", (d: Buffer) => socket.write(d));
    socket.on("error", () => socket.destroy());
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
  }

  // ---- store -----------------------------------------------------------------------------------

  #create(res: FakeResource, ns: string, obj: Obj, manager: string, emit = true): Stored {
    obj.metadata["uid"] = randomUUID();
    obj.metadata["creationTimestamp"] = new Date(0).toISOString();
    obj.metadata["generation"] = 1;
    if (res.namespaced) obj.metadata["namespace"] = ns;
    obj["apiVersion"] = apiVersionOf(res);
    obj["kind"] = res.kind;
    const stored: Stored = { res, obj, managers: new Map([[manager, fieldPaths(obj)]]) };
    this.#store.set(storeKey(res, ns, String(obj.metadata["name"])), stored);
    if (emit) this.#touch(stored, "ADDED");
    return stored;
  }

  #touch(stored: Stored, type: WatchEvent["type"]): void {
    this.#rv += 1;
    stored.obj.metadata["resourceVersion"] = String(this.#rv);
    this.#emit(stored.res, type, stored.obj);
  }

  #emit(res: FakeResource, type: WatchEvent["type"], obj: Obj): void {
    const ev: WatchEvent = { rv: this.#rv, res, namespace: String(obj.metadata["namespace"] ?? ""), type, obj: structuredClone(obj) };
    this.#events.push(ev);
    for (const w of this.#watchers) deliver(w, ev);
  }

  #delete(key: string): boolean {
    const stored = this.#store.get(key);
    if (stored === undefined) return false;
    this.#store.delete(key);
    this.#rv += 1;
    stored.obj.metadata["resourceVersion"] = String(this.#rv);
    this.#emit(stored.res, "DELETED", stored.obj);
    // Garbage collection: everything that names the deleted object as an owner goes too.
    const uid = stored.obj.metadata["uid"];
    for (const [k, s] of [...this.#store]) {
      const owners = (s.obj.metadata["ownerReferences"] ?? []) as Array<Record<string, unknown>>;
      if (owners.some((o) => o["uid"] === uid)) this.#delete(k);
    }
    return true;
  }
}

// ---- helpers ---------------------------------------------------------------------------------------

function deliver(w: Watcher, ev: WatchEvent): void {
  if (w.silent || ev.res !== w.res) return;
  if (w.namespace !== undefined && ev.namespace !== w.namespace) return;
  if (!matchesSelectors(ev.obj, w.labelSelector, w.fieldSelector)) return;
  w.response.write(JSON.stringify({ type: ev.type, object: ev.obj }) + "\n");
}

function apiVersionOf(res: FakeResource): string {
  return res.group === "" ? res.version : `${res.group}/${res.version}`;
}

function resourceFor(apiVersion: string, kind: string): FakeResource {
  const res = FAKE_RESOURCES.find((r) => apiVersionOf(r) === apiVersion && r.kind === kind);
  if (res === undefined) throw new Error(`fake apiserver: unknown ${apiVersion} ${kind}`);
  return res;
}

function storeKey(res: FakeResource, ns: string, name: string): string {
  return `${apiVersionOf(res)}|${res.kind}|${ns}|${name}`;
}

function resourceList(group: string, version: string, resources: readonly FakeResource[]): Record<string, unknown> {
  const list: Array<Record<string, unknown>> = [];
  for (const r of resources) {
    list.push({ name: r.plural, singularName: r.kind.toLowerCase(), namespaced: r.namespaced, kind: r.kind, verbs: [...(r.verbs ?? ALL_VERBS)] });
    if (r.status === true) list.push({ name: `${r.plural}/status`, singularName: "", namespaced: r.namespaced, kind: r.kind, verbs: ["get", "patch", "update"] });
  }
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion: group === "" ? version : `${group}/${version}`, resources: list };
}

function apiGroupList(): Record<string, unknown> {
  const groups = new Map<string, string>();
  for (const r of FAKE_RESOURCES) if (r.group !== "") groups.set(r.group, r.version);
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: [...groups].map(([name, version]) => ({
      name,
      versions: [{ groupVersion: `${name}/${version}`, version }],
      preferredVersion: { groupVersion: `${name}/${version}`, version },
    })),
  };
}

function statusBody(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
}

function notFound(res: FakeResource, name: string): Record<string, unknown> {
  return statusBody(404, "NotFound", `${res.plural}${res.group === "" ? "" : "." + res.group} "${name}" not found`);
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function matchesSelectors(obj: Obj, labelSelector: string | undefined, fieldSelector: string | undefined): boolean {
  const labels = (obj.metadata["labels"] ?? {}) as Record<string, string>;
  for (const term of (labelSelector ?? "").split(",").filter((t) => t !== "")) {
    const neq = term.indexOf("!=");
    const eq = term.indexOf("=");
    if (neq > 0) {
      if (labels[term.slice(0, neq)] === term.slice(neq + 2)) return false;
    } else if (eq > 0) {
      const value = term.slice(term[eq + 1] === "=" ? eq + 2 : eq + 1);
      if (labels[term.slice(0, eq)] !== value) return false;
    } else if (term.startsWith("!")) {
      if (term.slice(1) in labels) return false;
    } else if (!(term in labels)) {
      return false;
    }
  }
  for (const term of (fieldSelector ?? "").split(",").filter((t) => t !== "")) {
    const [k, v] = term.split("=");
    if (k === "metadata.name" && obj.metadata["name"] !== v) return false;
    if (k === "metadata.namespace" && obj.metadata["namespace"] !== v) return false;
  }
  return true;
}

/** The field paths an applied object sets (see the module comment). */
function fieldPaths(obj: Record<string, unknown>): Set<string> {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(obj)) {
    if (k === "apiVersion" || k === "kind") continue;
    if (k === "metadata") {
      for (const [mk, mv] of Object.entries((v ?? {}) as Record<string, unknown>)) {
        if (KEYED_META.has(mk) && isObject(mv)) for (const key of Object.keys(mv)) out.add(`metadata.${mk}.${key}`);
        else if (mk === "ownerReferences") out.add("metadata.ownerReferences");
      }
      continue;
    }
    if (KEYED_TOP.has(k) && isObject(v)) for (const key of Object.keys(v)) out.add(`${k}.${key}`);
    else out.add(k);
  }
  return out;
}

function splitPath(path: string): string[] {
  // Keys of data and labels may contain dots: only the first one or two segments are structure.
  if (path.startsWith("metadata.")) {
    const rest = path.slice("metadata.".length);
    const dot = rest.indexOf(".");
    return dot < 0 ? ["metadata", rest] : ["metadata", rest.slice(0, dot), rest.slice(dot + 1)];
  }
  const dot = path.indexOf(".");
  return dot < 0 ? [path] : [path.slice(0, dot), path.slice(dot + 1)];
}

function getField(obj: Record<string, unknown>, path: string): unknown {
  let cur: unknown = obj;
  for (const seg of splitPath(path)) {
    if (!isObject(cur)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

function setField(obj: Record<string, unknown>, path: string, value: unknown): void {
  const segs = splitPath(path);
  let cur: Record<string, unknown> = obj;
  for (const seg of segs.slice(0, -1)) {
    if (!isObject(cur[seg])) cur[seg] = {};
    cur = cur[seg] as Record<string, unknown>;
  }
  cur[segs[segs.length - 1] as string] = value;
}

function deleteField(obj: Record<string, unknown>, path: string): void {
  const segs = splitPath(path);
  let cur: Record<string, unknown> = obj;
  for (const seg of segs.slice(0, -1)) {
    if (!isObject(cur[seg])) return;
    cur = cur[seg] as Record<string, unknown>;
  }
  delete cur[segs[segs.length - 1] as string];
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function withManagedFields(stored: Stored): Obj {
  const managedFields = [...stored.managers].map(([manager, fields]) => {
    const fieldsV1: Record<string, unknown> = {};
    for (const f of fields) {
      let cur = fieldsV1;
      for (const seg of splitPath(f)) {
        const k = `f:${seg}`;
        cur[k] ??= {};
        cur = cur[k] as Record<string, unknown>;
      }
    }
    return { manager, operation: "Apply", apiVersion: String(stored.obj["apiVersion"]), fieldsType: "FieldsV1", fieldsV1 };
  });
  return { ...stored.obj, metadata: { ...stored.obj.metadata, managedFields } };
}
