/**
 * Signed checkpoints in the cluster through the bundle (docs/adr/0144): `openfief log-key` makes
 * the key a Secret holds, `openfief witness` runs, and `openfief operator --witness …` (a real
 * child process against the fake API server, on a real PostgreSQL log, the key read from the file
 * `OPENFIEF_LOG_KEY_FILE` names) signs checkpoints that the witness cosigns. A bad `--witness` is
 * one line and exit 2.
 */
import { statSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { cosignedCheckpoints, witnessStates } from "../../src/app/index.js";
import { openPostgresLog } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import { NAMESPACE } from "../../src/plugins/index.js";
import { openCheckpoint, parseVerifierKey } from "../../src/tlog/index.js";
import { freshBundle, json, openfief, startOpenfief } from "../e2e/support.js";
import type { Started } from "../e2e/support.js";
import { startLogDatabases, type LogDatabases } from "../events/postgres-support.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, putTrustedSigners, setOperatorEnv } from "./operator-fixture.js";

let fake: FakeApiServer;
let dbs: LogDatabases;
let dir: string;
let log: EventLog;
let restoreEnv: () => void = () => undefined;
const started: Started[] = [];

async function kubeconfig(name: string): Promise<string> {
  const file = join(dir, `${name}.kubeconfig`);
  await writeFile(file, JSON.stringify({
    apiVersion: "v1", kind: "Config", "current-context": "fake",
    clusters: [{ name: "fake", cluster: { server: fake.url, "insecure-skip-tls-verify": true } }],
    users: [{ name, user: { token: `${name}-token` } }],
    contexts: [{ name: "fake", context: { cluster: "fake", user: name, namespace: NAMESPACE } }],
  }));
  return file;
}

async function until(what: string, predicate: () => boolean | Promise<boolean>, failed: () => string | undefined): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const f = failed();
    if (f !== undefined) throw new Error(`the operator stopped while waiting for: ${what}: ${f}`);
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened within a minute: ${what}`);
}

beforeAll(async () => {
  restoreEnv = setOperatorEnv();
  [fake, dbs, dir] = await Promise.all([FakeApiServer.start(), startLogDatabases(), mkdtemp(join(tmpdir(), "openfief-operator-cp-cli-"))]);
  const url = await dbs.fresh();
  await writeFile(join(dir, "store-url"), `${url}\n`, { mode: 0o400 });
  log = await openPostgresLog({ url, migrate: false });
  await putTrustedSigners(fake);
  await freshBundle();
}, 180_000);

afterAll(async () => {
  for (const s of started) if (s.child.exitCode === null && s.child.signalCode === null) await s.stop();
  restoreEnv();
  await log?.close();
  await fake?.close();
  await dbs?.stop();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

describe("openfief operator --witness", () => {
  it("signs the cluster's log with the key openfief log-key made, and the witness cosigns", { timeout: 120_000 }, async () => {
    const keyFile = join(dir, "log-key");
    const made = await json<{ file: string; origin: string; verifierKey: string }>(["log-key", keyFile, "--name", "cluster.test/log"]);
    expect(made).toMatchObject({ file: keyFile, origin: "cluster.test/log", verifierKey: expect.stringMatching(/^cluster\.test\/log\+[0-9a-f]{8}\+/) });
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    // Never replaced: a second run refuses in one line.
    const again = await openfief(["log-key", keyFile]);
    expect(again.code).toBe(2);
    expect(again.stderr.trim().split("\n")).toHaveLength(1);
    expect(again.stderr).not.toContain("PRIVATE+KEY");

    const witness = await startOpenfief(["witness", "--data", join(dir, "w"), "--listen", "127.0.0.1:0", "--name", "witness.test/w1", "--log", `${made.origin} ${made.verifierKey}`]);
    started.push(witness);
    const out = await witness.waitFor(/listening on http:\/\/\S+/);
    const wurl = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? "";
    const wkey = /^verifier key: (\S+)$/m.exec(out)?.[1] ?? "";

    const operator = await startOpenfief(["operator", "--kubeconfig", await kubeconfig("operator-a"), "--data", join(dir, "operator-a"), "--health-port", "0",
      "--identity", "operator-a", "--leader-elect-retry-period", "0.2", "--checkpoint-interval", "0.2", "--witness", `${wurl} ${wkey}`],
      { OPENFIEF_STORE_FILE: join(dir, "store-url"), OPENFIEF_LOG_KEY_FILE: keyFile, OPENFIEF_LOG_LEVEL: "warn" });
    started.push(operator);
    const stopped = () => (operator.child.exitCode === null ? undefined : operator.output().stderr);
    for (const f of ["nbp-fx.yaml", "nbp-fx-grant.yaml"]) fake.put(parseYaml(await readFile(join(EXAMPLES, "plugins", f), "utf8")) as Record<string, unknown>);
    await until("the decision is in the log", async () => (await log.last("plugin/nbp-fx", "rollout.decided")) !== null, stopped);
    const decided = (await log.last("plugin/nbp-fx", "rollout.decided"))?.seq ?? Infinity;
    await until("the witness cosigned a checkpoint covering the decision", async () => {
      const states = await witnessStates(log);
      return states[0]?.status === "cosigned" && states[0].size >= decided;
    }, stopped);

    // The published checkpoint carries the cosignature: both keys verify it.
    // (The checkpoint it cosigned: the leader may have signed a newer one since.)
    const latest = await log.tree.checkpointAt((await witnessStates(log))[0]?.size ?? 0);
    if (latest === null) throw new Error("no checkpoint");
    const note = (await cosignedCheckpoints(log)).noteFor(latest);
    const keys = [made.verifierKey, wkey].map((k) => {
      const v = parseVerifierKey(k);
      if (!v.ok) throw new Error(v.error.message);
      return v.value;
    });
    const opened = openCheckpoint(note, keys);
    expect(opened.ok).toBe(true);
    expect(note.split("\n").filter((l) => l.startsWith("— ")).map((l) => l.split(" ")[1])).toEqual(["cluster.test/log", "witness.test/w1"]);
    const end = await operator.stop();
    expect(end.code).toBe(0);
    expect(`${end.stdout}${end.stderr}`).not.toContain("PRIVATE+KEY");
  });

  it("refuses a bad --witness in one line (exit 2)", async () => {
    const r = await openfief(["operator", "--kubeconfig", join(dir, "none"), "--witness", "ftp://witness.example/"]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("--witness");
  });
});
