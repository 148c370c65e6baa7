/** Reading a long stretch of the log page by page, so that a million events never sit in memory at once. */
import type { EventStore, EventTypeName, KnownEvent } from "../events/index.js";

/** The events of `types` up to `toSeq`, in seq order, read `pageSize` at a time. */
export function* eventsInPages(store: EventStore, o: { readonly types: readonly EventTypeName[]; readonly toSeq: number; readonly pageSize: number }): Generator<KnownEvent> {
  let cursor = 0;
  for (;;) {
    const page = store.read({ afterSeq: cursor, toSeq: o.toSeq, type: o.types, limit: o.pageSize });
    yield* page;
    const last = page[page.length - 1];
    if (last === undefined || page.length < o.pageSize) return;
    cursor = last.seq;
  }
}
