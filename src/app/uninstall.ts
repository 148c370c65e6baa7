/**
 * Uninstall with `--purge` (docs/adr/0162): a plugin goes with its grant, its own Secrets and the
 * WebAssembly module only it ran, and the log says what went.
 *
 * It is a recorded intent followed by idempotent steps. {@link requestUninstall} appends, in one
 * batch, `plugin.uninstall.requested` (naming exactly what is to go) with `plugin.deleted` and
 * `grant.deleted`: the log never holds half of a purge. {@link completeUninstalls} then carries out
 * every intent the log holds without its `plugin.uninstalled`: it removes the plugin's objects and
 * its Secrets through the target (a Secret already gone is fine), the module from the store, and
 * appends `plugin.uninstalled` once, expecting the stream's version it read, so two completers never
 * both record it. A process killed anywhere in between leaves an open intent, and the next
 * completion (the same command again, `openfief reconcile`, `up`, the operator) finishes it.
 */
import type { EventLog } from "../events/index.js";
import { pluginStream } from "../events/index.js";
import { completeUninstalls, DirectoryTarget, openIntent, pluginNames } from "../reconciler/index.js";
import type { PurgeTarget, Uninstalled } from "../reconciler/index.js";
import { defaultSecretName, grantedSecretNames, parseGrant } from "../plugins/index.js";
import type { Actor } from "./actor.js";
import { AppError } from "./errors.js";

/** What {@link requestUninstall} recorded. */
export interface UninstallRequest {
  readonly name: string;
  /** The seq of the `plugin.uninstall.requested` event. */
  readonly seq: number;
  /** Whether the grant goes too. */
  readonly grant: boolean;
  /** The Secrets that go. */
  readonly secrets: string[];
  /** The module that goes, when the plugin ran one no other instance runs. */
  readonly module: string | null;
  /** True when the log already held this intent, still open (the command was run again). */
  readonly resumed: boolean;
}

const MAX = Number.MAX_SAFE_INTEGER;

/** The module a plugin's latest desired workload runs, or null (a container, or nothing running). */
async function runningModule(store: EventLog, name: string): Promise<string | null> {
  const d = await store.lookups.lastOf(pluginStream(name), ["workload.desired"], MAX);
  return d !== null && d.data.running && d.data.module !== undefined ? d.data.module : null;
}

/** The Secrets an installed instance's grant maps (its own and, refused or not, any it claims). */
async function mappedSecrets(store: EventLog, name: string): Promise<Map<string, string>> {
  const g = await store.lookups.lastOf(pluginStream(name), ["grant.observed", "grant.deleted"], MAX);
  if (g?.type !== "grant.observed") return new Map();
  const parsed = parseGrant({ name, spec: g.data.spec });
  return parsed.ok ? grantedSecretNames(parsed.value.spec) : new Map();
}

/** The Secrets the plugin's latest grant mapped, deleted or not, since its last purge. */
async function lastGrantSecrets(store: EventLog, name: string): Promise<Map<string, string>> {
  const stream = pluginStream(name);
  const g = await store.lookups.lastOf(stream, ["grant.observed"], MAX);
  const purged = await store.lookups.lastOf(stream, ["plugin.uninstall.requested"], MAX);
  if (g === null || (purged !== null && purged.seq > g.seq)) return new Map();
  const parsed = parseGrant({ name, spec: g.data.spec });
  return parsed.ok ? grantedSecretNames(parsed.value.spec) : new Map();
}

/**
 * Records the intent to uninstall `name` and leave nothing behind, with the deletion of the
 * Plugin and its grant, in one batch. What goes: the grant, the Secrets its grant maps that no
 * other installed instance's grant maps too, and the WebAssembly module it runs when no other
 * instance runs it. Refused with `plugin_pinned` (recording nothing) when another installed
 * instance still runs the plugin's module, and `not_found` when there is nothing left to remove.
 * An intent already open is returned as it is (`resumed`), so running the command again finishes it.
 */
export async function requestUninstall(store: EventLog, name: string, actor: Actor, expectedVersion?: number): Promise<UninstallRequest> {
  const stream = pluginStream(name);
  const open = await openIntent(store, name);
  if (open !== null) return { name, seq: open.seq, grant: open.data.grant, secrets: open.data.secrets, module: open.data.module, resumed: true };
  const plan = await uninstallPlan(store, name);
  if (expectedVersion !== undefined && plan.version !== expectedVersion) {
    throw new AppError("precondition_failed", `plugin ${name} changed since version ${expectedVersion} (now ${plan.version}): look again before uninstalling`);
  }
  const { grant, secrets, module } = plan;
  const batch = [
    { stream, type: "plugin.uninstall.requested" as const, data: { name, grant, secrets, module }, actor, causedBy: null },
    ...(plan.installed ? [{ stream, type: "plugin.deleted" as const, data: { name }, actor, causedBy: null }] : []),
    ...(grant ? [{ stream, type: "grant.deleted" as const, data: { name }, actor, causedBy: null }] : []),
  ];
  const [intent] = await store.append(batch, { expected: { [stream]: plan.version }, durable: true });
  if (intent === undefined) throw new AppError("internal", "the store appended nothing");
  return { name, seq: intent.seq, grant, secrets, module, resumed: false };
}

