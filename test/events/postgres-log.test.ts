/** The event log's contract on PostgreSQL: a real server, a database per test. */
import pg from "pg";
import type { EventLog } from "../../src/events/port.js";
import { openPostgresLog } from "../../src/events/postgres/index.js";
import { describeEventLog } from "../support/event-log-contract.js";
import { startPostgres } from "../support/postgres.js";
import type { TestPostgres } from "../support/postgres.js";

let server: TestPostgres;
const urls = new Map<EventLog, string>();

async function run(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

describeEventLog("PostgreSQL", {
  async setUp() { server = await startPostgres({ settings: { fsync: "off" } }); },
  async tearDown() { await server?.stop(); },
  async open(opts) {
    const url = server.urlFor(server.createDatabase());
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
  exec: (log, sql) => run(urls.get(log) as string, sql),
  asOwner: (log, sql) => run(urls.get(log) as string, sql),
  dropGuardSql: (name) => `DROP TRIGGER ${name} ON events`,
  guards: ["events_no_update", "events_no_delete", "events_no_truncate"],
});
