/**
 * `openfief replay --at`: the projected state as it was at a sequence number or a time, folded
 * from the log — each plugin's running and asked-for image, its outcome and what was pending —
 * for the CLI's table, the API and the console's replay page.
 */
import type { EventLog } from "../events/index.js";
import { EMPTY_PENDING } from "../plugins/index.js";
import type { Pending } from "../plugins/index.js";
import { stateAt, withSchemaChecks } from "../projections/index.js";
import type { PluginState } from "../projections/index.js";
import { AppError } from "./errors.js";
import { eventSentence } from "./log.js";

/** A point of the log to replay to. */
export type ReplayPoint = { readonly seq: number } | { readonly time: Date };

/** A point as an owner writes it: a sequence number, or an ISO-8601 time. */
export function parseReplayPoint(text: string, what = "at"): ReplayPoint {
  if (/^\d+$/.test(text)) {
    if (text.length > 15) throw new AppError("usage", `${what} is past the end of any log`, what);
    return { seq: Number(text) };
  }
  const d = new Date(text);
  if (text.length > 64 || !/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(d.getTime())) {
    const shown = JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
    throw new AppError("usage", `${what} must be an event's sequence number (such as 42) or an ISO-8601 time (such as 2026-11-30T12:00:00Z), not ${shown}`, what);
  }
  return { time: d };
}

/** Refuses (`usage`) a sequence number past the log's end, saying where it ends. */
export async function requireWithinLog(store: EventLog, at: ReplayPoint, what = "at"): Promise<void> {
  const head = await store.head();
  if ("seq" in at && at.seq > head) {
    throw new AppError("usage", `${what} ${at.seq} is past the end of the log: it ends at event ${head}${head === 0 ? " (it is empty)" : ` (${what} ${head} is the state now)`}`, what);
  }
}

/** One plugin as it stood at the point. */
export interface ReplayedPlugin {
  readonly name: string;
  readonly running: string | null;
  readonly asked: string | null;
  readonly deleted: boolean;
  /** The latest decision's outcome (`current`, `previous`, `none`), or null when none was decided yet. */
  readonly outcome: string | null;
  /** What waited for approval, or null when nothing did. */
  readonly pending: Pending | null;
}

/** The state at a point. */
export interface Replayed {
  /** The last event folded (0 before the first). */
  readonly seq: number;
  /** That event's time, or null before the first. */
  readonly time: string | null;
  /** That event, worded (null before the first). */
  readonly event: { readonly type: string; readonly actor: string; readonly stream: string; readonly text: string } | null;
  /** The log's last sequence number now. */
  readonly head: number;
  /** In name order. */
  readonly plugins: readonly ReplayedPlugin[];
  /** How many image verdicts were recorded by then. */
  readonly verdicts: number;
  /** Every projection's rows by key (the CLI's `--json`). */
  readonly tables: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

function asPending(p: unknown): Pending | null {
  if (p === null || typeof p !== "object") return null;
  return { ...EMPTY_PENDING, ...(p as Partial<Pending>) };
}

/** The projected state as of `at` (a seq past the log's end is the log's end). */
export async function replay(store: EventLog, at: ReplayPoint): Promise<Replayed> {
  // Folding parses no plugin today; should one, the checks load rather than the read failing (ADR 0189).
  const state = await withSchemaChecks(() => stateAt(store, at));
  const tables: Record<string, Record<string, unknown>> = {};
  for (const [name, rows] of state.tables) tables[name] = Object.fromEntries(rows);
  const rows = [...((state.tables.get("plugins") ?? new Map()) as ReadonlyMap<string, PluginState>).values()];
  const plugins = rows
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((p) => ({ name: p.name, running: p.runningImage, asked: p.deleted ? null : p.askedImage, deleted: p.deleted, outcome: p.outcome, pending: asPending(p.pending) }));
  const last = state.seq === 0 ? null : await store.get(state.seq);
  return {
    seq: state.seq,
    time: last?.time ?? null,
    event: last === null ? null : { type: last.type, actor: last.actor, stream: last.stream, text: await eventSentence(store, last) },
    head: await store.head(),
    plugins,
    verdicts: state.tables.get("signature_verdicts")?.size ?? 0,
    tables,
  };
}
