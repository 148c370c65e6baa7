/**
 * `openfief log` and the API's events: the log filtered by plugin (its own stream with its config
 * verdicts, its egress decisions, and the signature verdicts about the images it asked for),
 * event type and time, paged by sequence number, and followed as it grows. The CLI, the JSON API
 * (and its server-sent events) and the console's log page read it here, so a filter means the
 * same on every face — and each event reads as the same sentence ({@link eventSentence}).
 */
import { coreStream, egressStream, isPluginName, pluginStream, TRUST_STREAM, verdictKey } from "../events/index.js";
import type { EventLog, KnownEvent, ReadFilter } from "../events/index.js";
import { parseImageRef } from "../plugins/index.js";
import { grantBefore, readySchemaCheck, recordedManifestDigest, specManifestDigest } from "../projections/index.js";
import { AppError } from "./errors.js";
import { eventRemoval } from "./removed.js";
import type { RemovalCache } from "./removed.js";
import { describeEvent } from "./wording.js";

/** What to read of the log; every field narrows. */
export interface LogQuery {
  /** Only this plugin's events: its own stream, its egress decisions, the core's refusals of its calls, the signature verdicts about its images. */
  readonly plugin?: string;
  /** Only events of these types (any of them). */
  readonly types?: readonly string[];
  /** Only events at or after this time. */
  readonly since?: Date;
  /** Only events at or before this time. */
  readonly until?: Date;
  /** Only events after this sequence number. */
  readonly afterSeq?: number;
  /** At most this many events. */
  readonly limit?: number;
}

/** One page of the log. */
export interface LogPage {
  readonly events: KnownEvent[];
  /** The `afterSeq` of the next page, or null when this page was the last one for now. */
  readonly next: number | null;
  /** The log's last sequence number when the page was read. */
  readonly head: number;
}

/** The most types one query may name. */
export const MAX_LOG_TYPES = 32;

/** A time as an owner writes it (ISO-8601, at least a date); refused (`usage`) otherwise. */
export function parseTime(value: string, what: string): Date {
  const d = new Date(value);
  if (value.length > 64 || !/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(d.getTime())) {
    throw new AppError("usage", `${what} must be an ISO-8601 time, such as 2026-11-30T12:00:00Z`, what);
  }
  return d;
}

/** A whole number as an owner writes it, at most `max`; refused (`usage`) otherwise. */
export function parseCount(value: string, what: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^\d{1,15}$/.test(value) || Number(value) > max) throw new AppError("usage", `${what} must be a whole number${max === Number.MAX_SAFE_INTEGER ? "" : ` from 0 to ${max}`}`, what);
  return Number(value);
}

/** Refuses a query naming a plugin that cannot exist or a type the catalog does not define. */
export function checkLogQuery(store: EventLog, q: LogQuery): void {
  if (q.plugin !== undefined && !isPluginName(q.plugin)) {
    throw new AppError("usage", `invalid plugin name ${JSON.stringify(q.plugin.slice(0, 64))}: a DNS label that starts with a letter, at most 56 characters`, "plugin");
  }
  const types = q.types ?? [];
  if (types.length > MAX_LOG_TYPES) throw new AppError("usage", `at most ${MAX_LOG_TYPES} event types at once`, "type");
  const known = new Set(store.registry.types());
  const unknown = types.filter((t) => !known.has(t));
  if (unknown.length > 0) throw new AppError("usage", `unknown event type ${JSON.stringify(unknown[0]?.slice(0, 64))}: one of ${[...known].sort().join(", ")}`, "type");
}

/**
 * Refuses (`usage`) a plugin the log has never heard of: a mistyped `--plugin` would otherwise
 * print nothing, which reads as "nothing happened to it".
 */
export async function requireKnownPlugin(store: EventLog, name: string): Promise<void> {
  if ((await store.version(pluginStream(name))) === 0 && (await store.version(egressStream(name))) === 0) {
    throw new AppError("usage", `no plugin ${JSON.stringify(name)} in the log: nothing was applied, granted or decided for it (openfief get plugins lists those there are)`, "plugin");
  }
}

/** The events matching `q` with `afterSeq < seq ≤ toSeq`, at most `limit`, in sequence order. */
async function readRange(store: EventLog, q: LogQuery, afterSeq: number, toSeq: number, limit: number | undefined): Promise<KnownEvent[]> {
  const base: ReadFilter = {
    afterSeq,
    toSeq,
    ...(q.types === undefined || q.types.length === 0 ? {} : { type: q.types }),
    ...(q.since === undefined ? {} : { since: q.since }),
    ...(q.until === undefined ? {} : { until: q.until }),
    ...(limit === undefined ? {} : { limit }),
  };
  if (q.plugin === undefined) return store.read(base);
  const all = [
    ...(await store.read({ ...base, stream: pluginStream(q.plugin) })),
    ...(await store.read({ ...base, stream: egressStream(q.plugin) })),
    ...(await store.read({ ...base, stream: coreStream(q.plugin) })),
    ...(q.types === undefined || q.types.length === 0 || q.types.includes("signature.verdict") ? await pluginVerdicts(store, q.plugin, base, limit) : []),
  ].sort((a, b) => a.seq - b.seq);
  return limit === undefined ? all : all.slice(0, limit);
}

