/**
 * The events of a plugin's life: the owner's and the cluster's observations, the facts recorded
 * about its image and config, and the reconciler's decisions and their results. Stream
 * `plugin/<name>`, but for signature verdicts (stream `trust`, about one image digest).
 */
import { createHash } from "node:crypto";
import { canonicalManifest } from "../../plugins/index.js";
import type { JsonValue, Manifest, RolloutPlanJSON } from "../../plugins/index.js";
import type { EventRegistry } from "../registry.js";
import { any, boolean, definer, digest, inNamedStream, inStream, name, nonEmpty, opt, req, rulesVersion, shape, str, withFirstRules } from "./schema.js";

/** `plugin.observed`: a Plugin resource as seen (its spec as given, unvalidated). */
export interface PluginObserved { name: string; spec: JsonValue }
/** `plugin.deleted`: the Plugin resource is gone. */
export interface PluginDeleted { name: string }
/** `grant.observed`: a PluginGrant as seen; the actor tells who (`cluster`, `owner:cli`). */
export interface GrantObserved { name: string; spec: JsonValue }
/** `grant.deleted`. */
export interface GrantDeleted { name: string }

/**
 * The operator's verdict on the grant recorded at seq `grant` (docs/adr/0161): refused (`ok` false)
 * when it maps a Secret that is another installed instance's, each problem with its code
 * (`foreign_secret`) and field path. A refused grant approves nothing. Recorded when it changes.
 */
export interface GrantVerdict {
  name: string;
  grant: number;
  /**
   * The version of the grant rules that made the verdict (version 2; one recorded before reads as
   * made by the first released rules, 1: docs/adr/0191). Re-decided under these rules.
   */
  rules: number;
  ok: boolean;
  errors: { code: string; path: string; message: string }[];
}

/**
 * An owner's intent to uninstall a plugin and leave nothing behind (docs/adr/0162), appended in one
 * batch with the plugin's and the grant's deletion: what is to go. `secrets` are the Secrets its
 * grant mapped; `module` the WebAssembly module it ran, when no other instance runs it.
 */
export interface PluginUninstallRequested { name: string; grant: boolean; secrets: string[]; module: string | null }

/**
 * A purge done (docs/adr/0162): what was removed, caused by its `plugin.uninstall.requested`.
 * `secrets` lists the Secrets that existed and were deleted; `absent` those already gone.
 */
export interface PluginUninstalled { name: string; request: number; grant: boolean; secrets: string[]; absent: string[]; module: string | null; resources: UninstalledResource[] }
/**
 * A Plugin or PluginGrant resource a purge deleted from the cluster (`removed`) or found gone
 * (`absent`); named as the plugin. Version 1 of `plugin.uninstalled` reads as none: it was
 * recorded where the log, not the cluster, held the resources.
 */
export interface UninstalledResource { kind: "Plugin" | "PluginGrant"; outcome: "removed" | "absent" }
/** The outcome of checking an image's signatures. */
export type VerdictOutcome = "verified" | "unverified" | "refused";
/**
 * `signature.verdict`: a recorded fact about one image digest, checked against one declared
 * manifest (its label must equal the Plugin's). Two plugins on one digest with different manifests
 * get a verdict each. Stream `trust`.
 */
export interface SignatureVerdict {
  digest: string;
  /**
   * The SHA-256 (hex) of the canonical manifest the image was checked against
   * ({@link manifestDigest}); absent when it was checked against none (as every verdict recorded
   * before version 2: those stand for the digest whatever the manifest).
   */
  manifest?: string;
  image: string;
  outcome: VerdictOutcome;
  reason?: string;
  signers: { name: string; kind: string }[];
  identities: JsonValue[];
  /** sha256 of the trust root used. */
  trustRoot: string;
  /** sha256 of the catalog used. */
  catalog: string;
  /**
   * For a WebAssembly plugin: its module's lowercase hex SHA-256 (the artifact's one layer, seed
   * 003's ValidDigest). Absent for a container image. What runs the version follows from it.
   */
  module?: string;
  /**
   * The seq of the `catalog.observed` event recording the catalog this verdict was decided with
   * (the one whose `sha256` is {@link catalog}); absent in verdicts recorded before catalogs were.
   */
  catalogEvent?: number;
  /**
   * The version of the signature rules (their catalog step) that made the verdict (version 4; one
   * recorded before reads as made by the first released rules, 1: docs/adr/0191).
   */
  rules: number;
}
/**
 * `catalog.observed`: the catalog the control plane started with, when it differs from the last
 * one recorded: the SHA-256 of the file and its entries as the file writes them (the catalog's
 * strict parser reads them back). Stream `trust`. Since this event, its entries count as verified.
 */
