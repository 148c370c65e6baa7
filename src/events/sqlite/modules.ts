/**
 * The `modules` table (migration 0007): module bytes by digest, with the manifest each module
 * reported when it was installed. An install's row and its `module.installed` event (an
 * uninstall's deletion and its `module.uninstalled`) commit in one transaction.
 */
import type Database from "better-sqlite3";
import type { KnownEvent } from "../catalog.js";
import type { SqliteEventLog } from "../store.js";
import type { ModuleTable, StoredModule } from "../tables.js";
import type { NewEvent } from "../types.js";

interface Row {
  digest: string;
  size: number;
  installed_at: string;
  manifest: string;
}

function toStored(r: Row): StoredModule {
  return { digest: r.digest, size: r.size, installedAt: r.installed_at, manifest: r.manifest };
}

/** {@link ModuleTable} in the log's file. */
export class SqliteModules implements ModuleTable {
  readonly #log: SqliteEventLog;
  readonly #db: Database.Database;
  readonly #insert: Database.Statement<[string, Uint8Array, number, string, string]>;
  readonly #bytes: Database.Statement<[string], { bytes: Buffer }>;
  readonly #one: Database.Statement<[string], Row>;
  readonly #all: Database.Statement<[], Row>;
  readonly #delete: Database.Statement<[string]>;

  constructor(log: SqliteEventLog) {
    this.#log = log;
    const db = (this.#db = log.database);
    this.#insert = db.prepare("INSERT INTO modules (digest, bytes, size, installed_at, manifest) VALUES (?, ?, ?, ?, ?)");
    this.#bytes = db.prepare("SELECT bytes FROM modules WHERE digest = ?");
    this.#one = db.prepare("SELECT digest, size, installed_at, manifest FROM modules WHERE digest = ?");
    this.#all = db.prepare("SELECT digest, size, installed_at, manifest FROM modules ORDER BY installed_at, digest");
    this.#delete = db.prepare("DELETE FROM modules WHERE digest = ?");
  }

  async get(digest: string): Promise<StoredModule | undefined> {
    this.#log.assertOpen();
    const row = this.#one.get(digest);
    return row === undefined ? undefined : toStored(row);
  }

  async bytes(digest: string): Promise<Uint8Array | undefined> {
    this.#log.assertOpen();
    const row = this.#bytes.get(digest);
    return row === undefined ? undefined : new Uint8Array(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength);
  }

  async list(): Promise<StoredModule[]> {
    this.#log.assertOpen();
    return this.#all.all().map(toStored);
  }

  async install(m: StoredModule & { readonly bytes: Uint8Array }, event: NewEvent): Promise<KnownEvent | null> {
    return this.#withEvent(event, () => {
      if (this.#one.get(m.digest) !== undefined) return false;
      this.#insert.run(m.digest, m.bytes, m.bytes.length, m.installedAt, m.manifest);
      return true;
    });
  }

  async uninstall(digest: string, event: NewEvent): Promise<KnownEvent | null> {
    return this.#withEvent(event, () => this.#delete.run(digest).changes > 0);
  }

  /** Runs `change` and, when it changed something, appends `event`, in one transaction. */
  #withEvent(event: NewEvent, change: () => boolean): KnownEvent | null {
    this.#log.assertOpen();
    const stored = this.#db.transaction(() => (change() ? this.#log.appendInTransaction([event]) : [])).immediate();
    this.#log.afterCommit(stored);
    return stored[0] ?? null;
  }
}