/** The verdict keys of the versions a plugin asked for, as far as its stream was read. */
interface VerdictKeys {
  /** The seq of the last of the plugin's events read. */
  after: number;
  readonly keys: Set<string>;
  readonly digests: Set<string>;
}

// Read once per plugin and store, then only what was appended since: a followed or paged log
// asks again and again, and each spec costs a parse (its config schema compiled).
const KEYS = new WeakMap<EventLog, Map<string, VerdictKeys>>();

/**
 * The verdict keys (digest with manifest, or digest alone) of every version a plugin asked for or
 * was said to run. Whenever it asked for one, a verdict about it is part of its story: the one
 * recorded for another plugin on the same image and manifest is the one its decisions rely on.
 */
async function verdictKeysOf(store: EventLog, name: string): Promise<VerdictKeys> {
  const byName = KEYS.get(store) ?? new Map<string, VerdictKeys>();
  KEYS.set(store, byName);
  const known = byName.get(name) ?? { after: 0, keys: new Set<string>(), digests: new Set<string>() };
  byName.set(name, known);
  for (const e of await store.read({ stream: pluginStream(name), type: ["plugin.observed", "previous.observed"], afterSeq: known.after })) {
    known.after = e.seq;
    // The spec's schema is checked as it is parsed: the log's verdicts vouch for it, or the checks load.
    if (e.type === "plugin.observed") await readySchemaCheck(store, name, e.data.spec);
    const [image, manifest] = e.type === "plugin.observed" ? [specImageOf(e.data.spec), specManifestDigest(name, e.data.spec)]
      : e.type === "previous.observed" ? [e.data.deployed.image, recordedManifestDigest(e.data.deployed)] : [null, null];
    const ref = image === null ? null : parseImageRef(image);
    if (ref === null || !ref.ok) continue;
    known.digests.add(ref.value.digest);
    known.keys.add(verdictKey(ref.value.digest, manifest));
  }
  return known;
}

function specImageOf(spec: unknown): string | null {
  return typeof spec === "object" && spec !== null && "image" in spec && typeof spec.image === "string" ? spec.image : null;
}

/** How many verdicts one read of the trust stream takes while looking for a plugin's. */
const VERDICT_PAGE = 500;

/**
 * The signature verdicts about the images a plugin asked for (each checked against its manifest,
 * or against none), within `base`'s range and times, at most `limit`. Verdicts live in the trust
 * stream, keyed by digest; a digest two plugins share has one verdict per manifest.
 */
export async function pluginVerdicts(store: EventLog, name: string, base: ReadFilter, limit?: number): Promise<KnownEvent[]> {
  const { keys, digests } = await verdictKeysOf(store, name);
  if (digests.size === 0) return [];
  const out: KnownEvent[] = [];
  for (let after = base.afterSeq ?? 0; ;) {
    const page = await store.read({ ...base, afterSeq: after, stream: TRUST_STREAM, type: "signature.verdict", limit: VERDICT_PAGE });
    for (const e of page) {
      if (e.type !== "signature.verdict") continue;
      const d = e.data;
      if (d.manifest === undefined ? digests.has(d.digest) : keys.has(verdictKey(d.digest, d.manifest))) out.push(e);
    }
    if (limit !== undefined && out.length >= limit) return out.slice(0, limit);
    const last = page.at(-1);
    if (page.length < VERDICT_PAGE || last === undefined) return out;
    after = last.seq;
  }
}

/**
 * An event as its sentence, with what the log knows around it: a grant edit says what it
 * changed (`+egress static.nbp.pl:443`) against the grant just before it.
 */
export async function eventSentence(store: EventLog, e: KnownEvent, cache?: RemovalCache): Promise<string> {
  const base = await unmarkedEventSentence(store, e);
  const removed = await eventRemoval(store, e, cache);
  return removed === null ? base : `${base} — ${removed.text}`;
}

/** What an event says, without the removed-instance mark: for a face that says it once, above. */
export async function unmarkedEventSentence(store: EventLog, e: KnownEvent): Promise<string> {
  return e.type === "grant.observed" || e.type === "grant.deleted" ? describeEvent(e, { grantBefore: await grantBefore(store, e.data.name, e.seq) }) : describeEvent(e);
}

