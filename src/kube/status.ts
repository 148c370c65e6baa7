/**
 * A Plugin's status: which version runs (`deployed`: image, manifest, config), what waits for the owner (`pendingApproval`),
 * the conditions `ApprovalRequired` and `SignatureVerified`, and `observedGeneration` (seed 000,
 * "The operator fills the input from the cluster"). {@link pluginStatus} is pure; the writer
 * applies it through the status subresource with server-side apply.
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { canonicalize } from "json-canonicalize";
import type { KubeConfig } from "@kubernetes/client-node";
import { API_GROUP, API_VERSION, NAMESPACE, rulesToJSON } from "../plugins/index.js";
import type { EgressHost, JsonValue, Pending, PolicyRuleJSON } from "../plugins/index.js";
import { apiError } from "./errors.js";
import { OPERATOR_FIELD_MANAGER } from "./target.js";

/** The signature verdict of the version the Plugin asks for. */
export type SignatureState =
  /** A catalog entry pins the digest and its publisher signed it. */
  | { readonly kind: "verified"; readonly signer?: string }
  /** A trusted signer signed it, but no catalog entry pins it: shown as unverified. */
  | { readonly kind: "signed"; readonly signer?: string }
  /** Refused, with the stable error code (`unsigned`, `untrusted_signer`, `manifest_mismatch`, ...). */
  | { readonly kind: "refused"; readonly code: string; readonly message?: string }
  /** Not checked yet (the registry was unreachable, or the spec is invalid). */
  | { readonly kind: "unknown"; readonly reason?: string };

/**
 * What runs now (null when nothing runs), as `status.deployed` holds it: the image with the
 * manifest and config it runs with, so an operator starting on an empty store takes the running
 * version from the cluster (seed 000, "Previous from status.deployed").
 */
export interface DeployedVersion {
  readonly image: string;
  /** The manifest the version runs with; the operator always writes it. */
  readonly manifest?: JsonValue;
  readonly config?: JsonValue;
}

/** A Kubernetes condition as the CRD stores it. */
export interface Condition {
  readonly type: "ApprovalRequired" | "SignatureVerified";
  readonly status: "True" | "False" | "Unknown";
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
  readonly observedGeneration: number;
}

/** `status.pendingApproval` as the CRD stores it. */
export interface PendingApprovalStatus {
  readonly capabilities: string[];
  readonly egress: Array<{ host: string; port: number }>;
  readonly secrets: string[];
  readonly dataTiers: string[];
  /** The view's PolicyRules pending approval (Kubernetes' rule JSON); absent when none. */
  readonly rbac?: PolicyRuleJSON[];
}

/** The Plugin's `status`. */
export interface PluginStatus {
  readonly observedGeneration: number;
  readonly deployed: DeployedVersion | null;
  readonly pendingApproval: PendingApprovalStatus | null;
  readonly conditions: Condition[];
}

/** Input of {@link pluginStatus}. */
export interface PluginStatusInput {
  readonly generation: number;
  readonly deployed: DeployedVersion | null;
  readonly pending: Pending;
  readonly signature: SignatureState;
  /** The time to stamp on a condition whose status changes (RFC 3339). */
  readonly now: string;
  /** The conditions the cluster holds now, so an unchanged condition keeps its transition time. */
  readonly previous?: readonly Condition[];
}

/** The status to write for the given facts. Pure and deterministic. */
export function pluginStatus(input: PluginStatusInput): PluginStatus {
  const pending = pendingStatus(input.pending);
  const approval = approvalCondition(pending);
  const signature = signatureCondition(input.signature);
  const conditions = [approval, signature].map((c) => {
    const before = input.previous?.find((p) => p.type === c.type);
    const lastTransitionTime = before !== undefined && before.status === c.status ? before.lastTransitionTime : input.now;
    return { ...c, lastTransitionTime, observedGeneration: input.generation };
  });
  return {
    observedGeneration: input.generation,
    deployed: input.deployed === null ? null : deployedStatus(input.deployed),
    pendingApproval: pending,
    conditions,
  };
}

function deployedStatus(d: DeployedVersion): DeployedVersion {
  return {
    image: d.image,
    ...(d.manifest === undefined ? {} : { manifest: d.manifest }),
    ...(d.config === undefined ? {} : { config: d.config }),
  };
}

type Draft = Omit<Condition, "lastTransitionTime" | "observedGeneration">;

function pendingStatus(p: Pending): PendingApprovalStatus | null {
  const rules = p.rbac ?? [];
  const empty = p.capabilities.length + p.egress.length + p.secrets.length + p.dataTiers.length + rules.length === 0;
  if (empty) return null;
  return {
    capabilities: [...p.capabilities],
    egress: p.egress.map((h: EgressHost) => ({ host: h.host, port: h.port })),
    secrets: [...p.secrets],
    dataTiers: [...p.dataTiers],
    ...(rules.length === 0 ? {} : { rbac: rulesToJSON(rules) }),
  };
}

