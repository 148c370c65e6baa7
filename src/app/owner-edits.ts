/**
 * The owner's writes: apply Plugin and PluginGrant resources, delete one, approve what a plugin's
 * current version waits for. Each takes the actor it records (`owner:cli`, `owner:web:<user>`).
 *
 * Every write expects the stream version it read *before* the facts it decided on, so a write by
 * another process in between (a CLI, the console, the reconciler) is a conflict, never a decision
 * on stale facts. Without a version from the caller a use case retries on conflict (it re-reads the
 * facts); with one (the HTTP API's `If-Match`) a conflict is `precondition_failed` and nothing changes.
 * Each is on disk before it returns (the store's durable commits), so an answer an owner was given
 * survives a power loss.
 */
import { pluginStream, StoreError } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import { defaultSecretName, EMPTY_GRANT_SPEC, EMPTY_PENDING, isEmptyPending, loadSchemaChecks, needsApproval, parseGrant, parsePlugin, sortRules } from "../plugins/index.js";
import type { FieldError, GrantSpec, JsonValue, Pending, SecretRole } from "../plugins/index.js";
import { standingBlockers } from "../projections/index.js";
import type { HardBlocker } from "../projections/index.js";
import type { Actor } from "./actor.js";
import { AppError } from "./errors.js";
import type { Resource } from "./resources.js";
import { blockerPhrase } from "./wording.js";

/** How many times a write re-reads its facts after a conflict before giving up. */
const CONFLICT_RETRIES = 5;

/** What `apply` did with one resource. */
export interface Applied {
  readonly kind: "Plugin" | "PluginGrant";
  readonly name: string;
  /** False when the resource was already recorded with this spec. */
  readonly changed: boolean;
  readonly seq?: number;
  /**
   * For a Plugin whose config its own manifest's schema refuses: every problem. It is recorded all
   * the same (the cluster would hold it too), and the reconciler will not run that config: a
   * warning for the faces to show, not a failure of the write.
   */
  readonly configErrors?: readonly FieldError[];
}

/** Records every resource as the actor's observation; an unchanged spec records nothing. */
export function applyResources(store: EventLog, resources: readonly Resource[], actor: Actor): Promise<Applied[]> {
  return store.durably(async () => {
    const out: Applied[] = [];
    for (const r of resources) {
      const type = r.kind === "Plugin" ? "plugin.observed" : "grant.observed";
      const e = await store.observe({ stream: pluginStream(r.name), type, data: { name: r.name, spec: r.raw as JsonValue }, actor, causedBy: null });
      const schema = r.kind === "Plugin" ? r.plugin.spec.manifest.configSchema : undefined;
      const configErrors = r.kind === "Plugin" && schema !== undefined ? (await loadSchemaChecks()).validateConfig(schema, r.plugin.spec.config, "spec.config") : [];
      out.push({ kind: r.kind, name: r.name, changed: e !== null, ...(e === null ? {} : { seq: e.seq }), ...(configErrors.length === 0 ? {} : { configErrors }) });
    }
    return out;
  });
}

/** A kind of resource `delete` takes, as users write it. */
export type DeletableKind = "plugin" | "grant";

/** The kind a user wrote (`plugin`, `plugins`, `grant`, `plugingrant`, `PluginGrant`…), or null. */
export function deletableKind(text: string): DeletableKind | null {
  const k = text.toLowerCase();
  if (k === "plugin" || k === "plugins") return "plugin";
  if (k === "grant" || k === "grants" || k === "plugingrant" || k === "plugingrants") return "grant";
  return null;
}

/** What `delete` recorded. */
export interface Deleted {
  readonly kind: DeletableKind;
  readonly name: string;
  readonly seq: number;
}

/** Records that a Plugin (its workload stops, its allow-list entry goes) or a PluginGrant is gone. */
export function deleteResource(store: EventLog, kind: DeletableKind, name: string, actor: Actor, expectedVersion?: number): Promise<Deleted> {
  return withConflictRetry(store, expectedVersion, async () => {
    const stream = pluginStream(name);
    const now = await store.version(stream);
    const version = expectedVersion ?? now;
    if (expectedVersion !== undefined && now !== expectedVersion) {
      throw new AppError("precondition_failed", `plugin ${name} changed since version ${expectedVersion} (now ${now}): look again before deleting`);
    }
    const last = kind === "plugin" ? await lastOf(store, stream, ["plugin.observed", "plugin.deleted"], version) : await lastOf(store, stream, ["grant.observed", "grant.deleted"], version);
    if (last === null || last.endsWith(".deleted")) throw new AppError("not_found", `${kind} ${name} does not exist`);
    const [e] = await store.append([{ stream, type: kind === "plugin" ? "plugin.deleted" : "grant.deleted", data: { name }, actor, causedBy: null }], { expected: { [stream]: version } });
    if (e === undefined) throw new AppError("internal", "the store appended nothing");
    return { kind, name, seq: e.seq };
  });
}

