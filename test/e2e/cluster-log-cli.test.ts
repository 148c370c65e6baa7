/**
 * The CLI against the cluster's log, as docs/cluster.md tells an operator to use it: the database
 * set up with the SQL `openfief store roles --reader-role` prints, the schema made by `store init`
 * as its owner, the control plane appending as the application's role, and `why`, `log`, `replay`,
 * `verify-log` and `check-decisions` asked as the read-only role, which can append nothing.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLogDatabases } from "../events/postgres-support.js";
import type { LogDatabases } from "../events/postgres-support.js";
import { json, ok, openfief, ROOT } from "./support.js";

let dbs: LogDatabases;
let db: string;
let app: string;
let reader: string;

beforeAll(async () => {
  dbs = await startLogDatabases();
  db = dbs.server.createDatabase("cluster_log");
  const sql = await ok(["store", "roles", "--database", db, "--reader-role", "openfief_reader"]);
  const [roles, inDatabase] = sql.split(/^-- Then, connected to the database .*$/m);
  dbs.server.psql(`${roles ?? ""}\nALTER ROLE openfief_owner PASSWORD 'owner-pw'; ALTER ROLE openfief_app PASSWORD 'app-pw'; ALTER ROLE openfief_reader PASSWORD 'reader-pw';`);
  dbs.server.psql(inDatabase ?? "", db);
  await ok(["store", "init", "--store", dbs.server.urlFor(db, "openfief_owner", "owner-pw"), "--app-role", "openfief_app"]);
  app = dbs.server.urlFor(db, "openfief_app", "app-pw");
  reader = dbs.server.urlFor(db, "openfief_reader", "reader-pw");
  // What the cluster's components record (here the embedded reconciler, appending as the application's role).
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), "--store", app]);
  await ok(["reconcile", "--store", app, "--data", join(ROOT, ".tmp", `cluster-log-${process.pid}`), "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json")]);
}, 120_000);

afterAll(async () => {
  await dbs?.stop();
  rmSync(join(ROOT, ".tmp", `cluster-log-${process.pid}`), { recursive: true, force: true });
});

describe("the cluster's log, asked as the read-only role", () => {
  it("why names the decision, its inputs and its causes", async () => {
    const out = await ok(["why", "nbp-fx", "--store", reader]);
    expect(out).toContain("nbp-fx runs localhost/openfief-demo/nbp-fx@sha256:32a155bf");
  });

  it("log lists the events, replay states the past", async () => {
    const lines = (await ok(["log", "--json", "--store", reader])).trim().split("\n").map((l) => JSON.parse(l) as { type: string });
    expect(lines.map((e) => e.type)).toContain("rollout.decided");
    expect(await ok(["replay", "--at", "3", "--store", reader])).toContain("state as of event 3");
  });

  it("verify-log and check-decisions pass", async () => {
    expect(await json(["verify-log", "--store", reader])).toMatchObject({ ok: true });
    expect(await json(["check-decisions", "--store", reader])).toMatchObject({ divergences: [] });
  });

  it("cannot append, and never shows its password", async () => {
    const count = async (): Promise<number> => ((await dbs.run(dbs.server.urlFor(db), "SELECT count(*)::int AS n FROM events"))[0]?.rows[0] as { n: number }).n;
    const before = await count();
    // An upgrade: a new spec, which must be appended.
    const r = await openfief(["apply", "-f", join(ROOT, "examples", "upgrade", "nbp-fx-v2.yaml"), "--store", reader]);
    expect(r.code).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).not.toContain("reader-pw");
    expect(await count()).toBe(before);
  });
});