/** What an uninstall with --purge of a plugin would remove, as the log stands at `version` of its stream. */
export interface UninstallPlan {
  readonly name: string;
  readonly version: number;
  /** Whether the Plugin is installed (not deleted yet). */
  readonly installed: boolean;
  readonly grant: boolean;
  readonly secrets: string[];
  readonly module: string | null;
}

/**
 * What {@link requestUninstall} would record, without recording it (the console's confirmation
 * shows it): the grant, the Secrets its grant maps that are this instance's, the module only it
 * runs. Refused as {@link requestUninstall} refuses: `plugin_pinned`, `not_found`.
 */
export async function uninstallPlan(store: EventLog, name: string): Promise<UninstallPlan> {
  const stream = pluginStream(name);
  const version = await store.version(stream);
  const plugin = await store.lookups.lastOf(stream, ["plugin.observed", "plugin.deleted"], MAX);
  const grant = await store.lookups.lastOf(stream, ["grant.observed", "grant.deleted"], MAX);
  const hasPlugin = plugin?.type === "plugin.observed";
  const hasGrant = grant?.type === "grant.observed";
  // The plugin's own Secrets: those of its latest grant since its last purge, even when a plain
  // delete already removed the grant (a purge after `delete grant` still finds them).
  const own = await lastGrantSecrets(store, name);
  const others = (await pluginNames(store)).filter((n) => n !== name);
  const module = await runningModule(store, name);
  const claimed = new Set<string>();
  let pinnedBy: string | null = null;
  for (const other of others) {
    const o = await store.lookups.lastOf(pluginStream(other), ["plugin.observed", "plugin.deleted"], MAX);
    if (o?.type !== "plugin.observed") continue;
    for (const s of (await mappedSecrets(store, other)).values()) claimed.add(s);
    if (module !== null && pinnedBy === null && (await runningModule(store, other)) === module) pinnedBy = other;
  }
  if (pinnedBy !== null) {
    throw new AppError("plugin_pinned", `plugin ${pinnedBy} still runs the module of ${name} (${module?.slice(0, 12) ?? ""}), so ${name} cannot be uninstalled with everything it left: uninstall ${pinnedBy} first, or delete ${name} without --purge`);
  }
  // A default name `<name>-<role>` is this instance's whoever reaches for it (docs/adr/0161); any
  // other Secret goes only when no other installed instance's grant maps it too.
  const secrets = [...new Set([...own].filter(([role, s]) => s === defaultSecretName(name, role) || !claimed.has(s)).map(([, s]) => s))].sort();
  if (!hasPlugin && !hasGrant && secrets.length === 0) throw new AppError("not_found", `plugin ${name} does not exist, and nothing of it is left to remove`);
  return { name, version, installed: hasPlugin, grant: hasGrant, secrets, module };
}


/** What {@link uninstallPlugin} did: the intent, and the purge when it was carried out here. */
export interface UninstallResult {
  readonly request: UninstallRequest;
  /** Null when no target was at hand: the reconciler that holds one (`up`, the operator) finishes it. */
  readonly uninstalled: Uninstalled | null;
}

/**
 * Uninstalls `name` and leaves nothing behind: records the intent ({@link requestUninstall}), then,
 * with a target at hand (the embedded control plane's folder), carries it out at once. Running it
 * again after a crash finishes the same intent; `plugin.uninstalled` is recorded once.
 */
export async function uninstallPlugin(store: EventLog, name: string, actor: Actor, target: PurgeTarget | null, expectedVersion?: number): Promise<UninstallResult> {
  const request = await requestUninstall(store, name, actor, expectedVersion);
  if (target === null) return { request, uninstalled: null };
  const [done] = await completeUninstalls(store, target, actor, name);
  return { request, uninstalled: done ?? null };
}

/** The purge target of the embedded control plane writing the cluster to `dir` (`<data>/cluster` by default). */
export function folderPurgeTarget(dir: string): PurgeTarget {
  return new DirectoryTarget(dir);
}