function approvalCondition(p: PendingApprovalStatus | null): Draft {
  if (p === null) return { type: "ApprovalRequired", status: "False", reason: "Granted", message: "the grant covers everything the manifest requests" };
  const parts: string[] = [];
  if (p.capabilities.length > 0) parts.push(`capabilities ${p.capabilities.join(", ")}`);
  if (p.egress.length > 0) parts.push(`egress ${p.egress.map((h) => `${h.host}:${h.port}`).join(", ")}`);
  if (p.secrets.length > 0) parts.push(`secrets ${p.secrets.join(", ")}`);
  if (p.dataTiers.length > 0) parts.push(`data tiers ${p.dataTiers.join(", ")}`);
  if (p.rbac !== undefined && p.rbac.length > 0) parts.push(`${p.rbac.length} rbac rule(s)`);
  return { type: "ApprovalRequired", status: "True", reason: "PendingApproval", message: `awaiting approval in the PluginGrant: ${parts.join("; ")}` };
}

function signatureCondition(s: SignatureState): Draft {
  switch (s.kind) {
    case "verified":
      return { type: "SignatureVerified", status: "True", reason: "Verified", message: `verified: the catalog pins this digest${signedBy(s.signer)}` };
    case "signed":
      return { type: "SignatureVerified", status: "True", reason: "Signed", message: `signed by a trusted signer${signedBy(s.signer)}, not pinned in the catalog (unverified)` };
    case "refused":
      return { type: "SignatureVerified", status: "False", reason: reasonFromCode(s.code), message: s.message ?? `image refused: ${s.code}` };
    case "unknown":
      return { type: "SignatureVerified", status: "Unknown", reason: "NotChecked", message: s.reason ?? "the signature has not been checked yet" };
  }
}

function signedBy(signer: string | undefined): string {
  return signer === undefined ? "" : ` (${signer})`;
}

/** `untrusted_signer` → `UntrustedSigner`: a condition reason is CamelCase. */
export function reasonFromCode(code: string): string {
  const camel = code
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== "")
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join("");
  return /^[A-Za-z]/.test(camel) ? camel : `Refused${camel}`;
}

/**
 * `status` with each condition's `lastTransitionTime` taken from `current` (the status the
 * cluster holds) when that condition's status did not change, so re-deriving the same status
 * yields the same object. Pure.
 */
export function keepTransitionTimes(status: PluginStatus, current: unknown): PluginStatus {
  const before = isRecord(current) && Array.isArray(current["conditions"]) ? (current["conditions"] as unknown[]) : [];
  const conditions = status.conditions.map((c) => {
    const prev = before.find((b): b is Record<string, unknown> => isRecord(b) && b["type"] === c.type);
    const time = prev?.["lastTransitionTime"];
    return prev !== undefined && prev["status"] === c.status && typeof time === "string" ? { ...c, lastTransitionTime: time } : c;
  });
  return { ...status, conditions };
}

/** Options of {@link PluginStatusWriter}. */
export interface PluginStatusWriterOptions {
  /**
   * The status the cluster holds now for a Plugin (as the informer last saw it), or undefined.
   * With it, unchanged conditions keep their transition time and a status equal to the
   * cluster's is not written again.
   */
  readonly current?: (name: string) => unknown;
}

/** Writes Plugin status through the status subresource. */
export class PluginStatusWriter {
  readonly #api: CustomObjectsApi;
  readonly #namespace: string;
  readonly #current: (name: string) => unknown;

  constructor(kc: KubeConfig, namespace: string = NAMESPACE, options: PluginStatusWriterOptions = {}) {
    this.#api = kc.makeApiClient(CustomObjectsApi);
    this.#namespace = namespace;
    this.#current = options.current ?? (() => undefined);
  }

  /**
   * Applies `status` to `plugins/<name>/status` with server-side apply as `openfief-operator`:
   * a field the operator stops sending (a pending list that emptied) is removed by the server.
   * Resolves to false, writing nothing, when the cluster already holds this status: every write
   * is a watch event, and a write per reconcile would make every reconcile cause the next.
   */
  async write(name: string, status: PluginStatus): Promise<boolean> {
    const current = this.#current(name);
    const next = dropNulls(keepTransitionTimes(status, current));
    if (current !== undefined && canonicalize(next) === canonicalize(current)) return false;
    const body = { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: "Plugin", metadata: { name, namespace: this.#namespace }, status: next };
    try {
      await this.#api.patchNamespacedCustomObjectStatus(
        { group: API_GROUP, version: API_VERSION, namespace: this.#namespace, plural: "plugins", name, body, fieldManager: OPERATOR_FIELD_MANAGER, force: true },
        setHeaderOptions("Content-Type", PatchStrategy.ServerSideApply),
      );
    } catch (err) {
      throw apiError(`write status of Plugin ${this.#namespace}/${name}`, err);
    }
    return true;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** SSA removes a field by omitting it; a null would be stored as null. */
function dropNulls(status: PluginStatus): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(status)) if (v !== null) out[k] = v;
  return out;
}
