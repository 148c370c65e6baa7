/** The tables beside a PostgreSQL log, in its database, on its pool (docs/adr/0140). */
import type { LogTables } from "../tables.js";
import type { Db } from "./db.js";
import { PostgresDecisionCheck } from "./decision-check.js";
import { PostgresDeliveries } from "./deliveries.js";
import { PostgresEgressCounts } from "./egress-counts.js";
import { PostgresModules } from "./modules.js";
import type { AppendAlong } from "./modules.js";
import { PostgresProjectionTables } from "./projection-tables.js";
import { PostgresTree } from "./tree.js";

/** The {@link LogTables} of one PostgreSQL log, each made on first use. */
export function postgresTables(db: Db, appendAlong: AppendAlong): LogTables {
  let projections: PostgresProjectionTables | undefined;
  let egressCounts: PostgresEgressCounts | undefined;
  let decisionCheck: PostgresDecisionCheck | undefined;
  let modules: PostgresModules | undefined;
  let tree: PostgresTree | undefined;
  let deliveries: PostgresDeliveries | undefined;
  return {
    get projections() { return (projections ??= new PostgresProjectionTables(db)); },
    get egressCounts() { return (egressCounts ??= new PostgresEgressCounts(db)); },
    get decisionCheck() { return (decisionCheck ??= new PostgresDecisionCheck(db)); },
    get modules() { return (modules ??= new PostgresModules(db, appendAlong)); },
    get tree() { return (tree ??= new PostgresTree(db, appendAlong)); },
    get deliveries() { return (deliveries ??= new PostgresDeliveries(db)); },
  };
}
