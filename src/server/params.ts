/**
 * Reading a request's query into the use cases' inputs, with the bounds the HTTP face sets: page
 * sizes, sequence numbers, times and the log's filters. The console's forms and the JSON API read
 * the same parameters the same way.
 */
import { AppError, checkLogQuery, parseCount, parseTime } from "../app/index.js";
import type { EventLog, LogQuery } from "../app/index.js";
import type { Query } from "./routes.js";

/** The most events, decisions or entries one page holds. */
export const MAX_PAGE = 500;
/** A page's size when the caller names none. */
export const DEFAULT_PAGE = 100;

/** `limit`: 1 to {@link MAX_PAGE}, default {@link DEFAULT_PAGE}. */
export function limitOf(q: Query, dflt = DEFAULT_PAGE): number {
  const v = q.get("limit");
  if (v === undefined) return dflt;
  const n = parseCount(v, "limit", MAX_PAGE);
  if (n < 1) throw new AppError("usage", `limit must be a whole number from 1 to ${MAX_PAGE}`, "limit");
  return n;
}

/** A sequence number parameter, or undefined. */
export function seqOf(q: Query, name: string): number | undefined {
  const v = q.get(name);
  return v === undefined ? undefined : parseCount(v, name);
}

/** A time parameter, or undefined. */
export function timeOf(q: Query, name: string): Date | undefined {
  const v = q.get(name);
  return v === undefined ? undefined : parseTime(v, name);
}

/** The log's filters (`plugin`, `type`, `since`, `until`), checked against the store's catalog. */
export function logFilters(store: EventLog, q: Query): LogQuery {
  const plugin = q.get("plugin");
  const types = q.all("type");
  const since = timeOf(q, "since");
  const until = timeOf(q, "until");
  const out: LogQuery = {
    ...(plugin === undefined ? {} : { plugin }),
    ...(types.length === 0 ? {} : { types }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
  };
  checkLogQuery(store, out);
  return out;
}

/** A plugin name from the path, refused (`usage`) when no plugin could have it. */
export function pluginParam(store: EventLog, name: string | undefined): string {
  if (name === undefined) throw new AppError("internal", "the route has no {name}");
  checkLogQuery(store, { plugin: name });
  return name;
}

/** A Last-Event-ID or `after`: where a stream resumes. */
export function resumeAfter(lastEventId: string | string[] | undefined, q: Query): number {
  const header = Array.isArray(lastEventId) ? lastEventId[0] : lastEventId;
  if (header !== undefined && header !== "") return parseCount(header, "Last-Event-ID");
  return seqOf(q, "after") ?? 0;
}
