/** The event log's contract on SQLite: the store itself (src/events/store.ts), through its port. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/events/store.js";
import { describeEventLog } from "../support/event-log-contract.js";
import { withFile } from "../support/sqlite-file.js";

let dir = "";
let n = 0;

describeEventLog("SQLite", {
  async setUp() { dir = mkdtempSync(join(tmpdir(), "openfief-log-")); },
  async tearDown() { rmSync(dir, { recursive: true, force: true }); },
  async open(opts) {
    return openStore({ file: join(dir, `log${++n}.db`), ...opts });
  },
  async reopen(log, opts) {
    return openStore({ file: log.location, ...opts });
  },
  // SQL run by hand on the file, as its owner could: a second connection, never the log's own.
  async exec(log, sql) {
    withFile(log.location, (db) => db.exec(sql));
  },
  async asOwner(log, sql) {
    withFile(log.location, (db) => db.exec(sql));
  },
  dropGuardSql: (name) => `DROP TRIGGER ${name}`,
  guards: ["events_no_update", "events_no_delete"],
});
