/** The event log's contract on PostgreSQL: a real server, a database per test. */
import type { EventLog } from "../../src/events/port.js";
import { openPostgresLog } from "../../src/events/postgres/index.js";
import { describeEventLog } from "../support/event-log-contract.js";
import { startLogDatabases } from "./postgres-support.js";
import type { LogDatabases } from "./postgres-support.js";

let dbs: LogDatabases;
const urls = new Map<EventLog, string>();

describeEventLog("PostgreSQL", {
  async setUp() { dbs = await startLogDatabases(); },
  async tearDown() { await dbs?.stop(); },
  async open(opts) {
    const url = await dbs.fresh();
    const log = await openPostgresLog({ url, ...opts });
    urls.set(log, url);
    return log;
  },
  async reopen(log, opts) {
    const url = urls.get(log) as string;
    const other = await openPostgresLog({ url, ...opts });
    urls.set(other, url);
    return other;
  },
  exec: async (log, sql) => { await dbs.run(urls.get(log) as string, sql); },
  asOwner: async (log, sql) => { await dbs.run(urls.get(log) as string, sql); },
  dropGuardSql: (name) => `DROP TRIGGER ${name} ON events`,
  guards: ["events_no_update", "events_no_delete", "events_no_truncate"],
});
