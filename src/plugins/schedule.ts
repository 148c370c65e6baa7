/**
 * A connector instance's sync schedule (docs/adr/0178): `Plugin.spec.sync`, an interval
 * (`{every: "6h"}`) or a five-field cron expression in UTC (`{cron: "30 16 * * 1-5"}`), with a
 * jitter (`{jitter: "10m"}`) that spreads instances over a window. Pure: the jitter of a slot is a
 * hash of the instance's name and the slot, so the same inputs always give the same time.
 */
import { ErrorCode, fail, fieldError, join, ok } from "./errors.js";
import type { FieldError, Result } from "./errors.js";
import { isPlainObject } from "./json.js";
import { shown } from "./caps.js";

/** A sync schedule as written in `spec.sync` (normalized: `jitter` always present). */
export interface SyncScheduleText {
  readonly every?: string;
  readonly cron?: string;
  readonly jitter: string;
}

/** A parsed sync schedule: exactly one of `everyMs` and `cron`. */
export interface SyncSchedule {
  /** The interval between syncs, in milliseconds; absent for a cron schedule. */
  readonly everyMs?: number;
  /** The cron expression as written; absent for an interval. */
  readonly cron?: string;
  /** The widest delay added to each slot, in milliseconds (0: none). */
  readonly jitterMs: number;
  /** The schedule as written, normalized (`{every, jitter}` or `{cron, jitter}`). */
  readonly text: SyncScheduleText;
}

/** What a connector without `spec.sync` gets: once a day, spread over half an hour. */
export const DEFAULT_SYNC_SCHEDULE: SyncSchedule = { everyMs: 24 * 3_600_000, jitterMs: 30 * 60_000, text: { every: "24h", jitter: "30m" } };

/** The shortest interval (and the finest cron step): one minute. */
export const MIN_SYNC_INTERVAL_MS = 60_000;
/** The longest interval: 31 days. */
export const MAX_SYNC_INTERVAL_MS = 31 * 86_400_000;
/** The widest jitter: 6 hours (and never more than the interval). */
export const MAX_SYNC_JITTER_MS = 6 * 3_600_000;

/** How a failed sync that may be retried waits: the first retry after `baseMs`, doubling, never more than `capMs`. */
export interface Backoff {
  readonly baseMs: number;
  readonly capMs: number;
  /** Attempts in all (the first call included) before the batch is given up. */
  readonly maxAttempts: number;
}

export const DEFAULT_SYNC_BACKOFF: Backoff = { baseMs: 30_000, capMs: 15 * 60_000, maxAttempts: 8 };

const FIELDS = ["every", "cron", "jitter"];
const DURATION = /^([1-9][0-9]{0,5})(s|m|h|d)$/;
const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a duration such as `90s`, `15m`, `6h`, `1d`, or null. */
export function parseDuration(text: string): number | null {
  const m = DURATION.exec(text);
  if (m === null) return null;
  return Number(m[1]) * (UNIT_MS[m[2] as string] as number);
}

function bad(path: string, message: string): FieldError {
  return fieldError(ErrorCode.InvalidSyncSchedule, path, message);
}

function readEvery(every: unknown, path: string, errors: FieldError[]): number | undefined {
  if (every === undefined) return undefined;
  const ms = typeof every === "string" ? parseDuration(every) : null;
  if (ms === null) errors.push(bad(path, "every is a duration such as 30m, 6h or 1d"));
  else if (ms < MIN_SYNC_INTERVAL_MS || ms > MAX_SYNC_INTERVAL_MS) errors.push(bad(path, "every is between 1m and 31d"));
  else return ms;
  return undefined;
}

function readCron(cron: unknown, path: string, errors: FieldError[]): string | undefined {
  if (cron === undefined) return undefined;
  if (typeof cron === "string" && cron.length <= 200 && parseCron(cron) !== null) return cron.trim().split(/\s+/).join(" ");
  errors.push(bad(path, "cron is five fields (minute hour day-of-month month day-of-week, UTC) of numbers, ranges, lists, steps or *"));
  return undefined;
}

function readJitter(jitter: unknown, everyMs: number | undefined, path: string, errors: FieldError[]): number | undefined {
  const ms = typeof jitter === "string" ? (/^0{1,6}[smhd]$/.test(jitter) ? 0 : parseDuration(jitter)) : null;
  if (ms === null) errors.push(bad(path, "jitter is a duration such as 0s, 90s or 10m"));
  else if (ms > MAX_SYNC_JITTER_MS) errors.push(bad(path, "jitter is at most 6h"));
  else if (everyMs !== undefined && ms >= everyMs) errors.push(bad(path, "jitter is shorter than every"));
  else return ms;
  return undefined;
}