/** Each event's {@link eventSentence}, by seq: for a face that words many at once. */
export async function eventSentences(store: EventLog, events: readonly KnownEvent[]): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  const cache: RemovalCache = new Map();
  for (const e of events) if (!out.has(e.seq)) out.set(e.seq, await eventSentence(store, e, cache));
  return out;
}

/** Reads one page of the log (checked first, see {@link checkLogQuery}), in sequence order. */
export async function readLog(store: EventLog, q: LogQuery): Promise<LogPage> {
  checkLogQuery(store, q);
  const head = await store.head();
  const events = await readRange(store, q, q.afterSeq ?? 0, head, q.limit);
  const full = q.limit !== undefined && events.length === q.limit;
  return { events, next: full ? (events.at(-1)?.seq ?? null) : null, head };
}

/** The latest events of the log, for a face that shows the newest first. */
export interface LogTail {
  /** In sequence order (oldest first). */
  readonly events: KnownEvent[];
  /** The `beforeSeq` of the next older page, or null when the log holds nothing older. */
  readonly older: number | null;
  readonly head: number;
}

/** How far back one tail read looks for matching events. */
const MAX_TAIL_SCAN = 200_000;

/** The latest `limit` events matching `q` before `beforeSeq` (default: the end of the log). */
export async function readLogTail(store: EventLog, q: Omit<LogQuery, "afterSeq" | "limit">, o: { readonly beforeSeq?: number; readonly limit: number }): Promise<LogTail> {
  checkLogQuery(store, q);
  const head = await store.head();
  let hi = Math.min(head, (o.beforeSeq ?? head + 1) - 1);
  let window = Math.max(64, o.limit * 2);
  const stop = Math.max(0, hi - MAX_TAIL_SCAN);
  let found: KnownEvent[] = [];
  // Sequence numbers have no gaps, so windows of seq walk back through the log without a reverse index.
  while (found.length < o.limit && hi > stop) {
    const lo = Math.max(stop, hi - window);
    found = [...(await readRange(store, q, lo, hi, undefined)), ...found];
    hi = lo;
    window = Math.min(window * 2, 20_000);
  }
  const events = found.slice(-o.limit);
  const first = events[0]?.seq;
  const older = found.length > o.limit && first !== undefined ? first : hi > 0 ? (first ?? hi + 1) : null;
  return { events, older, head };
}

/** The event types the log's catalog defines, sorted. */
export function eventTypes(store: EventLog): string[] {
  return store.registry.types().sort();
}

/** Options of {@link followLog}. */
export interface FollowOptions {
  /** How often to look for events another process appended (ms); this process's appends are seen at once. */
  readonly pollMs?: number;
  /** Events per read while catching up. */
  readonly pageSize?: number;
}

/**
 * Calls `onEvents` with every event matching `q` appended after `afterSeq`, in order, until the
 * returned function is called. Appends of this process arrive at once (the store's listeners);
 * another process's (a CLI beside `up`) at the next poll, since SQLite has no cross-process
 * notification. Reads never overlap, and a slow reader sees every event once.
 */
export function followLog(store: EventLog, q: Omit<LogQuery, "afterSeq" | "limit">, afterSeq: number, onEvents: (events: readonly KnownEvent[]) => void, o: FollowOptions = {}): () => void {
  checkLogQuery(store, q);
  let after = afterSeq;
  let stopped = false;
  let scheduled = false;
  const pageSize = o.pageSize ?? 500;
  let draining: Promise<void> = Promise.resolve();
  const drain = async (): Promise<void> => {
    scheduled = false;
    while (!stopped) {
      const page = await readLog(store, { ...q, afterSeq: after, limit: pageSize });
      if (stopped) return;
      if (page.events.length > 0) onEvents(page.events);
      // Events the filter skipped still move the cursor: the next read starts after what was seen.
      after = Math.max(after, page.events.at(-1)?.seq ?? after, page.next === null ? page.head : after);
      if (page.next === null) return;
    }
  };
  const soon = (): void => {
    if (scheduled || stopped) return;
    scheduled = true;
    // One drain at a time, after the one before it: reads never overlap and never repeat an event.
    setImmediate(() => { draining = draining.then(() => (stopped ? undefined : drain())).catch((err: unknown) => {
      // As a failed read always did: the process hears of it (unless the follow was stopped meanwhile).
      if (!stopped) setImmediate(() => { throw err; });
    }); });
  };
  const unsubscribe = store.subscribe(soon);
  const timer = setInterval(soon, o.pollMs ?? 1000);
  soon();
  return () => {
    stopped = true;
    clearInterval(timer);
    unsubscribe();
  };
}
