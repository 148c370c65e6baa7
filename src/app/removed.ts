/**
 * Removed instances (docs/adr/0195): what a plugin did before it was removed stays in the log and
 * in the deliveries kept, and every face shows it as coming from a removed instance, in the words of
 * {@link removedInstanceText}.
 *
 * An instance is removed by its Plugin's deletion (`plugin.deleted`: its grant and Secrets are
 * kept, and applying it again brings the same instance back) or by an uninstall
 * (`plugin.uninstall.requested`, then `plugin.uninstalled`: nothing of it is left, and a Plugin of
 * the same name applied later is a new instance). So an event, or a delivery, is from a removed
 * instance when an uninstall of its plugin came after it, or when its plugin's Plugin is deleted now
 * and was deleted after it. The events that remove it are not marked: they are the removal.
 */
import type { EventLog, KnownEvent } from "../events/index.js";
import { isPluginName, pluginStream } from "../events/index.js";
import type { DeliveryRecord, StoredDelivery } from "./deliveries.js";
import { removedInstanceText } from "./wording.js";

const MAX = Number.MAX_SAFE_INTEGER;

/** How an instance went: its Plugin deleted (grant and Secrets kept), or uninstalled with everything it left. */
export type RemovalKind = "deleted" | "uninstalled";

/** The removal of an instance, as every face shows it. */
export interface RemovedInstance {
  /** The instance's (the plugin's) name. */
  readonly name: string;
  readonly how: RemovalKind;
  /** The seq of the event that removed it: `plugin.deleted`, or `plugin.uninstall.requested`. */
  readonly seq: number;
  /** When it was removed (that event's time, ISO-8601). */
  readonly at: string;
  /** For an uninstall, the seq of its `plugin.uninstalled` once carried out; null before, and for a deletion. */
  readonly doneSeq: number | null;
  /** "from removed instance NAME (removed at TIME, event N, uninstalled)": the words every face prints. */
  readonly text: string;
}

function removal(name: string, how: RemovalKind, e: KnownEvent, doneSeq: number | null): RemovedInstance {
  const r = { name, how, seq: e.seq, at: e.time, doneSeq };
  return { ...r, text: removedInstanceText(r) };
}

/** The seq of the `plugin.uninstalled` that carried out the request at `seq`, or null. */
async function doneOf(store: EventLog, name: string, seq: number): Promise<number | null> {
  const [done] = await store.read({ stream: pluginStream(name), type: "plugin.uninstalled", afterSeq: seq });
  return done?.type === "plugin.uninstalled" && done.data.request === seq ? done.seq : null;
}

/**
 * How `name` is removed now: uninstalled (its latest uninstall request came after its latest Plugin),
 * deleted (its latest Plugin event is a deletion), or null while it is installed (or was never
 * heard of).
 */
export async function currentRemoval(store: EventLog, name: string): Promise<RemovedInstance | null> {
  if (!isPluginName(name)) return null;
  const stream = pluginStream(name);
  const life = await store.lookups.lastOf(stream, ["plugin.observed", "plugin.deleted", "plugin.uninstall.requested"], MAX);
  if (life === null || life.type === "plugin.observed") return null;
  if (life.type === "plugin.uninstall.requested") return removal(name, "uninstalled", life, await doneOf(store, name, life.seq));
  // A deletion: on its own, or the one an uninstall records with its request (just before it).
  const request = await store.lookups.lastOf(stream, ["plugin.uninstall.requested", "plugin.observed"], life.seq);
  if (request?.type === "plugin.uninstall.requested") return removal(name, "uninstalled", request, await doneOf(store, name, request.seq));
  return removal(name, "deleted", life, null);
}

/** Where a thing of a plugin sits in the log: after an event (`seq`), or at a time (a delivery kept). */
export type LogPoint = { readonly seq: number } | { readonly time: string };

/** What decides whether something of a plugin is from a removed instance: its uninstalls, in order, and how it stands now. */
interface PluginRemovals {
  readonly uninstalls: readonly RemovedInstance[];
  readonly current: RemovedInstance | null;
}

