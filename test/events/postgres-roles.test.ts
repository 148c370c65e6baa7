/**
 * The PostgreSQL log as operators run it: a role that owns the schema and migrates it, and the
 * application's role, which reads and appends and can change nothing that was written, nor the
 * guards that refuse it. Passwords never show in a location or a message.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreError } from "../../src/events/errors.js";
import { migratePostgres, openPostgresLog, rolesSql, schemaSql } from "../../src/events/postgres/index.js";
import type { EventLog } from "../../src/events/port.js";
import { freePort } from "../support/free-port.js";
import { egressDecision, pluginObserved } from "./helpers.js";
import { startLogDatabases } from "./postgres-support.js";
import type { LogDatabases } from "./postgres-support.js";

const OWNER_PASSWORD = "owner-Pa55-word";
const APP_PASSWORD = "app-S3cret:@/?";

interface Roles { readonly db: string; readonly ownerUrl: string; readonly appUrl: string; readonly app: string }

let dbs: LogDatabases;
beforeAll(async () => { dbs = await startLogDatabases(); });
afterAll(async () => { await dbs?.stop(); });

/** A new database set up as an operator would: the roles, then the migrations as the owner. */
async function setUpRoles(migrate = true): Promise<Roles> {
  const db = dbs.server.createDatabase();
  const owner = `${db}_owner`;
  const app = `${db}_app`;
  dbs.server.psql(rolesSql({ database: db, owner, app, ownerPassword: OWNER_PASSWORD, appPassword: APP_PASSWORD }));
  dbs.server.psql(schemaSql(), db);
  const ownerUrl = dbs.server.urlFor(db, owner, OWNER_PASSWORD);
  if (migrate) await migratePostgres({ url: ownerUrl, appRole: app });
  return { db, ownerUrl, appUrl: dbs.server.urlFor(db, app, APP_PASSWORD), app };
}

async function refusal(p: Promise<unknown>): Promise<string> {
  try { await p; } catch (err) { return (err as { code?: string }).code ?? String(err); }
  return "accepted";
}

describe("the application's role", () => {
  let roles: Roles;
  let log: EventLog;
  beforeAll(async () => {
    roles = await setUpRoles();
    log = await openPostgresLog({ url: roles.appUrl });
    await log.append([pluginObserved("echo"), egressDecision("echo")]);
  });
  afterAll(async () => { await log?.close(); });

  it.each([
    ["UPDATE an event", "UPDATE events SET actor = 'mallory' WHERE seq = 1"],
    ["DELETE an event", "DELETE FROM events WHERE seq = 1"],
    ["TRUNCATE the log", "TRUNCATE events"],
    ["DROP a guard", "DROP TRIGGER events_no_update ON events"],
    ["ALTER TABLE to disable a guard", "ALTER TABLE events DISABLE TRIGGER events_no_delete"],
    ["replace the guards' function", "CREATE OR REPLACE FUNCTION events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"],
    ["turn triggers off for its session", "SET session_replication_role = replica"],
    ["DROP the log", "DROP TABLE events"],
    ["create a table in the schema", "CREATE TABLE shadow (x int)"],
    ["rewrite the migrations' bookkeeping", "DELETE FROM kysely_migration"],
  ])("may not %s", async (_what, sql) => {
    expect(await refusal(dbs.run(roles.appUrl, sql))).toBe("42501");
    expect(await log.verify()).toEqual({ ok: true, count: 2 });
    expect(await log.checkGuards()).toEqual({ ok: true, missing: [] });
  });

  it("appends, reads, verifies and moves the verified point", async () => {
    const [e] = await log.append([egressDecision("echo")], { expected: { "egress/echo": 1 } });
    expect(e?.seq).toBe(3);
    expect((await log.read({ stream: "egress/echo" })).map((x) => x.version)).toEqual([1, 2]);
    expect((await log.verifySinceCheckpoint()).ok).toBe(true);
    expect((await log.verifiedPoint())?.seq).toBe(3);
  });

  it("is told forbidden when it tries to restore a guard the owner dropped, which the owner can restore", async () => {
    await dbs.run(roles.ownerUrl, "DROP TRIGGER events_no_truncate ON events");
    expect(await log.checkGuards()).toEqual({ ok: false, missing: ["events_no_truncate"] });
    expect(await refusal(log.restoreGuards())).toBe("forbidden");
    const owner = await openPostgresLog({ url: roles.ownerUrl });
    try {
      expect(await owner.restoreGuards()).toEqual(["events_no_truncate"]);
    } finally {
      await owner.close();
    }
    expect(await log.checkGuards()).toEqual({ ok: true, missing: [] });
    // CASCADE: the signed checkpoints refer to events, and without it that reference refuses first.
    expect(await refusal(dbs.run(roles.ownerUrl, "TRUNCATE events CASCADE"))).toBe("42501");
  });

  it("shows where the log is without the password", () => {
    expect(log.location).toBe(`postgres://${roles.app}@127.0.0.1:${dbs.server.port}/${roles.db}`);
    expect(log.location).not.toContain("S3cret");
  });
});

