/**
 * PostgreSQL for the event log's tests: one server per test file, and a database per test copied
 * from a template the migrations ran on once (a copy is much cheaper than migrating again).
 */
import pg from "pg";
import { openPostgresLog } from "../../src/events/postgres/index.js";
import { startPostgres } from "../support/postgres.js";
import type { TestPostgres } from "../support/postgres.js";

export interface LogDatabases {
  readonly server: TestPostgres;
  /** A new database with the log's schema; returns its superuser URL. */
  fresh(): Promise<string>;
  /** Runs SQL on a database as its URL's user. */
  run(url: string, sql: string): Promise<pg.QueryResult[]>;
  stop(): Promise<void>;
}

const TEMPLATE = "log_template";

export async function startLogDatabases(settings: Record<string, string> = { fsync: "off" }): Promise<LogDatabases> {
  const server = await startPostgres({ settings });
  server.createDatabase(TEMPLATE);
  const log = await openPostgresLog({ url: server.urlFor(TEMPLATE) });
  await log.close();
  let n = 0;
  return {
    server,
    async fresh() {
      const name = `log_${process.pid}_${++n}`;
      // A client per copy: a test may stop and start the server between two.
      const admin = new pg.Client({ connectionString: server.url });
      admin.on("error", () => undefined);
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${TEMPLATE}"`);
      } finally {
        await admin.end().catch(() => undefined);
      }
      return server.urlFor(name);
    },
    async run(url, sql) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const r = await client.query(sql);
        return Array.isArray(r) ? r : [r];
      } finally {
        await client.end();
      }
    },
    async stop() {
      await server.stop();
    },
  };
}
