/**
 * The operator signs the cluster's log (docs/adr/0144): two real operator replicas
 * (`runOperator` with `clusterReconcilerFactory`) against the fake API server, on one PostgreSQL
 * log, with the log's key from the file `OPENFIEF_LOG_KEY_FILE` names (the Secret) and a real
 * witness (`src/witness`, listening on loopback). Only the leader signs and asks the witness; when
 * it stops, the standby takes over both with the same key; no size is ever signed twice.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { witnessStates } from "../../src/app/index.js";
import { clusterReconcilerFactory, startOperatorCheckpoints } from "../../src/compose/index.js";
import type { LogKey } from "../../src/app/index.js";
import type { EventLog, StoredEvent } from "../../src/events/index.js";
import { runOperator } from "../../src/kube/operator.js";
import { openCheckpoint, parseVerifierKey } from "../../src/tlog/index.js";
import { listenWitness, openWitness, witnessVerifierKey } from "../../src/witness/index.js";
import type { ListeningWitness, OpenedWitness } from "../../src/witness/index.js";
import { pluginObserved } from "../events/helpers.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, operatorOptions, putTrustedSigners, startSignedClusterLog, until } from "./operator-fixture.js";
import type { SignedClusterLog } from "./operator-fixture.js";

let cluster: SignedClusterLog | undefined;
let server: FakeApiServer;
let dir: string;
let log: EventLog;
let key: LogKey;
let opened: OpenedWitness;
let witness: ListeningWitness;
let witnessKey: string;
let failure: unknown;

const checkpoints = async (): Promise<StoredEvent[]> => log.read({ stream: "log", type: "log.checkpoint" });

beforeAll(async () => {
  cluster = await startSignedClusterLog("openfief-operator-cp-");
  ({ log, key, dir } = cluster);
  const verifier = parseVerifierKey(key.verifierKey);
  if (!verifier.ok) throw new Error(verifier.error.message);
  const w = openWitness({ dir: join(dir, "witness"), name: "witness.test/w1", logs: [{ origin: key.origin, verifiers: [verifier.value], keys: [key.verifierKey] }] });
  if (!w.ok) throw new Error(w.error.message);
  opened = w.value;
  witness = await listenWitness(opened.service, { host: "127.0.0.1", port: 0 });
  const wk = witnessVerifierKey(join(dir, "witness"), undefined);
  if (!wk.ok) throw new Error(wk.error.message);
  witnessKey = wk.value.verifierKey;
  server = await FakeApiServer.start();
  await putTrustedSigners(server);
}, 120_000);

afterAll(async () => {
  await witness?.close();
  opened?.release();
  await server?.close();
  await cluster?.close();
}, 60_000);

function replica(identity: string): { stop: () => Promise<void> } {
  const controller = new AbortController();
  const options = {
    ...operatorOptions(server, identity, "operator-token", join(dir, identity), controller.signal),
    checkpoints: { every: 10_000, intervalMs: 100, witnesses: [`${witness.url} ${witnessKey}`] },
  };
  const done = runOperator(options, clusterReconcilerFactory).catch((err: unknown) => {
    failure = err;
  });
  return { stop: async () => { controller.abort(); await done; } };
}

/** Every checkpoint the log records verifies with the log's key, and no size is signed twice. */
async function assertCheckpointsSound(): Promise<StoredEvent[]> {
  const all = await checkpoints();
  const sizes = all.map((e) => (e.data as { size: number }).size);
  expect(new Set(sizes).size).toBe(sizes.length);
  expect(sizes).toEqual([...sizes].sort((a, b) => a - b));
  for (const e of all) {
    const verifier = parseVerifierKey(key.verifierKey);
    if (!verifier.ok) throw new Error(verifier.error.message);
    expect(openCheckpoint((e.data as { note: string }).note, [verifier.value]).ok).toBe(true);
    expect(e.actor).toBe("log");
  }
  return all;
}

describe("the operator's checkpoints", () => {
  it("the leader signs with the Secret's key and the witness cosigns; the standby takes over both", { timeout: 60_000 }, async () => {
    const a = replica("pod-a");
    let b: { stop: () => Promise<void> } | null = null;
    try {
      for (const file of ["plugins/nbp-fx.yaml", "plugins/nbp-fx-grant.yaml"]) server.put(parseYaml(await readFile(join(EXAMPLES, file), "utf8")) as Record<string, unknown> & { metadata: Record<string, unknown> });
      await until("the decision is in PostgreSQL", async () => (await log.last("plugin/nbp-fx", "rollout.decided")) !== null, () => failure);
      const decided = await log.last("plugin/nbp-fx", "rollout.decided");
      await until("a checkpoint covers the decision", async () => ((await log.tree.latestCheckpoint())?.size ?? 0) >= (decided?.seq ?? Infinity), () => failure);
      await until("the witness cosigned the newest checkpoint", async () => {
        const latest = await log.tree.latestCheckpoint();
        const states = await witnessStates(log);
        return states.length === 1 && states[0]?.status === "cosigned" && states[0].size === latest?.size;
      }, () => failure);
      expect((await witnessStates(log))[0]).toMatchObject({ url: `${witness.url}/add-checkpoint`, witness: expect.stringMatching(/^witness\.test\/w1\+[0-9a-f]{8}$/) });

      // A standby signs nothing while the leader leads.
      b = replica("pod-b");
      await a.stop();
      // Another component appends (an egress proxy, the console): the new leader covers it.
      const [appended] = await log.append([pluginObserved("after-failover")]);
      await until("the new leader signs a checkpoint covering what came after", async () => ((await log.tree.latestCheckpoint())?.size ?? 0) >= (appended?.seq ?? Infinity), () => failure);
      await until("the witness cosigned the new leader's checkpoint", async () => {
        const latest = await log.tree.latestCheckpoint();
        return (await witnessStates(log))[0]?.size === latest?.size;
      }, () => failure);
      const all = await assertCheckpointsSound();
      expect(all.length).toBeGreaterThanOrEqual(2);
    } finally {
      await b?.stop();
      await a.stop();
    }
    expect(failure).toBeUndefined();
    expect(await log.verify()).toMatchObject({ ok: true });
  });

  it("without the key's Secret the operator signs nothing and says so; --witness without it refuses", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (l: string) => { lines.push(l); } });
    const missing = join(dir, "no-such-key");
    expect(await startOperatorCheckpoints(log, { every: 1, intervalMs: 100, witnesses: [] }, { isLeader: () => true, logger, env: { OPENFIEF_LOG_KEY_FILE: missing } })).toBeNull();
    expect(lines.join("")).toContain("the operator signs no checkpoints");
    await expect(startOperatorCheckpoints(log, { every: 1, intervalMs: 100, witnesses: [witness.url] }, { isLeader: () => true, logger, env: {} })).rejects.toMatchObject({ code: "bad_setting", message: expect.stringContaining("--witness needs the log's key") });
    expect(await startOperatorCheckpoints(log, null, { isLeader: () => true, logger, env: {} })).toBeNull();
  });

  it("a standby signs nothing", async () => {
    const before = (await checkpoints()).length;
    await log.append([pluginObserved("while-standby")]);
    const cp = await startOperatorCheckpoints(log, { every: 1, intervalMs: 50, witnesses: [] }, { isLeader: () => false, logger: pino({ level: "silent" }), env: process.env });
    try {
      await new Promise((r) => setTimeout(r, 300));
      expect((await checkpoints()).length).toBe(before);
    } finally {
      await cp?.stop();
    }
  });
});