/**
 * Each plugin's removals, read once for a face that words many events at once (the log as it stood
 * when first read; a face reading again starts a new one).
 */
export type RemovalCache = Map<string, Promise<PluginRemovals>>;

async function removalsOf(store: EventLog, name: string): Promise<PluginRemovals> {
  const requests = await store.read({ stream: pluginStream(name), type: "plugin.uninstall.requested" });
  const uninstalls: RemovedInstance[] = [];
  for (const r of requests) uninstalls.push(removal(name, "uninstalled", r, await doneOf(store, name, r.seq)));
  return { uninstalls, current: await currentRemoval(store, name) };
}

/**
 * The removal that ended the instance of `name` something at `point` came from, or null when that
 * instance is still installed. The first uninstall after it ended it; else a deletion after it that
 * still holds (a Plugin deleted and applied again is the same instance, still there).
 */
export async function removalAfter(store: EventLog, name: string, point: LogPoint, cache?: RemovalCache): Promise<RemovedInstance | null> {
  if (!isPluginName(name)) return null;
  let read = cache?.get(name);
  if (read === undefined) {
    read = removalsOf(store, name);
    cache?.set(name, read);
  }
  const { uninstalls, current } = await read;
  const after = (r: RemovedInstance): boolean => ("seq" in point ? r.seq > point.seq : Date.parse(r.at) >= Date.parse(point.time));
  const ended = uninstalls.find(after);
  if (ended !== undefined) return ended;
  return current?.how === "deleted" && after(current) ? current : null;
}

/** The types that are the removal itself (never marked as from a removed instance). */
const REMOVAL_TYPES: ReadonlySet<string> = new Set(["plugin.deleted", "plugin.uninstall.requested", "plugin.uninstalled"]);

/** The plugin an event is about: its stream's, or the `plugin` it names (an egress decision, a call). */
export function pluginOfEvent(e: KnownEvent): string | null {
  if (e.stream.startsWith("plugin/")) return e.stream.slice("plugin/".length);
  const data: object = e.data;
  return "plugin" in data && typeof data.plugin === "string" ? data.plugin : null;
}

/** Whether an event came from an instance removed since, and which removal; null otherwise. */
export async function eventRemoval(store: EventLog, e: KnownEvent, cache?: RemovalCache): Promise<RemovedInstance | null> {
  if (REMOVAL_TYPES.has(e.type)) return null;
  const name = pluginOfEvent(e);
  return name === null ? null : removalAfter(store, name, { seq: e.seq }, cache);
}

/** For a page of events, the removed instance each came from, by seq (only those from one). */
export async function eventRemovals(store: EventLog, events: readonly KnownEvent[]): Promise<Record<string, RemovedInstance>> {
  const out: Record<string, RemovedInstance> = {};
  const cache: RemovalCache = new Map();
  for (const e of events) {
    const r = await eventRemoval(store, e, cache);
    if (r !== null) out[String(e.seq)] = r;
  }
  return out;
}

/** A delivery kept, with the removed instance it came from (null: its instance is installed). */
export type MarkedDelivery<D extends DeliveryRecord = DeliveryRecord> = D & { readonly removed: RemovedInstance | null };

/** Each delivery with the removed instance it came from, if any (each plugin's removals read once). */
export async function markRemovedDeliveries<D extends DeliveryRecord>(store: EventLog, records: readonly D[]): Promise<MarkedDelivery<D>[]> {
  const cache: RemovalCache = new Map();
  const out: MarkedDelivery<D>[] = [];
  for (const r of records) out.push({ ...r, removed: await removalAfter(store, r.plugin, { time: r.recordedAt }, cache) });
  return out;
}

/** One delivery with the removed instance it came from. */
export async function markRemovedDelivery(store: EventLog, d: StoredDelivery): Promise<MarkedDelivery<StoredDelivery>> {
  return { ...d, removed: await removalAfter(store, d.plugin, { time: d.recordedAt }) };
}