export interface CatalogObserved {
  /** SHA-256 (hex) of the catalog file's bytes: what a verdict's `catalog` names. */
  sha256: string;
  entries: JsonValue[];
}
/** `config.verdict`: whether a plugin's config matches its image's config schema. */
export interface ConfigVerdict {
  name: string;
  image: string;
  /**
   * The version of the config rules that made the verdict (version 2; one recorded before reads as
   * made by the first released rules, 1: docs/adr/0191). Re-decided under these rules.
   */
  rules: number;
  ok: boolean;
  errors: { code: string; path: string; message: string }[];
}
/** A version as recorded in a decision: image reference (string), manifest and config as given. */
export interface RecordedVersion { image: string; manifest: JsonValue; config?: JsonValue }
/** `rollout.decided`: the inputs of the rollout planner and its plan. causedBy = the trigger. */
export interface RolloutDecided {
  name: string;
  /**
   * The version of the rollout rules that made the decision (version 3; a decision recorded
   * before reads as made by the first released rules, 1). Re-decided under these rules.
   */
  rules: number;
  inputs: { current: RecordedVersion | null; currentDeployable: boolean; previous: RecordedVersion | null; grant: JsonValue };
  /** `rolloutPlanToJSON` output. */
  plan: RolloutPlanJSON;
}
/**
 * `previous.observed`: the version the cluster says runs (a Plugin's `status.deployed`), recorded
 * once when the log holds no `rollout.decided` for the plugin yet (an operator starting on an
 * empty store). Until the first decision it is the decider's Previous (seed 000: "Previous from
 * status.deployed"). Actor `cluster`.
 */
export interface PreviousObserved { name: string; deployed: RecordedVersion }
/**
 * `workload.desired`: what should run for a plugin. A WebAssembly plugin (`runtime: "wasm"`) runs
 * in the plugin host by its module's digest and has no Kubernetes objects of its own; its
 * allow-list is what the egress proxy admits for it, as for a container.
 */
