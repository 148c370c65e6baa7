/** The deliveries tables (migration 0011; docs/adr/0199) in the log's SQLite file. */
import type Database from "better-sqlite3";
import type { SqliteEventLog } from "../store.js";
import type { DeliveryRow, DeliveryTable } from "../tables.js";
import { DELIVERY_COLUMNS as COLUMNS, deliveryRowOf as toRow, type DeliveryDbRow as Row } from "../delivery-rows.js";

/** {@link DeliveryTable} in the log's file. */
export class SqliteDeliveries implements DeliveryTable {
  readonly #record: Database.Transaction<(row: DeliveryRow, body: string) => { row: DeliveryRow; fresh: boolean }>;
  readonly #one: Database.Statement<[string], Row>;
  readonly #body: Database.Statement<[string], { body: string }>;
  readonly #all: Database.Statement<[number], Row>;
  readonly #ofPlugin: Database.Statement<[string, number], Row>;

  constructor(log: SqliteEventLog) {
    const db = log.database;
    const object = db.prepare<[string, string]>("INSERT INTO delivery_objects (digest, body) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING");
    const batch = db.prepare<[string, string, string, string, string, string]>(`INSERT INTO deliveries (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (batch_id) DO NOTHING`);
    this.#one = db.prepare(`SELECT ${COLUMNS} FROM deliveries WHERE batch_id = ?`);
    this.#body = db.prepare("SELECT body FROM delivery_objects WHERE digest = ?");
    this.#all = db.prepare(`SELECT ${COLUMNS} FROM deliveries ORDER BY recorded_at DESC, batch_id DESC LIMIT ?`);
    this.#ofPlugin = db.prepare(`SELECT ${COLUMNS} FROM deliveries WHERE plugin = ? ORDER BY recorded_at DESC, batch_id DESC LIMIT ?`);
    this.#record = db.transaction((row: DeliveryRow, body: string) => {
      const before = this.#one.get(row.batchId);
      if (before !== undefined) return { row: toRow(before), fresh: false };
      object.run(row.digest, body);
      batch.run(row.batchId, row.plugin, row.kind, row.digest, row.recordedAt, row.counts);
      return { row, fresh: true };
    });
  }

  async record(row: DeliveryRow, body: string): Promise<{ row: DeliveryRow; fresh: boolean }> {
    return this.#record.immediate(row, body);
  }

  async get(batchId: string): Promise<{ row: DeliveryRow; body: string } | null> {
    const row = this.#one.get(batchId);
    if (row === undefined) return null;
    const object = this.#body.get(row.digest);
    return object === undefined ? null : { row: toRow(row), body: object.body };
  }

  async list(plugin: string | null, limit: number): Promise<DeliveryRow[]> {
    return (plugin === null ? this.#all.all(limit) : this.#ofPlugin.all(plugin, limit)).map(toRow);
  }
}
