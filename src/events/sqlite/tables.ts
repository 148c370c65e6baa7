/** The tables beside a SQLite log, on its connection. */
import type { SqliteEventLog } from "../store.js";
import type { LogTables } from "../tables.js";
import { SqliteDecisionCheck } from "./decision-check.js";
import { SqliteEgressCounts } from "./egress-counts.js";
import { SqliteModules } from "./modules.js";
import { SqliteProjectionTables } from "./projection-tables.js";

/** The {@link LogTables} of one SQLite log, each made on first use. */
export function sqliteTables(log: SqliteEventLog): LogTables {
  let projections: SqliteProjectionTables | undefined;
  let egressCounts: SqliteEgressCounts | undefined;
  let decisionCheck: SqliteDecisionCheck | undefined;
  let modules: SqliteModules | undefined;
  return {
    get projections() { return (projections ??= new SqliteProjectionTables(log)); },
    get egressCounts() { return (egressCounts ??= new SqliteEgressCounts(log)); },
    get decisionCheck() { return (decisionCheck ??= new SqliteDecisionCheck(log)); },
    get modules() { return (modules ??= new SqliteModules(log)); },
  };
}