export interface WorkloadDesired { name: string; running: boolean; image?: string; runtime?: "container" | "wasm"; module?: string; objects: JsonValue[]; allowList: string[] }
/** `workload.applied`: the result of applying the desired workload through a target. */
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
 * reconcile pass (Flux's habit: every apply and prune recorded). causedBy = the plugin's latest
 * `workload.desired`.
 */
export interface KubeApplied { name: string; records: KubeChange[] }

/**
 * `reconcile.failed`: a reconcile pass over the plugin failed (the others went on: Flux's habit of
 * finalising each object whatever happens). Recorded through `observe`, so a failure that repeats
 * pass after pass is one event until something else happens in the stream.
 */
export interface ReconcileFailed { name: string; error: string }

/** The SHA-256 (hex) of a manifest's canonical text: what a signature verdict names the manifest it checked by. */
export function manifestDigest(m: Manifest): string {
  return createHash("sha256").update(canonicalManifest(m)).digest("hex");
}

/**
 * The key of a verdict: its digest and the manifest it checked. A verdict checked against no
 * manifest (or recorded before version 2) is keyed by the digest alone and stands for it whatever
 * the manifest, until a verdict for the exact manifest is recorded.
 */
export function verdictKey(digest: string, manifest: string | null | undefined): string {
  return manifest === null || manifest === undefined ? digest : `${digest}@${manifest}`;
}

/** Data type of each plugin event type. */
export interface PluginEventData {
  "plugin.observed": PluginObserved;
  "plugin.deleted": PluginDeleted;
  "grant.observed": GrantObserved;
  "grant.deleted": GrantDeleted;
  "grant.verdict": GrantVerdict;
  "plugin.uninstall.requested": PluginUninstallRequested;
  "plugin.uninstalled": PluginUninstalled;
  "signature.verdict": SignatureVerdict;
  "catalog.observed": CatalogObserved;
  "config.verdict": ConfigVerdict;
  "rollout.decided": RolloutDecided;
  "workload.desired": WorkloadDesired;
  "workload.applied": WorkloadApplied;
  "previous.observed": PreviousObserved;
  "kube.applied": KubeApplied;
  "reconcile.failed": ReconcileFailed;
}

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

const stringList = { type: "array", items: str } as const;
/**
 * `rolloutPlanToJSON` output: the outcome, what runs (image, sorted manifest, permissions), what
 * waits. Version 2 adds `pending.rbac`, the PolicyRules pending approval (absent when none).
 */
function planSchema(version: 1 | 2): object {
  const pendingLists: Record<string, object> = { capabilities: stringList, egress: { type: "array" }, secrets: stringList, dataTiers: stringList };
  if (version === 2) pendingLists["rbac"] = { type: "array", items: { type: "object" } };
  return strict(["outcome", "run", "pending", "reasons"], {
    outcome: { enum: ["current", "previous", "none"] },
    run: {
      type: ["object", "null"],
      required: ["image", "manifest", "permissions"],
      properties: { image: nonEmpty, manifest: { type: "object" }, config: any, permissions: { type: "object" } },
      additionalProperties: false,
    },
    pending: strict(["capabilities", "egress", "secrets", "dataTiers"], pendingLists),
    reasons: stringList,
  });
}
const plan = planSchema(2);

/** `workload.desired` version 1: as version 2 without `runtime` and `module`. */
const WORKLOAD_V1 = strict(["name", "running", "objects", "allowList"], {
  name, running: boolean, image: nonEmpty, objects: { type: "array" },
  allowList: { type: "array", items: { type: "string", pattern: "^[^\\s:]+:[0-9]{1,5}$" } },
});

/** `signature.verdict` version 1: as version 2 without `manifest`. */
const VERDICT_V1 = strict(["digest", "image", "outcome", "signers", "identities", "trustRoot", "catalog"], {
  digest, image: nonEmpty, outcome: { enum: ["verified", "unverified", "refused"] }, reason: str,
  signers: { type: "array", items: strict(["name", "kind"], { name: str, kind: str }) }, identities: { type: "array" }, trustRoot: nonEmpty, catalog: nonEmpty,
});

const VERDICT_V2_FIELDS = {
  digest: req(digest),
  manifest: opt({ type: "string", pattern: "^[a-f0-9]{64}$" }),
  image: req(nonEmpty),
  outcome: req({ enum: ["verified", "unverified", "refused"] }),
  reason: opt(str),
  signers: req({ type: "array", items: strict(["name", "kind"], { name: str, kind: str }) }),
  identities: req({ type: "array" }),
  trustRoot: req(nonEmpty),
  catalog: req(nonEmpty),
  module: opt({ type: "string", pattern: "^[0-9a-f]{64}$" }),
};
/** `signature.verdict` version 2: as version 3 without `catalogEvent`. */
const VERDICT_V2 = shape<Omit<SignatureVerdict, "catalogEvent" | "rules">>(VERDICT_V2_FIELDS);
const VERDICT_V3_FIELDS = { ...VERDICT_V2_FIELDS, catalogEvent: opt({ type: "integer", minimum: 1 }) };
/** `signature.verdict` version 3: as version 4 without `rules`. */
const VERDICT_V3 = shape<Omit<SignatureVerdict, "rules">>(VERDICT_V3_FIELDS);
const problemList = { type: "array", items: strict(["code", "path", "message"], { code: str, path: str, message: str }) };
const CONFIG_VERDICT_V1_FIELDS = { name: req(name), image: req(nonEmpty), ok: req(boolean), errors: req(problemList) };
const GRANT_VERDICT_V1_FIELDS = { name: req(name), grant: req({ type: "integer", minimum: 1 }), ok: req(boolean), errors: req(problemList) };

export function definePluginEvents(r: EventRegistry): void {
  const define = definer<PluginEventData>(r);
  const inPlugin = inNamedStream("plugin", "name");
  define({ type: "plugin.observed", version: 1, stream: inPlugin, observeWith: ["plugin.deleted"], fields: { name: req(name), spec: req(any) } });
  define({ type: "plugin.deleted", version: 1, stream: inPlugin, observeWith: ["plugin.observed"], fields: { name: req(name) } });
  define({ type: "grant.observed", version: 1, stream: inPlugin, observeWith: ["grant.deleted"], fields: { name: req(name), spec: req(any) } });
  define({ type: "grant.deleted", version: 1, stream: inPlugin, observeWith: ["grant.observed"], fields: { name: req(name) } });
  define({
    type: "signature.verdict", version: 4, stream: inStream("trust"),
    // Version 2 adds the optional `manifest` and `module`; a version-1 verdict reads as one checked
    // against no manifest, about a container image. Version 3 adds the optional `catalogEvent`.
    // Version 4 names the rules: a verdict recorded before was made by the first released ones.
    history: [
      { version: 1, schema: VERDICT_V1, upcast: (d) => d },
      { version: 2, schema: VERDICT_V2, upcast: (d) => d },
      { version: 3, schema: VERDICT_V3, upcast: withFirstRules },
    ],
    fields: { ...VERDICT_V3_FIELDS, rules: req(rulesVersion) },
  });
  define({
    type: "catalog.observed", version: 1, stream: inStream("trust"),
    fields: {
      sha256: req({ type: "string", pattern: "^[a-f0-9]{64}$" }),
      entries: req({ type: "array", maxItems: 1000, items: { type: "object" } }),
    },
  });
  define({
    type: "config.verdict", version: 2, stream: inPlugin,
    // Version 2 names the rules: a verdict recorded before was made by the first released ones.
    history: [{ version: 1, schema: shape<Omit<ConfigVerdict, "rules">>(CONFIG_VERDICT_V1_FIELDS), upcast: withFirstRules }],
    fields: { ...CONFIG_VERDICT_V1_FIELDS, rules: req(rulesVersion) },
  });
  define({
    type: "grant.verdict", version: 2, stream: inPlugin,
    // Version 2 names the rules: a verdict recorded before was made by the first released ones.
    history: [{ version: 1, schema: shape<Omit<GrantVerdict, "rules">>(GRANT_VERDICT_V1_FIELDS), upcast: withFirstRules }],
    fields: { ...GRANT_VERDICT_V1_FIELDS, rules: req(rulesVersion) },
  });
  const secretList = { type: "array", maxItems: 128, items: { type: "string", minLength: 1, maxLength: 253 } };
  const moduleDigest = { type: ["string", "null"], pattern: "^[0-9a-f]{64}$" };
  define({
    type: "plugin.uninstall.requested", version: 1, stream: inPlugin,
    fields: { name: req(name), grant: req(boolean), secrets: req(secretList), module: req(moduleDigest) },
  });
  const uninstalledFields = {
    name: req(name), request: req({ type: "integer", minimum: 1 }), grant: req(boolean),
    secrets: req(secretList), absent: req(secretList), module: req(moduleDigest),
  };
  define({
    type: "plugin.uninstalled", version: 2, stream: inPlugin,
    fields: {
      ...uninstalledFields,
      resources: req({ type: "array", maxItems: 2, items: strict(["kind", "outcome"], { kind: { enum: ["Plugin", "PluginGrant"] }, outcome: { enum: ["removed", "absent"] } }) }),
    },
    history: [
      // Before the operator deleted the cluster's resources in a purge: none were.
      { version: 1, schema: shape(uninstalledFields), upcast: (data) => ({ ...(data as Record<string, unknown>), resources: [] }) },
    ],
  });
  const decidedFields = (p: object): object => shape<Omit<RolloutDecided, "rules">>({
    name: req(name),
    inputs: req(strict(["current", "currentDeployable", "previous", "grant"], {
      current: version, currentDeployable: boolean, previous: version, grant: any,
    })),
    plan: req(p),
  });
  define({
    type: "rollout.decided", version: 3, stream: inPlugin,
    history: [
      // A version-1 plan is a version-2 plan with nothing pending in rbac: read as it is.
      { version: 1, schema: decidedFields(planSchema(1)), upcast: (data) => data },
      // Version 3 names the rules: a decision recorded before was made by the first released ones.
      { version: 2, schema: decidedFields(plan), upcast: withFirstRules },
    ],
    fields: {
      name: req(name),
      rules: req(rulesVersion),
      inputs: req(strict(["current", "currentDeployable", "previous", "grant"], {
        current: version, currentDeployable: boolean, previous: version, grant: any,
      })),
      plan: req(plan),
    },
  });
  define({
    type: "workload.desired", version: 2, stream: inPlugin,
    // Version 2 adds the optional `runtime` and `module`; a version-1 workload is a container's.
    history: [{ version: 1, schema: WORKLOAD_V1, upcast: (d) => d }],
    fields: {
      name: req(name), running: req(boolean), image: opt(nonEmpty),
      runtime: opt({ enum: ["container", "wasm"] }), module: opt({ type: "string", pattern: "^[0-9a-f]{64}$" }),
      objects: req({ type: "array" }),
      allowList: req({ type: "array", items: { type: "string", pattern: "^[^\\s:]+:[0-9]{1,5}$" } }),
    },
  });
  define({
    type: "workload.applied", version: 1, stream: inPlugin,
    fields: { name: req(name), target: req(nonEmpty), ok: req(boolean), error: opt(str) },
  });
  define({ type: "previous.observed", version: 1, stream: inPlugin, fields: { name: req(name), deployed: req(versionValue) } });
  define({
    type: "reconcile.failed", version: 1, stream: inPlugin,
    // A later decision or apply in the stream ends the run of a repeated failure.
    observeWith: ["rollout.decided", "workload.desired", "workload.applied"],
    fields: { name: req(name), error: req({ type: "string", minLength: 1, maxLength: 2000 }) },
  });
  define({
    type: "kube.applied", version: 1, stream: inPlugin,
    fields: {
      name: req(name),
      records: req({
        type: "array",
        minItems: 1,
        items: strict(["action", "kind", "name", "ok"], {
          action: { enum: ["apply", "prune"] }, kind: nonEmpty, name: nonEmpty, apiVersion: nonEmpty,
          fieldManager: nonEmpty, key: nonEmpty, ok: boolean, error: str,
        }),
      }),
    },
  });
}
