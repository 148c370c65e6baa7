/**
 * The view gateway's decisions (seed 002, FUN-17): every request with a valid PluginToken, to the
 * Kubernetes data path or an installation's runtime and controller routes, is one
 * `gateway.decision`, FUN-17's audit line made replayable — except refusals past their budget
 * (docs/adr/0091), which a `gateway.refusals` summary counts. Stream `gateway/<installation name>`.
 */
import type { EventRegistry } from "../registry.js";
import { CALLER_FIELD_MAX } from "../capped.js";
import { definer, digest, inNamedStream, isoTime, name, nonEmpty, opt, req, rulesVersion, shape, str, withFirstRules } from "./schema.js";

/** Where the request went: the Kubernetes data path, or an installation's own routes. */
export type GatewayRoute = "kube" | "runtime" | "controller";

/**
 * Which gate decided, in the gateway's order (docs/adr/0090): the caller's request rate, the origin
 * (CORS), the cluster binding, can_view, the installation, the request's parse, the user's access
 * review, the plugin's rules, the cap on open watches; `upstream` for a request that passed them
 * all and was forwarded.
 */
export type GatewayGate = "rate" | "origin" | "cluster" | "can_view" | "installation" | "request" | "user" | "plugin" | "watches" | "upstream";

/**
 * The version of the gateway's rules (its gates, in their order, and what each decides) that every
 * `gateway.decision` records (ADR 0150). The gateway's decisions are not re-decided — the user's
 * access review is answered by the cluster and is not in the log — so no decider is kept per
 * version; a change to a gate's rule still moves this number, and `check-decisions` counts
 * decisions by it.
 */
export const GATEWAY_RULES_VERSION = 1;

/** Every gate, in order (the schema's enum and the console's columns). */
export const GATEWAY_GATES: readonly GatewayGate[] = ["rate", "origin", "cluster", "can_view", "installation", "request", "user", "plugin", "watches", "upstream"];

/** The Kubernetes attributes of a request, as the gateway parsed them (caller-controlled strings capped). */
export type GatewayAttributes =
  | { kind: "resource"; verb: string; apiGroup: string; apiVersion: string; namespace: string; resource: string; subresource: string; name: string; fieldSelector: string; labelSelector: string }
  | { kind: "nonResource"; verb: string; path: string };

/** The fields of a decision that are cut to a cap when longer (their digests are kept). */
export type GatewayCappedField =
  | "path" | "attributes.apiGroup" | "attributes.apiVersion" | "attributes.namespace" | "attributes.resource" | "attributes.subresource"
  | "attributes.name" | "attributes.fieldSelector" | "attributes.labelSelector" | "attributes.path" | "served.fieldSelector" | "served.labelSelector";

/** What an allowed list or watch was served: the selectors the upstream applied. */
export interface GatewayServed {
  /** A name in a watch's path is `metadata.name=<name>` here, as kube-apiserver serves it. */
  fieldSelector: string;
  labelSelector: string;
}

/** `gateway.decision` (version 2: the request's id, what was served, digests of capped fields, the rate and watches gates). */
export interface GatewayDecision {
  /** The request's id: its access line's `requestId` and its answer's `Audit-ID` header. Absent on version-1 rows. */
  requestId?: string;
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
  /** The request's path, decoded, without its query (capped). */
  path: string;
  /** The parsed attributes; null for the installation routes and before the request gate. */
  attributes: GatewayAttributes | null;
  /** For an allowed list or watch, what the upstream served. */
  served?: GatewayServed;
  decision: "allow" | "deny";
  gate: GatewayGate;
  /**
   * The version of the gateway's rules that made the decision (version 3; a decision recorded
   * before reads as made by the first released rules, 1).
   */
  rules: number;
  /** The status the gateway answered a refusal with; null when it forwarded the request. */
  status: number | null;
  /** A stable code of why, for refusals. */
  reason?: string;
  /** `sha256:` of the whole value of each field cut to its cap. */
  digests?: Partial<Record<GatewayCappedField, string>>;
}

/**
 * `gateway.refusals`: refusals of one kind (route, gate, reason, status) for one source (user and
 * installation) that went past the budget in one window, counted instead of recorded one by one.
 */
export interface GatewayRefusals {
  user: string;
  installation: string;
  installationName: string;
  route: GatewayRoute;
  gate: GatewayGate;
  status: number;
  reason: string;
  /** How many refusals this summary stands for (at least one). */
  count: number;
  /** When the first and the last of them came (ISO 8601). */
  first: string;
  last: string;
  /** Their first and last request ids, which their access lines carry. */
  firstRequestId: string;
  lastRequestId: string;
}

