/**
 * The `modules` table in the PostgreSQL log's database (migration 0007): module bytes by digest,
 * with the manifest each module reported when it was installed. An install's row and its
 * `module.installed` event (an uninstall's deletion and its `module.uninstalled`) commit in one
 * transaction: the row is written inside the append's own, under the write lock, so the event is
 * chained, notified and settled as every append is.
 */
import type { KnownEvent } from "../catalog.js";
import type { ModuleTable, StoredModule } from "../tables.js";
import type { NewEvent } from "../types.js";
import type { Db, Locked } from "./db.js";

/**
 * Appends `event` in a transaction in which `change` ran first (with the write lock held); when
 * `change` changed nothing, appends nothing and returns no event.
 */
export type AppendAlong = (doing: string, event: NewEvent, change: (tx: Locked) => Promise<boolean>) => Promise<readonly KnownEvent[]>;

interface Row {
  digest: string;
  size: number;
  installed_at: string;
  manifest: string;
}

const COLUMNS = "digest, size, installed_at, manifest";

function toStored(r: Row): StoredModule {
  return { digest: r.digest, size: r.size, installedAt: r.installed_at, manifest: r.manifest };
}

/** {@link ModuleTable} in the log's database. */
export class PostgresModules implements ModuleTable {
  readonly #db: Db;
  readonly #appendAlong: AppendAlong;

  constructor(db: Db, appendAlong: AppendAlong) {
    this.#db = db;
    this.#appendAlong = appendAlong;
  }

  async get(digest: string): Promise<StoredModule | undefined> {
    const row = await this.#db.row<Row>("reading a module", `SELECT ${COLUMNS} FROM modules WHERE digest = $1`, [digest]);
    return row === undefined ? undefined : toStored(row);
  }

  async bytes(digest: string): Promise<Uint8Array | undefined> {
    const row = await this.#db.row<{ bytes: Buffer }>("reading a module's bytes", "SELECT bytes FROM modules WHERE digest = $1", [digest]);
    return row === undefined ? undefined : new Uint8Array(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength);
  }

  async list(): Promise<StoredModule[]> {
    return (await this.#db.rows<Row>("listing modules", `SELECT ${COLUMNS} FROM modules ORDER BY installed_at COLLATE "C", digest`)).map(toStored);
  }

  async install(m: StoredModule & { readonly bytes: Uint8Array }, event: NewEvent): Promise<KnownEvent | null> {
    const bytes = Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength);
    const [stored] = await this.#appendAlong("installing a module", event, async (tx) => (await tx.query(
      "INSERT INTO modules (digest, bytes, size, installed_at, manifest) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (digest) DO NOTHING",
      [m.digest, bytes, bytes.length, m.installedAt, m.manifest])).rowCount === 1);
    return stored ?? null;
  }

  async uninstall(digest: string, event: NewEvent): Promise<KnownEvent | null> {
    const [stored] = await this.#appendAlong("uninstalling a module", event, async (tx) =>
      (await tx.query("DELETE FROM modules WHERE digest = $1", [digest])).rowCount === 1);
    return stored ?? null;
  }
}
