/**
 * The event types of the control plane, their data shapes and schemas. Nested specs and
 * Kubernetes objects are any JSON (the pure model validates them); the envelope of each event's
 * data is strict: required fields, no unknown top-level fields.
 */
import type { JsonValue } from "../plugins/types.js";
import { EventRegistry } from "./registry.js";
import { egressStream, isPluginName, pluginStream } from "./streams.js";

/** `plugin.observed`: a Plugin resource as seen (its spec as given, unvalidated). Stream `plugin/<name>`. */
export interface PluginObserved { name: string; spec: JsonValue }
/** `plugin.deleted`: the Plugin resource is gone. Stream `plugin/<name>`. */
export interface PluginDeleted { name: string }
/** `grant.observed`: a PluginGrant as seen; the actor tells who (`cluster`, `owner:cli`). Stream `plugin/<name>`. */
export interface GrantObserved { name: string; spec: JsonValue }
/** `grant.deleted`. Stream `plugin/<name>`. */
export interface GrantDeleted { name: string }
/** The outcome of checking an image's signatures. */
export type VerdictOutcome = "verified" | "unverified" | "refused";
/** `signature.verdict`: a recorded fact about one image digest. Stream `trust`. */
export interface SignatureVerdict {
  digest: string;
  image: string;
  outcome: VerdictOutcome;
  reason?: string;
  signers: { name: string; kind: string }[];
  identities: JsonValue[];
  /** sha256 of the trust root used. */
  trustRoot: string;
  /** sha256 of the catalog used. */
  catalog: string;
}
/** `config.verdict`: whether a plugin's config matches its image's config schema. Stream `plugin/<name>`. */
export interface ConfigVerdict { name: string; image: string; ok: boolean; errors: { code: string; path: string; message: string }[] }
/** A version as recorded in a decision: image reference (string), manifest and config as given. */
export interface RecordedVersion { image: string; manifest: JsonValue; config?: JsonValue }
/** `rollout.decided`: the inputs of the rollout planner and its plan. Stream `plugin/<name>`, causedBy = the trigger. */
export interface RolloutDecided {
  name: string;
  inputs: { current: RecordedVersion | null; currentDeployable: boolean; previous: RecordedVersion | null; grant: JsonValue };
  /** `rolloutPlanToJSON` output. */
  plan: JsonValue;
}
/**
 * `previous.observed`: the version the cluster says runs (a Plugin's `status.deployed`), recorded
 * once when the log holds no `rollout.decided` for the plugin yet (an operator starting on an
 * empty store). Until the first decision it is the decider's Previous (seed 000: "Previous from
 * status.deployed"). Stream `plugin/<name>`, actor `cluster`.
 */
export interface PreviousObserved { name: string; deployed: RecordedVersion }
/** `workload.desired`: what should run for a plugin. Stream `plugin/<name>`. */
export interface WorkloadDesired { name: string; running: boolean; image?: string; objects: JsonValue[]; allowList: string[] }
/** `workload.applied`: the result of applying the desired workload through a target. Stream `plugin/<name>`. */
export interface WorkloadApplied { name: string; target: string; ok: boolean; error?: string }
/** One object change the Kubernetes target made (or failed to make) for a plugin. */
export interface KubeChange {
  action: "apply" | "prune";
  kind: string;
  /** The object's name. */
  name: string;
  apiVersion?: string;
  fieldManager?: string;
  /** For the allow-list ConfigMap: the plugin's key. */
  key?: string;
  ok: boolean;
  error?: string;
}
/**
 * `kube.applied`: the objects the Kubernetes target applied or pruned for a plugin during one
 * reconcile pass (Flux's habit: every apply and prune recorded). Stream `plugin/<name>`,
 * causedBy = the plugin's latest `workload.desired`.
 */
export interface KubeApplied { name: string; records: KubeChange[] }
/** `egress.decision`: one allow or deny of the egress proxy. Stream `egress/<plugin>`. */
export interface EgressDecision { plugin: string; host: string; port: number; allowed: boolean; reason: string; address?: string }

/** Data type of each event type of the catalog. */
export interface EventDataMap {
  "plugin.observed": PluginObserved;
  "plugin.deleted": PluginDeleted;
  "grant.observed": GrantObserved;
  "grant.deleted": GrantDeleted;
  "signature.verdict": SignatureVerdict;
  "config.verdict": ConfigVerdict;
  "rollout.decided": RolloutDecided;
  "workload.desired": WorkloadDesired;
  "workload.applied": WorkloadApplied;
  "previous.observed": PreviousObserved;
  "kube.applied": KubeApplied;
  "egress.decision": EgressDecision;
}

/** Every event type name of the catalog. */
export type EventTypeName = keyof EventDataMap;

const str = { type: "string" } as const;
const nonEmpty = { type: "string", minLength: 1 } as const;
const name = { type: "string", minLength: 1, maxLength: 63 } as const;
const any = {} as const;
const digest = { type: "string", pattern: "^sha256:[a-f0-9]{64}$" } as const;