/** Data type of each gateway event type. */
export interface GatewayEventData {
  "gateway.decision": GatewayDecision;
  "gateway.refusals": GatewayRefusals;
}

/** `gateway.decision` as version 1 stored it. */
type GatewayDecisionV1 = Omit<GatewayDecision, "requestId" | "served" | "digests" | "rules">;

const bounded = (max: number): object => ({ type: "string", maxLength: max });
const V1_GATES = ["origin", "cluster", "can_view", "installation", "request", "user", "plugin", "upstream"];
const capped = bounded(CALLER_FIELD_MAX);

function attributesSchema(field: object): object {
  return {
    oneOf: [
      { type: "null" },
      {
        type: "object",
        required: ["kind", "verb", "apiGroup", "apiVersion", "namespace", "resource", "subresource", "name", "fieldSelector", "labelSelector"],
        properties: {
          kind: { const: "resource" }, verb: str, apiGroup: field, apiVersion: field, namespace: field, resource: field, subresource: field, name: field,
          fieldSelector: field, labelSelector: field,
        },
        additionalProperties: false,
      },
      {
        type: "object",
        required: ["kind", "verb", "path"],
        properties: { kind: { const: "nonResource" }, verb: str, path: field },
        additionalProperties: false,
      },
    ],
  };
}

const CAPPED_FIELDS: readonly GatewayCappedField[] = [
  "path", "attributes.apiGroup", "attributes.apiVersion", "attributes.namespace", "attributes.resource", "attributes.subresource",
  "attributes.name", "attributes.fieldSelector", "attributes.labelSelector", "attributes.path", "served.fieldSelector", "served.labelSelector",
];

const common = {
  route: req({ enum: ["kube", "runtime", "controller"] }),
  user: req(bounded(512)),
  installation: req(bounded(512)),
  installationName: req(name),
  plugin: req(bounded(512)),
  version: req(bounded(512)),
  definitionHash: req(bounded(512)),
  pinnedHash: req({ type: ["string", "null"], maxLength: 512 }),
  cluster: req(bounded(512)),
  method: req({ type: "string", minLength: 1, maxLength: 32 }),
  decision: req({ enum: ["allow", "deny"] }),
  status: req({ type: ["integer", "null"], minimum: 100, maximum: 599 }),
  reason: opt(bounded(200)),
};

export function defineGatewayEvents(r: EventRegistry): void {
  const define = definer<GatewayEventData>(r);
  const v1 = shape<GatewayDecisionV1>({
    ...common, method: req(nonEmpty), path: req(bounded(4096)), attributes: req(attributesSchema(bounded(4096))), gate: req({ enum: V1_GATES }),
  });
  const v2Fields = {
    ...common,
    requestId: opt({ type: "string", minLength: 1, maxLength: 64 }),
    path: req(capped),
    attributes: req(attributesSchema(capped)),
    served: opt({ type: "object", required: ["fieldSelector", "labelSelector"], properties: { fieldSelector: capped, labelSelector: capped }, additionalProperties: false }),
    gate: req({ enum: [...GATEWAY_GATES] }),
    digests: opt({ type: "object", propertyNames: { enum: [...CAPPED_FIELDS] }, additionalProperties: digest }),
  } as const;
  define({
    type: "gateway.decision", version: 3, stream: inNamedStream("gateway", "installationName"),
    fields: { ...v2Fields, rules: req(rulesVersion) },
    history: [
      // A version-1 row recorded no id, no served selectors and no digests (its fields were capped at 4096).
      { version: 1, schema: v1, upcast: (data) => data },
      // Version 3 names the rules: a decision recorded before was made by the first released ones.
      { version: 2, schema: shape<Omit<GatewayDecision, "rules">>(v2Fields), upcast: withFirstRules },
    ],
  });
  define({
    type: "gateway.refusals", version: 1, stream: inNamedStream("gateway", "installationName"),
    fields: {
      user: req(bounded(512)),
      installation: req(bounded(512)),
      installationName: req(name),
      route: req({ enum: ["kube", "runtime", "controller"] }),
      gate: req({ enum: [...GATEWAY_GATES] }),
      status: req({ type: "integer", minimum: 400, maximum: 599 }),
      reason: req(bounded(200)),
      count: req({ type: "integer", minimum: 1 }),
      first: req(isoTime),
      last: req(isoTime),
      firstRequestId: req({ type: "string", minLength: 1, maxLength: 64 }),
      lastRequestId: req({ type: "string", minLength: 1, maxLength: 64 }),
    },
  });
}
