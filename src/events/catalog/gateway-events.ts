/**
 * The view gateway's decisions (seed 002, FUN-17): every request with a valid PluginToken, to the
 * Kubernetes data path or an installation's runtime and controller routes, is one
 * `gateway.decision`, FUN-17's audit line made replayable. Stream `gateway/<installation name>`.
 */
import type { EventRegistry } from "../registry.js";
import { definer, inNamedStream, name, nonEmpty, opt, req, str } from "./schema.js";

/** Where the request went: the Kubernetes data path, or an installation's own routes. */
export type GatewayRoute = "kube" | "runtime" | "controller";

/**
 * Which gate decided, in FUN-17's order: the origin (CORS), the cluster binding, can_view, the
 * installation, the request's parse, the user's access review, the plugin's rules; `upstream` for
 * a request that passed them all and was forwarded.
 */
export type GatewayGate = "origin" | "cluster" | "can_view" | "installation" | "request" | "user" | "plugin" | "upstream";

/** The Kubernetes attributes of a request, as the gateway parsed them. */
export type GatewayAttributes =
  | { kind: "resource"; verb: string; apiGroup: string; apiVersion: string; namespace: string; resource: string; subresource: string; name: string; fieldSelector: string; labelSelector: string }
  | { kind: "nonResource"; verb: string; path: string };

/** `gateway.decision`. */
export interface GatewayDecision {
  route: GatewayRoute;
  /** The acting user (the token's `sub`). */
  user: string;
  /** The token's `installation_id`. */
  installation: string;
  /** The token's `installation_name`: the Plugin's name. */
  installationName: string;
  /** The token's `plugin_name` and `plugin_version`. */
  plugin: string;
  version: string;
  /** The definition the user consented to at mint (the token's `definition_hash`). */
  definitionHash: string;
  /** The definition pinned when the request came (what the plugin's rules are made of); null when none is. */
  pinnedHash: string | null;
  /** The token's `cluster_id`. */
  cluster: string;
  method: string;
  /** The request's path, decoded, without its query. */
  path: string;
  /** The parsed attributes; null for the installation routes and before the request gate. */
  attributes: GatewayAttributes | null;
  decision: "allow" | "deny";
  gate: GatewayGate;
  /** The status the gateway answered a refusal with; null when it forwarded the request. */
  status: number | null;
  /** A stable code of why, for refusals. */
  reason?: string;
}

/** Data type of each gateway event type. */
export interface GatewayEventData {
  "gateway.decision": GatewayDecision;
}

const bounded = (max: number): object => ({ type: "string", maxLength: max });
const attributes = {
  oneOf: [
    { type: "null" },
    {
      type: "object",
      required: ["kind", "verb", "apiGroup", "apiVersion", "namespace", "resource", "subresource", "name", "fieldSelector", "labelSelector"],
      properties: {
        kind: { const: "resource" }, verb: str, apiGroup: str, apiVersion: str, namespace: str, resource: str, subresource: str, name: str,
        fieldSelector: bounded(4096), labelSelector: bounded(4096),
      },
      additionalProperties: false,
    },
    {
      type: "object",
      required: ["kind", "verb", "path"],
      properties: { kind: { const: "nonResource" }, verb: str, path: bounded(4096) },
      additionalProperties: false,
    },
  ],
} as const;

export function defineGatewayEvents(r: EventRegistry): void {
  const define = definer<GatewayEventData>(r);
  define({
    type: "gateway.decision", version: 1, stream: inNamedStream("gateway", "installationName"),
    fields: {
      route: req({ enum: ["kube", "runtime", "controller"] }),
      user: req(bounded(512)),
      installation: req(bounded(512)),
      installationName: req(name),
      plugin: req(bounded(512)),
      version: req(bounded(512)),
      definitionHash: req(bounded(512)),
      pinnedHash: req({ type: ["string", "null"], maxLength: 512 }),
      cluster: req(bounded(512)),
      method: req(nonEmpty),
      path: req(bounded(4096)),
      attributes: req(attributes),
      decision: req({ enum: ["allow", "deny"] }),
      gate: req({ enum: ["origin", "cluster", "can_view", "installation", "request", "user", "plugin", "upstream"] }),
      status: req({ type: ["integer", "null"], minimum: 100, maximum: 599 }),
      reason: opt(bounded(200)),
    },
  });
}
