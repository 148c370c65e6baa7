/**
 * The deliveries table's columns as both stores read them (migration 0011; docs/adr/0199): one
 * shape, so the SQLite and PostgreSQL adapters cannot drift apart on a column.
 */
import type { DeliveryRow } from "./tables.js";

/** A row of `deliveries`, as the drivers return it. */
export interface DeliveryDbRow {
  batch_id: string;
  plugin: string;
  kind: string;
  digest: string;
  recorded_at: string;
  counts: string;
}

/** The columns of {@link DeliveryDbRow}, in the order the inserts bind them. */
export const DELIVERY_COLUMNS = "batch_id, plugin, kind, digest, recorded_at, counts";

/** The port's row of a table row. */
export function deliveryRowOf(r: DeliveryDbRow): DeliveryRow {
  return { batchId: r.batch_id, plugin: r.plugin, kind: r.kind, digest: r.digest, recordedAt: r.recorded_at, counts: r.counts };
}
