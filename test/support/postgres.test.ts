import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPostgres, type TestPostgres } from "./postgres.js";

describe("the test PostgreSQL", () => {
  let server: TestPostgres;
  beforeAll(async () => {
    server = await startPostgres({ settings: { fsync: "off" } });
  });
  afterAll(async () => server?.stop());

  it("answers a query over TCP on 127.0.0.1 with the pg client", async () => {
    const db = server.createDatabase();
    const client = new pg.Client({ connectionString: server.urlFor(db) });
    await client.connect();
    try {
      const result = await client.query<{ sum: number; db: string }>("SELECT 20 + 22 AS sum, current_database() AS db");
      expect(result.rows).toEqual([{ sum: 42, db }]);
    } finally {
      await client.end();
    }
  });
});