/** What `approve` did. */
export interface Approved {
  readonly name: string;
  /** What was added to the grant (nothing when nothing was pending). */
  readonly approved: Pending;
  /** The grant edit's seq, or null when nothing was pending. */
  readonly seq: number | null;
  /** The plugin's stream version after the approval. */
  readonly version: number;
  /** Each Secret role approved now with the instance's Secret it mounts (docs/adr/0151); absent when none. */
  readonly secretRoles?: readonly SecretRole[];
}

/**
 * The grant of plugin `name` with the pending permissions added: the grant's lists in their order,
 * then the new entries. A pending Secret role is approved in `secretRoles` and mapped to this
 * instance's own Secret, `<name>-<role>` (docs/adr/0160, 0151), never added to the old `secrets`
 * list, which mounts the Secret named as the role and so is shared by every instance of an image.
 * `secretRoles` is written only when it holds a role, so a grant without Secrets reads as before.
 */
export function grantWithPending(grant: GrantSpec, pending: Pending, name: string): GrantSpec {
  const rules = [...(grant.rbac ?? []), ...(pending.rbac ?? [])];
  const roles = [...(grant.secretRoles ?? []), ...pending.secrets.map((role) => ({ role, secret: defaultSecretName(name, role) }))];
  return {
    capabilities: [...grant.capabilities, ...pending.capabilities],
    egress: [...grant.egress, ...pending.egress],
    secrets: [...grant.secrets],
    ...(roles.length === 0 ? {} : { secretRoles: roles }),
    dataTiers: [...grant.dataTiers, ...pending.dataTiers],
    ...(rules.length === 0 ? {} : { rbac: sortRules(rules) }),
  };
}

/**
 * Refuses (`conflict`, naming the field) an approval whose grant would not parse: a pending role
 * whose default Secret `<name>-<role>` the grant already mounts for another role, or one too long
 * for Kubernetes. The owner names that role's Secret in the grant instead (`spec.secretRoles[].secret`).
 */
function checkApprovedGrant(name: string, spec: GrantSpec): void {
  const parsed = parseGrant({ name, spec });
  if (parsed.ok) return;
  const first = parsed.errors[0];
  const more = parsed.errors.length > 1 ? ` (and ${parsed.errors.length - 1} more)` : "";
  throw new AppError("conflict", `${name}: nothing approved (conflict): the grant would not hold, at ${first?.path ?? "spec"}: ${first?.message ?? "invalid"}${more}; apply a PluginGrant naming that role's Secret in spec.secretRoles[].secret instead`, first?.path);
}

/** What a plugin's current version waits for, as the log stands at `version` of its stream, and what keeps it from running whatever is approved. */
export async function pendingOf(store: EventLog, name: string, version?: number): Promise<{ pending: Pending; grant: GrantSpec; version: number; pluginSeq: number; blockers: HardBlocker[] }> {
  const stream = pluginStream(name);
  const at = version ?? await store.version(stream);
  const spec = (await store.read({ stream, type: ["plugin.observed", "plugin.deleted"] })).filter((e) => e.version <= at).at(-1);
  if (spec === undefined || spec.type === "plugin.deleted") throw new AppError("not_found", `plugin ${name} does not exist`);
  const blockers = await standingBlockers(store, name, spec.data.spec);
  const lastGrant = (await store.read({ stream, type: ["grant.observed", "grant.deleted"] })).filter((e) => e.version <= at).at(-1);
  let grant: GrantSpec = EMPTY_GRANT_SPEC;
  if (lastGrant !== undefined && lastGrant.type === "grant.observed") {
    const g = parseGrant({ name, spec: lastGrant.data.spec });
    if (g.ok) grant = g.value.spec;
  }
  const plugin = parsePlugin({ name, spec: spec.data.spec });
  // An invalid spec asks for nothing an approval could add; its blocker says why.
  const pending = plugin.ok ? needsApproval(plugin.value.spec.manifest, grant) : EMPTY_PENDING;
  return { pending, grant, version: at, pluginSeq: spec.seq, blockers };
}

