/**
 * The deliveries tables (migration 0011; docs/adr/0199) in the PostgreSQL log's database: what
 * the operator's leader stores for each batch a connector delivered, where every replica (and the
 * CLI, with `--store postgres://…`) reads it. A batch's row and its delivery's text are written in
 * one transaction; two writers of one batch (a leader cut off mid-write and its successor) meet on
 * the batch's primary key, and the second gets the first's row back.
 */
import type { DeliveryRow, DeliveryTable } from "../tables.js";
import type { Db } from "./db.js";
import { DELIVERY_COLUMNS as COLUMNS, deliveryRowOf as toRow, type DeliveryDbRow as Row } from "../delivery-rows.js";

/** {@link DeliveryTable} in the log's database. */
export class PostgresDeliveries implements DeliveryTable {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  record(row: DeliveryRow, body: string): Promise<{ row: DeliveryRow; fresh: boolean }> {
    return this.#db.transaction("recording a delivery", async (q) => {
      await q("INSERT INTO delivery_objects (digest, body) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING", [row.digest, body]);
      const inserted = await q(`INSERT INTO deliveries (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (batch_id) DO NOTHING`,
        [row.batchId, row.plugin, row.kind, row.digest, row.recordedAt, row.counts]);
      if (inserted.rowCount === 1) return { row, fresh: true };
      const stands = (await q<Row>(`SELECT ${COLUMNS} FROM deliveries WHERE batch_id = $1`, [row.batchId])).rows[0];
      if (stands === undefined) throw new Error(`batch ${row.batchId} is neither new nor recorded`);
      return { row: toRow(stands), fresh: false };
    });
  }

  async get(batchId: string): Promise<{ row: DeliveryRow; body: string } | null> {
    const r = await this.#db.row<Row & { body: string }>("reading a delivery",
      `SELECT d.batch_id, d.plugin, d.kind, d.digest, d.recorded_at, d.counts, o.body FROM deliveries d JOIN delivery_objects o ON o.digest = d.digest WHERE d.batch_id = $1`, [batchId]);
    return r === undefined ? null : { row: toRow(r), body: r.body };
  }

  async list(plugin: string | null, limit: number): Promise<DeliveryRow[]> {
    const rows = plugin === null
      ? await this.#db.rows<Row>("listing deliveries", `SELECT ${COLUMNS} FROM deliveries ORDER BY recorded_at DESC, batch_id DESC LIMIT $1`, [limit])
      : await this.#db.rows<Row>("listing deliveries", `SELECT ${COLUMNS} FROM deliveries WHERE plugin = $1 ORDER BY recorded_at DESC, batch_id DESC LIMIT $2`, [plugin, limit]);
    return rows.map(toRow);
  }
}
