/**
 * The CLI on a log in PostgreSQL, as a user runs it (the bundle, as a process): `store init`, then
 * apply, reconcile, why, get, log, replay, verify-log and check-decisions with `--store` (and
 * `OPENFIEF_STORE`); and `migrate-store` from a data folder's SQLite log to PostgreSQL and back,
 * each copy the same rows, byte for byte.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPostgres } from "../support/postgres.js";
import type { TestPostgres } from "../support/postgres.js";
import { ROOT, spawnOpenfief } from "./support.js";
import type { Run } from "./support.js";

let pg: TestPostgres;
let dir: string;
let store: string;
let data: string[];
const signers = join(ROOT, "examples", "trusted-signers.json");
const layout = join(ROOT, "examples", "oci");

async function ok(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<string> {
  const r: Run = await spawnOpenfief(args, env);
  if (r.code !== 0) throw new Error(`openfief ${args.join(" ")} exited ${String(r.code)}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

beforeAll(async () => {
  pg = await startPostgres();
  dir = await mkdtemp(join(tmpdir(), "openfief-pg-cli-"));
  store = pg.urlFor(pg.createDatabase("cli"));
  data = ["--data", join(dir, "data"), "--store", store];
  await ok(["store", "init", "--store", store]);
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data]);
  await ok(["reconcile", ...data, "--oci-layout", layout, "--trusted-signers", signers, "--out", join(dir, "cluster")]);
  await ok(["apply", "-f", join(ROOT, "examples", "upgrade"), ...data]);
  await ok(["reconcile", ...data, "--oci-layout", layout, "--trusted-signers", signers, "--out", join(dir, "cluster")]);
}, 240_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await pg?.stop();
}, 60_000);

describe("the CLI on a PostgreSQL log", () => {
  it("says why the upgrade waits, from the log in PostgreSQL", async () => {
    const out = await ok(["why", "nbp-fx", ...data]);
    expect(out).toMatch(/Pending approval: egress static\.nbp\.pl:443/);
    expect(out).toContain("Re-deciding from the log gives the same answer.");
  });

  it("lists the plugins from projections kept in PostgreSQL, and reads them through OPENFIEF_STORE too", async () => {
    const rows = JSON.parse(await ok(["get", "plugins", "--json", "--data", join(dir, "data")], { OPENFIEF_STORE: store })) as { name: string; pending: string[] }[];
    expect(rows.map((r) => r.name).sort()).toEqual(["ecb-fx", "ledger-view", "nbp-fx"]);
    expect(rows.find((r) => r.name === "nbp-fx")?.pending).toEqual(["egress:static.nbp.pl:443"]);
  });

  it("verifies the chain, re-decides every decision, replays and reads the log", async () => {
    expect(await ok(["verify-log", ...data])).toMatch(/^the log holds: \d+ events, every hash verified$/m);
    expect(await ok(["check-decisions", ...data])).toMatch(/^\d+ decisions re-checked: every one reproduces$/m);
    // One JSON line per event.
    const events = (await ok(["log", "--json", ...data])).trim().split("\n").map((l) => JSON.parse(l) as { seq: number });
    expect(events.length).toBeGreaterThan(10);
    expect(await ok(["replay", "--at", "5", ...data])).toMatch(/event 5/i);
  });

  it("approves, and the next pass runs the upgrade", async () => {
    await ok(["approve", "nbp-fx", ...data]);
    await ok(["reconcile", ...data, "--oci-layout", layout, "--trusted-signers", signers, "--out", join(dir, "cluster")]);
    const rows = JSON.parse(await ok(["get", "plugins", "--json", ...data])) as { name: string; running: string | null; pending: string[] }[];
    expect(rows.find((r) => r.name === "nbp-fx")).toMatchObject({ pending: [] });
    expect(rows.find((r) => r.name === "nbp-fx")?.running).toContain("ac327d8f");
  });

  it("copies the log to a SQLite file and back to another database, each copy the same rows, byte for byte", async () => {
    const file = join(dir, "copy.db");
    const out = await ok(["migrate-store", "--from", store, "--to", `sqlite:${file}`]);
    expect(out).toMatch(/^copied (\d+) event\(s\) from postgres:\/\/postgres@127\.0\.0\.1:\d+\/cli to sqlite:.*copy\.db; the copy holds the same \1 event\(s\), byte for byte/);
    const back = pg.urlFor(pg.createDatabase("back"));
    await ok(["store", "init", "--store", back]);
    await ok(["migrate-store", "--from", `sqlite:${file}`, "--to", back]);
    const original = await ok(["log", "--json", "--store", store]);
    expect(await ok(["log", "--json", "--store", `sqlite:${file}`])).toBe(original);
    expect(await ok(["log", "--json", "--store", back])).toBe(original);
    expect(await ok(["verify-log", "--store", back])).toMatch(/^the log holds: \d+ events, every hash verified$/m);
  });

  it.each([
    [["get", "plugins", "--store", "mysql://root:hunter2@db/x"], 2, /--store has the scheme "mysql:"/],
    [["get", "plugins", "--store", "sqlite:/nonexistent/none.db"], 1, /no event log in \/nonexistent\/none\.db/],
    [["migrate-store", "--from", "sqlite:/nonexistent/a.db", "--to", "sqlite:/nonexistent/a.db"], 2, /--from and --to name the same log/],
    [["store", "init", "--store", "sqlite:/tmp/x.db"], 2, /store init takes a postgres:\/\/ URL/],
    [["up", "--store", "mysql://root:hunter2@db/x", "--no-egress", "--no-server", "--no-views"], 2, /--store has the scheme "mysql:"/],
  ])("refuses %j in one line (exit %i), never showing a password", async (args, code, message) => {
    const r = await spawnOpenfief(args);
    expect(r.code, r.stderr).toBe(code);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).not.toContain("hunter2");
  });

  it("sets a database up as docs/postgresql.md says: roles by a superuser, the schema by its owner, the log used as the application's role", async () => {
    const db = pg.createDatabase("roles");
    pg.psql(await ok(["store", "roles", "--database", db]), db);
    expect(await ok(["store", "init", "--store", pg.urlFor(db, "openfief_owner"), "--app-role", "openfief_app"])).toMatch(/applied 0001_events, .*; openfief_app may read and append$/m);
    const app = pg.urlFor(db, "openfief_app");
    await ok(["apply", "-f", join(ROOT, "examples", "plugins"), "--data", join(dir, "roles"), "--store", app]);
    expect(await ok(["verify-log", "--store", app])).toMatch(/^the log holds: \d+ events, every hash verified$/m);
    // The application's role may not change what it appended.
    expect(() => pg.psql("SET ROLE openfief_app; DELETE FROM events", db)).toThrow();
  });

  it("names the missing schema and the command that makes it", async () => {
    const bare = pg.urlFor(pg.createDatabase("bare"));
    const r = await spawnOpenfief(["get", "plugins", "--store", bare]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/lacks migrations .*openfief store init/);
  });
});