function strict(required: string[], properties: Record<string, object>): object {
  return { type: "object", required, properties, additionalProperties: false };
}

const version = {
  type: ["object", "null"],
  required: ["image", "manifest"],
  properties: { image: nonEmpty, manifest: any, config: any },
  additionalProperties: false,
} as const;

const versionValue = { ...version, type: "object" } as const;

function inPluginStream(field: string) {
  return (stream: string, data: unknown): string | null => {
    const n = (data as Record<string, unknown>)[field];
    if (typeof n !== "string" || !isPluginName(n)) return `data.${field} is not a valid plugin name`;
    return stream === pluginStream(n) ? null : `must go to stream ${pluginStream(n)}`;
  };
}

/** Builds a registry holding every event type of the control plane. */
export function createCatalog(): EventRegistry {
  const r = new EventRegistry();
  r.define({
    type: "plugin.observed", version: 1, stream: inPluginStream("name"), observeWith: ["plugin.deleted"],
    schema: strict(["name", "spec"], { name, spec: any }),
  });
  r.define({
    type: "plugin.deleted", version: 1, stream: inPluginStream("name"), observeWith: ["plugin.observed"],
    schema: strict(["name"], { name }),
  });
  r.define({
    type: "grant.observed", version: 1, stream: inPluginStream("name"), observeWith: ["grant.deleted"],
    schema: strict(["name", "spec"], { name, spec: any }),
  });
  r.define({
    type: "grant.deleted", version: 1, stream: inPluginStream("name"), observeWith: ["grant.observed"],
    schema: strict(["name"], { name }),
  });
  r.define({
    type: "signature.verdict", version: 1,
    stream: (stream) => (stream === "trust" ? null : "must go to stream trust"),
    schema: strict(["digest", "image", "outcome", "signers", "identities", "trustRoot", "catalog"], {
      digest,
      image: nonEmpty,
      outcome: { enum: ["verified", "unverified", "refused"] },
      reason: str,
      signers: { type: "array", items: strict(["name", "kind"], { name: str, kind: str }) },
      identities: { type: "array" },
      trustRoot: nonEmpty,
      catalog: nonEmpty,
    }),
  });
  r.define({
    type: "config.verdict", version: 1, stream: inPluginStream("name"),
    schema: strict(["name", "image", "ok", "errors"], {
      name, image: nonEmpty, ok: { type: "boolean" },
      errors: { type: "array", items: strict(["code", "path", "message"], { code: str, path: str, message: str }) },
    }),
  });
  r.define({
    type: "rollout.decided", version: 1, stream: inPluginStream("name"),
    schema: strict(["name", "inputs", "plan"], {
      name,
      inputs: strict(["current", "currentDeployable", "previous", "grant"], {
        current: version, currentDeployable: { type: "boolean" }, previous: version, grant: any,
      }),
      plan: any,
    }),
  });
  r.define({
    type: "workload.desired", version: 1, stream: inPluginStream("name"),
    schema: strict(["name", "running", "objects", "allowList"], {
      name, running: { type: "boolean" }, image: nonEmpty,
      objects: { type: "array" },
      allowList: { type: "array", items: { type: "string", pattern: "^[^\\s:]+:[0-9]{1,5}$" } },
    }),
  });
  r.define({
    type: "workload.applied", version: 1, stream: inPluginStream("name"),
    schema: strict(["name", "target", "ok"], { name, target: nonEmpty, ok: { type: "boolean" }, error: str }),
  });
  r.define({
    type: "previous.observed", version: 1, stream: inPluginStream("name"),
    schema: strict(["name", "deployed"], { name, deployed: versionValue }),
  });
  r.define({
    type: "kube.applied", version: 1, stream: inPluginStream("name"),
    schema: strict(["name", "records"], {
      name,
      records: {
        type: "array",
        minItems: 1,
        items: strict(["action", "kind", "name", "ok"], {
          action: { enum: ["apply", "prune"] }, kind: nonEmpty, name: nonEmpty, apiVersion: nonEmpty,
          fieldManager: nonEmpty, key: nonEmpty, ok: { type: "boolean" }, error: str,
        }),
      },
    }),
  });
  r.define({
    type: "egress.decision", version: 1,
    stream: (stream, data) => {
      const p = (data as EgressDecision).plugin;
      if (!isPluginName(p)) return "data.plugin is not a valid plugin name";
      return stream === egressStream(p) ? null : `must go to stream ${egressStream(p)}`;
    },
    schema: strict(["plugin", "host", "port", "allowed", "reason"], {
      plugin: name, host: nonEmpty, port: { type: "integer", minimum: 0, maximum: 65535 },
      allowed: { type: "boolean" }, reason: str, address: str,
    }),
  });
  return r;
}

/** The registry every store uses unless told otherwise. */
export const catalog: EventRegistry = createCatalog();
