/**
 * Carrying out uninstall intents (docs/adr/0162): the steps after `plugin.uninstall.requested`,
 * each idempotent, ending in `plugin.uninstalled` recorded once. The owner's request is a use case
 * of the app (`requestUninstall`); the reconciler finishes open intents at every pass, so a purge
 * a crash interrupted converges on restart.
 */
import type { EventLog, EventOf, UninstalledResource } from "../events/index.js";
import { pluginStream, StoreError } from "../events/index.js";

/** Where a purge's effects happen: the reconciler's target (a directory, the cluster). */
export interface PurgeTarget {
  /** Removes the plugin's objects; idempotent. */
  removePlugin(plugin: string): Promise<void>;
  /** Deletes these Secrets of the openfief namespace; those not found are `absent`. Idempotent. */
  removeSecrets(names: readonly string[]): Promise<{ readonly removed: string[]; readonly absent: string[] }>;
  /**
   * Deletes the plugin's Plugin and PluginGrant resources where they live apart from the log (a
   * cluster), so that nothing observes them back; each found gone is `absent`. Idempotent. Absent
   * where the log itself holds them (a folder).
   */
  removeResources?(plugin: string): Promise<UninstalledResource[]>;
}

/** What a completed purge removed (the `plugin.uninstalled` event's data and seq). */
export interface Uninstalled {
  readonly name: string;
  readonly seq: number;
  readonly secrets: string[];
  readonly absent: string[];
  readonly grant: boolean;
  readonly module: string | null;
  /** The cluster's resources deleted (or found gone); none where the log holds them. */
  readonly resources: UninstalledResource[];
}

const MAX = Number.MAX_SAFE_INTEGER;

/** The names of every plugin stream the log holds. */
export async function pluginNames(store: EventLog): Promise<string[]> {
  const heads = await store.lookups.streamHeads("plugin/");
  return heads.map((h) => h.stream.slice("plugin/".length)).filter((n) => n.length > 0);
}

/** The latest intent of a plugin that has no `plugin.uninstalled` yet, or null. */
export async function openIntent(store: EventLog, name: string): Promise<EventOf<"plugin.uninstall.requested"> | null> {
  const stream = pluginStream(name);
  const intent = await store.lookups.lastOf(stream, ["plugin.uninstall.requested"], MAX);
  if (intent === null) return null;
  const done = await store.lookups.lastOf(stream, ["plugin.uninstalled"], MAX);
  return done !== null && done.data.request === intent.seq ? null : intent;
}

/** A hook for the restart-safety test: SIGKILL after the first Secret of a purge is removed. */
function killMidPurgeForTests(): void {
  if (process.env["OPENFIEF_TEST_KILL_MID_PURGE"] === "1") process.kill(process.pid, "SIGKILL");
}

/**
 * Carries out every open uninstall intent (or only `name`'s): the plugin's objects and Secrets
 * through `target`, the module from the store, then `plugin.uninstalled` once. Idempotent: an
 * intent already completed is skipped, and a Secret already gone is recorded as `absent`.
 */
export async function completeUninstalls(store: EventLog, target: PurgeTarget, actor: string, name?: string): Promise<Uninstalled[]> {
  const names = name === undefined ? await pluginNames(store) : [name];
  const done: Uninstalled[] = [];
  for (const n of names) {
    const intent = await openIntent(store, n);
    if (intent === null) continue;
    const stream = pluginStream(n);
    const version = await store.version(stream);
    // The resources first: nothing observes the Plugin back while its objects go.
    const resources = target.removeResources === undefined ? [] : await target.removeResources(n);
    await target.removePlugin(n);
    const removed: string[] = [];
    const absent: string[] = [];
    for (const secret of intent.data.secrets) {
      const r = await target.removeSecrets([secret]);
      removed.push(...r.removed);
      absent.push(...r.absent);
      killMidPurgeForTests();
    }
    const module = intent.data.module;
    if (module !== null && (await store.tables.modules.get(module)) !== undefined) {
      await store.tables.modules.uninstall(module, { stream: "system", type: "module.uninstalled", data: { digest: module }, actor, causedBy: intent.seq });
    }
    const data = { name: n, request: intent.seq, grant: intent.data.grant, secrets: removed.sort(), absent: absent.sort(), module, resources };
    try {
      const [e] = await store.append([{ stream, type: "plugin.uninstalled", data, actor, causedBy: intent.seq }], { expected: { [stream]: version }, durable: true });
      if (e !== undefined) done.push({ name: n, seq: e.seq, secrets: data.secrets, absent: data.absent, grant: data.grant, module, resources });
    } catch (err) {
      // Another completer recorded it meanwhile (or the owner wrote): the next pass looks again.
      if (!(err instanceof StoreError && err.code === "conflict")) throw err;
    }
  }
  return done;
}
