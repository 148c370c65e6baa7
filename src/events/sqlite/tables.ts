/** The tables beside a SQLite log, on its connection. */
import type { SqliteEventLog } from "../store.js";
import type { LogTables } from "../tables.js";
import { SqliteDecisionCheck } from "./decision-check.js";
import { SqliteDeliveries } from "./deliveries.js";
import { SqliteEgressCounts } from "./egress-counts.js";
import { SqliteModules } from "./modules.js";
import { SqliteProjectionTables } from "./projection-tables.js";
import { SqliteTree } from "./tree.js";

/**
 * `make()`'s table, made on first use. Every method of a table is asynchronous, so each is called
 * through here: once the log is closed it refuses with `closed` (a rejected promise, as a method
 * of the PostgreSQL log's tables does) rather than reach a closed SQLite handle.
 */
function whileOpen<T extends object>(log: SqliteEventLog, make: () => T): T {
  let made: T | undefined;
  const table = (): T => {
    log.assertOpen();
    return (made ??= make());
  };
  return new Proxy({}, {
    // Not a promise itself: `then` is no method of a table.
    get: (_target, key) => (key === "then" ? undefined : async (...args: unknown[]): Promise<unknown> => {
      const t = table();
      return Reflect.apply(Reflect.get(t, key) as (...a: unknown[]) => unknown, t, args);
    }),
  }) as T;
}

/** The {@link LogTables} of one SQLite log, each made on first use. */
export function sqliteTables(log: SqliteEventLog): LogTables {
  return {
    projections: whileOpen(log, () => new SqliteProjectionTables(log)),
    egressCounts: whileOpen(log, () => new SqliteEgressCounts(log)),
    decisionCheck: whileOpen(log, () => new SqliteDecisionCheck(log)),
    modules: whileOpen(log, () => new SqliteModules(log)),
    tree: whileOpen(log, () => new SqliteTree(log)),
    deliveries: whileOpen(log, () => new SqliteDeliveries(log)),
  };
}
