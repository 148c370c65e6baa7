/**
 * The operator on the cluster's one log: the real operator (`runOperator` with
 * `clusterReconcilerFactory`) against the fake API server reads the log's URL from the file
 * `OPENFIEF_STORE_FILE` names (a Secret mounted as a file) and records its observations and
 * decisions in PostgreSQL; its data folder holds no log.
 */
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { clusterReconcilerFactory } from "../../src/compose/index.js";
import { openPostgresLog, type EventLog } from "../../src/events/index.js";
import { runOperator } from "../../src/kube/operator.js";
import { startLogDatabases, type LogDatabases } from "../events/postgres-support.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, operatorOptions, putTrustedSigners, setOperatorEnv, until } from "./operator-fixture.js";

let dbs: LogDatabases;
let server: FakeApiServer;
let dir: string;
let log: EventLog;
let restoreEnv: () => void = () => undefined;
let failure: unknown;

beforeAll(async () => {
  dbs = await startLogDatabases();
  const url = await dbs.fresh();
  log = await openPostgresLog({ url, migrate: false });
  dir = await mkdtemp(join(tmpdir(), "openfief-operator-pg-"));
  await writeFile(join(dir, "store-url"), `${url}\n`, { mode: 0o600 });
  restoreEnv = setOperatorEnv();
  process.env["OPENFIEF_STORE_FILE"] = join(dir, "store-url");
  server = await FakeApiServer.start();
  await putTrustedSigners(server);
}, 120_000);

afterAll(async () => {
  delete process.env["OPENFIEF_STORE_FILE"];
  restoreEnv();
  await server?.close();
  await log?.close();
  await dbs?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe("the operator on a PostgreSQL log", () => {
  it("records the cluster's Plugins and its decisions in the log the Secret names, keeping no log of its own", { timeout: 60_000 }, async () => {
    const controller = new AbortController();
    const done = runOperator(operatorOptions(server, "pod-a", "operator-token", join(dir, "data"), controller.signal), clusterReconcilerFactory).catch((err: unknown) => {
      failure = err;
    });
    try {
      for (const file of ["plugins/nbp-fx.yaml", "plugins/nbp-fx-grant.yaml"]) server.put(parseYaml(await readFile(join(EXAMPLES, file), "utf8")) as Record<string, unknown> & { metadata: Record<string, unknown> });
      await until("the decision is in PostgreSQL", async () => (await log.last("plugin/nbp-fx", "rollout.decided")) !== null, () => failure);
    } finally {
      controller.abort();
      await done;
    }
    expect((await log.read({ stream: "plugin/nbp-fx" })).map((e) => e.type)).toEqual(expect.arrayContaining(["plugin.observed", "grant.observed", "rollout.decided"]));
    expect(await log.verify()).toMatchObject({ ok: true });
    expect(existsSync(join(dir, "data", "openfief.db"))).toBe(false);
  });
});
