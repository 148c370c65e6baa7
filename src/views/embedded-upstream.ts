/**
 * The embedded default upstream (seed 002 mapped onto OpenFief): no Kubernetes API, so the
 * PolicyRule matcher, with Kubernetes RBAC semantics, stands in for both halves — the user's
 * access review against the console users' roles, and the plugin ServiceAccount's RBAC against the
 * installation's effective rules — and the control plane's own resources are served
 * Kubernetes-style (`embedded-api.ts`).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { EventLog } from "../events/index.js";
import type { PolicyRule } from "../plugins/index.js";
import { EmbeddedApi } from "./embedded-api.js";
import type { Installation, UserRoles } from "./ports.js";
import { rulesAllow } from "./rbac-match.js";
import type { RequestAttributes } from "./request-info.js";
import type { ForwardContext, Review, Upstream } from "./upstream.js";

/**
 * What Kubernetes binds to every authenticated subject, users and ServiceAccounts alike (the
 * `system:discovery` ClusterRole): reading discovery, health and version. The embedded mode grants
 * it to both halves, as a cluster would.
 */
export const DISCOVERY_RULES: readonly PolicyRule[] = [{
  apiGroups: [], resources: [], resourceNames: [], verbs: ["get"],
  nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"],
}];

/** The embedded upstream over an event store and the users' roles. */
export class EmbeddedUpstream implements Upstream {
  readonly mode = "embedded" as const;
  readonly #roles: UserRoles;
  readonly #api: EmbeddedApi;

  constructor(store: EventLog, roles: UserRoles) {
    this.#roles = roles;
    this.#api = new EmbeddedApi(store);
  }

  async reviewUser(user: string, a: RequestAttributes): Promise<Review> {
    // As RBAC: a namespaced request sees the rules bound in its namespace and cluster-wide; others only cluster-wide.
    const rules = await this.#roles.rulesFor(user, a.kind === "resource" ? a.namespace : "");
    return rulesAllow(a, rules) || rulesAllow(a, DISCOVERY_RULES) ? { allowed: true } : { allowed: false, reason: "no_rule" };
  }

  async reviewPlugin(installation: Installation, a: RequestAttributes): Promise<Review> {
    return rulesAllow(a, installation.rules) || rulesAllow(a, DISCOVERY_RULES) ? { allowed: true } : { allowed: false, reason: "no_rule" };
  }

  forward(ctx: ForwardContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
    return this.#api.serve(ctx, req, res);
  }
}
