/**
 * The `modules` table (migration 0007): module bytes by digest, with the manifest each module
 * reported when it was installed. Reads and writes go through the event store's SQLite handle,
 * so an install's row and its `module.installed` event commit in one transaction.
 */
import type Database from "better-sqlite3";

/** One stored module, without its bytes. */
export interface StoredModule {
  readonly digest: string;
  readonly size: number;
  readonly installedAt: string;
  /** The manifest JSON the module reported at install. */
  readonly manifest: string;
}

interface Row {
  digest: string;
  size: number;
  installed_at: string;
  manifest: string;
}

/** Module bytes by digest. */
export class ModuleStore {
  readonly #db: Database.Database;
  readonly #insert: Database.Statement<[string, Uint8Array, number, string, string]>;
  readonly #bytes: Database.Statement<[string], { bytes: Buffer }>;
  readonly #one: Database.Statement<[string], Row>;
  readonly #all: Database.Statement<[], Row>;
  readonly #delete: Database.Statement<[string]>;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#insert = db.prepare("INSERT INTO modules (digest, bytes, size, installed_at, manifest) VALUES (?, ?, ?, ?, ?)");
    this.#bytes = db.prepare("SELECT bytes FROM modules WHERE digest = ?");
    this.#one = db.prepare("SELECT digest, size, installed_at, manifest FROM modules WHERE digest = ?");
    this.#all = db.prepare("SELECT digest, size, installed_at, manifest FROM modules ORDER BY installed_at, digest");
    this.#delete = db.prepare("DELETE FROM modules WHERE digest = ?");
  }

  /** Runs `fn` in one transaction (the row and its event commit together). */
  transaction<T>(fn: () => T): T {
    return this.#db.transaction(fn).immediate();
  }

  insert(digest: string, bytes: Uint8Array, installedAt: string, manifest: string): void {
    this.#insert.run(digest, bytes, bytes.length, installedAt, manifest);
  }

  bytes(digest: string): Uint8Array | undefined {
    const row = this.#bytes.get(digest);
    return row === undefined ? undefined : new Uint8Array(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength);
  }

  get(digest: string): StoredModule | undefined {
    const row = this.#one.get(digest);
    return row === undefined ? undefined : toStored(row);
  }

  list(): StoredModule[] {
    return this.#all.all().map(toStored);
  }

  delete(digest: string): boolean {
    return this.#delete.run(digest).changes > 0;
  }
}

function toStored(r: Row): StoredModule {
  return { digest: r.digest, size: r.size, installedAt: r.installed_at, manifest: r.manifest };
}
