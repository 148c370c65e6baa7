/**
 * Deliveries kept in the log's own database (docs/adr/0199), behind the same port as the data
 * folder's ({@link DeliveryStore}): in a cluster the operator's leader stores each batch in the
 * PostgreSQL log every replica, the console and the CLI (`--store postgres://…`) read. A delivery's
 * text is checked against its digest on every read, as the data folder's is.
 */
import type { DeliveryCounts, DeliveryRow, EventLog } from "../events/index.js";
import type { JsonValue } from "../plugins/index.js";
import { BATCH_ID, dataDirDeliveries, digestOf } from "./deliveries.js";
import type { DeliveryKind, DeliveryRecord, DeliveryStore } from "./deliveries.js";

function recordOf(row: DeliveryRow): DeliveryRecord {
  return { batchId: row.batchId, plugin: row.plugin, kind: row.kind as DeliveryKind, digest: row.digest, recordedAt: row.recordedAt, counts: JSON.parse(row.counts) as DeliveryCounts };
}

/** The deliveries store in the log's database. */
export function logDeliveries(store: EventLog): DeliveryStore {
  const table = store.tables.deliveries;
  return {
    async record(batch, checked, at) {
      if (!BATCH_ID.test(batch.batchId)) throw new Error(`invalid batch ID ${JSON.stringify(batch.batchId.slice(0, 130))}`);
      const body = JSON.stringify(checked.delivery);
      const row: DeliveryRow = {
        batchId: batch.batchId, plugin: batch.plugin, kind: batch.kind, digest: digestOf(body), recordedAt: at.toISOString(), counts: JSON.stringify(checked.counts),
      };
      const r = await table.record(row, body);
      return { record: recordOf(r.row), fresh: r.fresh };
    },
    async get(batchId) {
      if (!BATCH_ID.test(batchId)) return null;
      const got = await table.get(batchId);
      if (got === null) return null;
      if (digestOf(got.body) !== got.row.digest) throw new Error(`the delivery of batch ${batchId} does not match its digest`);
      const delivery = JSON.parse(got.body) as JsonValue;
      const watermark = typeof delivery === "object" && delivery !== null && !Array.isArray(delivery) && typeof delivery["watermark"] === "string" ? delivery["watermark"] : "";
      return { ...recordOf(got.row), delivery, watermark };
    },
    async list(plugin, limit = 100) {
      return (await table.list(plugin ?? null, limit)).map(recordOf);
    },
  };
}

/**
 * Where a log's deliveries are kept: beside a PostgreSQL log, in its database (every replica and
 * the CLI reach it); beside a SQLite log, in the data folder (docs/adr/0179).
 */
export function deliveriesOf(store: EventLog, dataDir: string): DeliveryStore {
  return store.kind === "postgres" ? logDeliveries(store) : dataDirDeliveries(dataDir);
}