/** Parses `spec.sync`; every problem at once. */
export function parseSyncSchedule(value: unknown, path: string): Result<SyncSchedule> {
  if (!isPlainObject(value)) return fail(fieldError(ErrorCode.InvalidType, path, "a sync schedule must be an object"));
  const errors: FieldError[] = [];
  for (const key of Object.keys(value)) {
    if (!FIELDS.includes(key)) errors.push(fieldError(ErrorCode.UnknownField, join(path, shown(key)), `unknown field "${shown(key)}"`));
  }
  const jitter = value["jitter"] ?? "0s";
  if ((value["every"] === undefined) === (value["cron"] === undefined)) errors.push(bad(path, "a sync schedule has exactly one of every and cron"));
  const everyMs = readEvery(value["every"], join(path, "every"), errors);
  const cron = readCron(value["cron"], join(path, "cron"), errors);
  const jitterMs = readJitter(jitter, everyMs, join(path, "jitter"), errors);
  if (errors.length > 0 || jitterMs === undefined) return fail(errors);
  const text = { jitter: jitter as string };
  return ok(everyMs !== undefined
    ? { everyMs, jitterMs, text: { every: value["every"] as string, ...text } }
    : { cron: cron as string, jitterMs, text: { cron: cron as string, ...text } });
}

/** One cron field as the set of values it matches. */
type Field = ReadonlySet<number>;
interface Cron {
  readonly minute: Field;
  readonly hour: Field;
  readonly dom: Field;
  readonly month: Field;
  readonly dow: Field;
  /** Whether day-of-month and day-of-week were both restricted (then either matches, as in cron). */
  readonly either: boolean;
}

const RANGES: readonly (readonly [number, number])[] = [[0, 59], [0, 23], [1, 31], [1, 12], [0, 7]];
const PART = /^(\*|([0-9]{1,2})(?:-([0-9]{1,2}))?)(?:\/([0-9]{1,2}))?$/;

function parseField(text: string, lo: number, hi: number): Set<number> | null {
  const out = new Set<number>();
  for (const part of text.split(",")) {
    const m = PART.exec(part);
    if (m === null) return null;
    const step = m[4] === undefined ? 1 : Number(m[4]);
    let from = lo;
    let to = hi;
    if (m[1] !== "*") {
      from = Number(m[2]);
      to = m[3] === undefined ? (m[4] === undefined ? from : hi) : Number(m[3]);
    }
    if (step < 1 || from < lo || to > hi || from > to) return null;
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

function parseCron(text: string): Cron | null {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 5) return null;
  const fields: Set<number>[] = [];
  for (let i = 0; i < 5; i++) {
    const [lo, hi] = RANGES[i] as readonly [number, number];
    const f = parseField(parts[i] as string, lo, hi);
    if (f === null) return null;
    fields.push(f);
  }
  const dow = fields[4] as Set<number>;
  if (dow.has(7)) dow.add(0);
  return {
    minute: fields[0] as Set<number>, hour: fields[1] as Set<number>, dom: fields[2] as Set<number>, month: fields[3] as Set<number>, dow,
    either: parts[2] !== "*" && parts[4] !== "*",
  };
}

function dayMatches(c: Cron, d: Date): boolean {
  if (!c.month.has(d.getUTCMonth() + 1)) return false;
  const dom = c.dom.has(d.getUTCDate());
  const dow = c.dow.has(d.getUTCDay());
  return c.either ? dom || dow : dom && dow;
}

/** The first cron time strictly after `after`, within 5 years, or null (such as 31 February). */
function nextCron(c: Cron, after: Date): Date | null {
  const start = new Date(Math.floor(after.getTime() / 60_000) * 60_000 + 60_000);
  const day = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate());
  for (let i = 0; i < 5 * 366; i++) {
    const d = new Date(day + i * 86_400_000);
    if (!dayMatches(c, d)) continue;
    for (let h = 0; h < 24; h++) {
      if (!c.hour.has(h)) continue;
      for (let m = 0; m < 60; m++) {
        if (!c.minute.has(m)) continue;
        const t = d.getTime() + h * 3_600_000 + m * 60_000;
        if (t >= start.getTime()) return new Date(t);
      }
    }
  }
  return null;
}

/** FNV-1a, 32 bits: a stable spread, not a secret. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The jitter of one slot of one instance: the same every time it is asked, in [0, jitterMs]. */
export function slotJitterMs(instance: string, slot: Date, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  return fnv1a(`${instance}@${slot.toISOString()}`) % (jitterMs + 1);
}

/** The slot after `slot`: `slot + every`, or the next cron time; null when a cron never matches again. */
export function nextSlot(s: SyncSchedule, slot: Date): Date | null {
  if (s.everyMs !== undefined) return new Date(slot.getTime() + s.everyMs);
  const c = parseCron(s.cron ?? "");
  return c === null ? null : nextCron(c, slot);
}

/** When the sync of a slot is due: the slot plus its jitter. */
export function dueAt(s: SyncSchedule, instance: string, slot: Date): Date {
  return new Date(slot.getTime() + slotJitterMs(instance, slot, s.jitterMs));
}

/** How long to wait before attempt `attempt + 1` after attempt `attempt` (from 1) failed and may be retried. */
export function backoffMs(b: Backoff, attempt: number): number {
  const exp = Math.min(attempt - 1, 30);
  return Math.min(b.baseMs * 2 ** exp, b.capMs);
}
