/** The event log's contract on SQLite, through the port (test/support/sqlite-event-log.ts). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventLog } from "../../src/events/port.js";
import { describeEventLog } from "../support/event-log-contract.js";
import { openSqliteEventLog } from "../support/sqlite-event-log.js";

let dir = "";
let n = 0;
const handles = new Map<string, EventLog & { store: { database: { exec(sql: string): unknown } } }>();

describeEventLog("SQLite", {
  async setUp() { dir = mkdtempSync(join(tmpdir(), "openfief-log-")); },
  async tearDown() { rmSync(dir, { recursive: true, force: true }); },
  async open(opts) {
    const log = await openSqliteEventLog({ file: join(dir, `log${++n}.db`), ...opts });
    handles.set(log.location, log);
    return log;
  },
  async reopen(log, opts) {
    return openSqliteEventLog({ file: log.location, ...opts });
  },
  async exec(log, sql) {
    handles.get(log.location)?.store.database.exec(sql);
  },
  async asOwner(log, sql) {
    handles.get(log.location)?.store.database.exec(sql);
  },
  dropGuardSql: (name) => `DROP TRIGGER ${name}`,
  guards: ["events_no_update", "events_no_delete"],
});
