/** A plugin's events in seq order: its own stream and, when asked, its egress decisions. */
import { egressStream, pluginStream } from "../events/index.js";
import type { EventLog, KnownEvent } from "../events/index.js";

/** Options of {@link timeline}. */
export interface TimelineOptions {
  readonly includeEgress?: boolean;
  readonly afterSeq?: number;
  readonly limit?: number;
}

/** A plugin's events in seq order: its own stream and, with `includeEgress`, its egress decisions. */
export async function timeline(store: EventLog, name: string, opts: TimelineOptions = {}): Promise<KnownEvent[]> {
  const page = { ...(opts.afterSeq === undefined ? {} : { afterSeq: opts.afterSeq }), ...(opts.limit === undefined ? {} : { limit: opts.limit }) };
  const own = await store.read({ stream: pluginStream(name), ...page });
  if (opts.includeEgress !== true) return own;
  const egress = await store.read({ stream: egressStream(name), ...page });
  const all = [...own, ...egress].sort((a, b) => a.seq - b.seq);
  return opts.limit === undefined ? all : all.slice(0, opts.limit);
}