/** The code `approve` refuses with for the first blocker of the version asked for: it names the blocker. */
export const BLOCKER_REFUSAL: { readonly [C in HardBlocker["code"]]: "spec_invalid" | "signature_refused" | "config_refused" } = {
  spec_invalid: "spec_invalid",
  signature_refused: "signature_refused",
  config_mismatch: "config_refused",
};

/**
 * Adds exactly what the plugin's current version asks beyond its grant to the grant, as the
 * actor's grant edit. Nothing else changes: no permission the owner did not see pending is added.
 * With `expectedVersion` (the version the owner saw), a stream moved on is `precondition_failed`.
 */
export function approve(store: EventLog, name: string, actor: Actor, expectedVersion?: number): Promise<Approved> {
  return withConflictRetry(store, expectedVersion, async () => {
    const plan = await planApproval(store, name, expectedVersion);
    if (plan.spec === null) return { name, approved: plan.pending, seq: null, version: plan.version };
    return appendApproval(store, name, actor, { ...plan, spec: plan.spec });
  });
}

/** What approving a plugin adds, read from the log: the grant before and after, at the version the append expects. */
export interface ApprovalPlan {
  readonly pending: Pending;
  /** The grant the log holds now (the empty grant when none). */
  readonly grant: GrantSpec;
  /** The grant with the pending permissions added, or null when nothing is pending. */
  readonly spec: GrantSpec | null;
  /** The plugin's stream version the approval expects. */
  readonly version: number;
  /** The plugin version's seq (the approval's cause). */
  readonly pluginSeq: number;
}

/**
 * What an approval of `name` would add, as the log stands (at `expectedVersion` when given: a
 * stream moved on is `precondition_failed`); refuses a version that cannot run whatever is approved.
 */
export async function planApproval(store: EventLog, name: string, expectedVersion?: number): Promise<ApprovalPlan> {
  // The version is read before the facts, and the append expects it.
  const now = await store.version(pluginStream(name));
  const version = expectedVersion ?? now;
  if (expectedVersion !== undefined && now !== expectedVersion) {
    throw new AppError("precondition_failed", `plugin ${name} changed since version ${expectedVersion} (now ${now}): look again before approving`);
  }
  const { pending, grant, pluginSeq, blockers } = await pendingOf(store, name, version);
  const first = blockers[0];
  // No approval for a version that cannot run whatever is approved: its blocker comes first.
  if (first !== undefined) {
    const code = BLOCKER_REFUSAL[first.code];
    throw new AppError(code, `${name}: nothing approved (${code}): the version asked for cannot run whatever is approved, because ${blockers.map(blockerPhrase).join("; and ")}; fix that first`);
  }
  const spec = isEmptyPending(pending) ? null : grantWithPending(grant, pending, name);
  if (spec !== null) checkApprovedGrant(name, spec);
  return { pending, grant, spec, version, pluginSeq };
}

/** Appends a planned approval as `actor`'s grant edit, expecting the plan's version (a conflict is the store's `conflict`). */
export async function appendApproval(store: EventLog, name: string, actor: Actor, plan: ApprovalPlan & { readonly spec: GrantSpec }): Promise<Approved> {
  const [e] = await store.append(
    [{ stream: pluginStream(name), type: "grant.observed", data: { name, spec: plan.spec as unknown as JsonValue }, actor, causedBy: plan.pluginSeq }],
    { expected: { [pluginStream(name)]: plan.version } },
  );
  if (e === undefined) throw new AppError("internal", "the store appended nothing");
  const roles = (plan.spec.secretRoles ?? []).filter((r) => plan.pending.secrets.includes(r.role));
  return { name, approved: plan.pending, seq: e.seq, version: e.version, ...(roles.length === 0 ? {} : { secretRoles: roles }) };
}

async function lastOf(store: EventLog, stream: string, types: readonly ("plugin.observed" | "plugin.deleted" | "grant.observed" | "grant.deleted")[], version: number): Promise<string | null> {
  return (await store.read({ stream, type: types })).filter((e) => e.version <= version).at(-1)?.type ?? null;
}

/** Runs a write durably; on a conflict re-runs it (re-reading its facts), unless the caller named the version it saw. */
async function withConflictRetry<T>(store: EventLog, expectedVersion: number | undefined, write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.durably(write);
    } catch (err) {
      if (!(err instanceof StoreError) || err.code !== "conflict") throw err;
      if (expectedVersion !== undefined) throw new AppError("precondition_failed", `${err.message.split(":")[0] ?? "the stream"} changed since version ${expectedVersion}: look again`);
      if (attempt >= CONFLICT_RETRIES) throw new AppError("conflict", "another writer kept changing the plugin; try again");
    }
  }
}