describe("the tables beside the log, as the application's role", () => {
  let roles: Roles;
  let log: EventLog;
  const spec = { name: "t_rows", version: 1, table: "t_rows", columns: [{ name: "v", type: "TEXT" as const }] };
  beforeAll(async () => {
    roles = await setUpRoles();
    log = await openPostgresLog({ url: roles.appUrl });
  });
  afterAll(async () => { await log?.close(); });

  it("keeps projections, egress counts, the decision check and modules without creating anything", async () => {
    const tables = dbs.server.psql("SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace", roles.db).trim();
    await log.tables.projections.open([spec]);
    await log.tables.projections.commit([{ spec, upserts: [["a", ["x"]]], deletes: [] }], 1);
    expect(await log.tables.projections.rows(spec)).toEqual([["a", ["x"]]]);
    await log.tables.projections.open([{ ...spec, version: 2 }]);
    expect(await log.tables.projections.rows(spec)).toEqual([]);
    const counts = log.tables.egressCounts;
    await counts.open(1);
    expect(await counts.add(0, 1, [{ level: 0, start: 0, plugin: "a", host: "h", port: 1, allowed: 1, refused: 0, failed: 0, lastSeq: 1 }])).toBe(true);
    await counts.open(2);
    expect(await counts.rows(0, 0, 1_000)).toEqual([]);
    await log.tables.decisionCheck.open(1);
    expect(await log.tables.decisionCheck.save(0, 1, { checked: 1, diverged: 0, more: 0, listsKnown: false, divergences: [] }, new Map())).toBe(true);
    await log.tables.decisionCheck.reset();
    const digest = "e".repeat(64);
    const e = await log.tables.modules.install({ digest, size: 1, installedAt: "2026-01-01T00:00:00.000Z", manifest: "{}", bytes: new Uint8Array([7]) },
      { stream: "system", type: "module.installed", actor: "owner:cli", data: { digest, size: 1 } });
    expect(e?.type).toBe("module.installed");
    expect(await log.tables.modules.bytes(digest)).toEqual(new Uint8Array([7]));
    expect(dbs.server.psql("SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace", roles.db).trim()).toBe(tables);
  });

  it("never moves a projection's checkpoint back: a process that folded less writes nothing to that table", async () => {
    const a = { ...spec, name: "t_ahead", table: "t_ahead" };
    const b = { ...spec, name: "t_behind", table: "t_behind" };
    const other = await openPostgresLog({ url: roles.appUrl });
    try {
      await log.tables.projections.open([a, b]);
      await other.tables.projections.commit([{ spec: a, upserts: [["k", ["newer"]]], deletes: [] }], 30);
      await log.tables.projections.commit([{ spec: a, upserts: [["k", ["older"]], ["j", ["older"]]], deletes: [] }, { spec: b, upserts: [["k", ["x"]]], deletes: [] }], 20);
      expect(await log.tables.projections.checkpoints(["t_ahead", "t_behind"])).toEqual(new Map([["t_ahead", 30], ["t_behind", 20]]));
      expect(await log.tables.projections.rows(a)).toEqual([["k", ["newer"]]]);
      expect(await log.tables.projections.rows(b)).toEqual([["k", ["x"]]]);
    } finally {
      await other.close();
    }
  });
});

describe("opening the log", () => {
  it("as the application's role on a schema nobody migrated is refused, naming what is missing, and nothing is made", async () => {
    const roles = await setUpRoles(false);
    let err: unknown;
    try { await openPostgresLog({ url: roles.appUrl }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe("migration");
    expect((err as StoreError).message).not.toContain(APP_PASSWORD);
    expect(dbs.server.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", roles.db).trim()).toBe("0");
  });

  it("with migrate: false on a schema that lacks migrations is refused", async () => {
    const db = dbs.server.createDatabase();
    expect(await refusal(openPostgresLog({ url: dbs.server.urlFor(db), migrate: false }))).toBe("migration");
  });

  it("on a server that is not there fails as unavailable within its deadline, without the password in the message", async () => {
    const port = await freePort();
    let err: unknown;
    try { await openPostgresLog({ url: `postgres://someone:${encodeURIComponent(APP_PASSWORD)}@127.0.0.1:${port}/x`, timeouts: { connect: 2_000 } }); } catch (e) { err = e; }
    expect((err as StoreError).code).toBe("unavailable");
    expect((err as StoreError).message).not.toContain(APP_PASSWORD);
    expect((err as StoreError).message).not.toContain(encodeURIComponent(APP_PASSWORD));
  });

  it.each([
    ["a parameter it does not know", "postgres://u@127.0.0.1:1/x?options=-c%20statement_timeout%3D0"],
    ["another scheme", "mysql://u@127.0.0.1:1/x"],
    ["no URL at all", "not a url"],
  ])("refuses a URL with %s", async (_what, url) => {
    expect(await refusal(openPostgresLog({ url }))).toBe("unavailable");
  });
});
