/**
 * Witnesses on up (docs/adr/0155) against `openfief witness` run as a real process: a checkpoint is
 * cosigned and the cosignature kept beside the log, where `prove` finds it; a log that lost what the
 * witness cosigned is answered 409 and tries again from the witness's size; a witness that is down
 * or never answers costs neither the appends nor the other witnesses anything but its deadline.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import type { Server, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cosignedCheckpoints, loadLogKey, openDataDir, openDataStore, parseWitnessTarget, Witnesses, witnessStates } from "../../src/app/index.js";
import type { LogKey } from "../../src/app/index.js";
import { writeCheckpoint } from "../../src/events/index.js";
import type { EventLog, StoredCheckpoint } from "../../src/events/index.js";
import { openCheckpoint, parseVerifierKey } from "../../src/tlog/index.js";
import { grantObserved, pluginObserved } from "../events/helpers.js";
import { openfief, startOpenfief } from "../e2e/support.js";
import type { Started } from "../e2e/support.js";

const logger = pino({ level: "silent" });
let root: string;
let data: string;
let key: LogKey;
let witness: Started;
let url: string;
let wkey: string;

async function grow(store: EventLog, names: readonly string[]): Promise<StoredCheckpoint> {
  for (const name of names) await store.append([pluginObserved(name), grantObserved(name)]);
  const c = await writeCheckpoint(store, key.signer);
  if (c === null) throw new Error("no checkpoint");
  return c;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "openfief-witnesses-"));
  data = join(root, "data");
  openDataDir(data);
  key = loadLogKey({ dataDir: data });
  witness = await startOpenfief(["witness", "--data", join(root, "w"), "--listen", "127.0.0.1:0", "--name", "witness.test/w1", "--log", `${key.origin} ${key.verifierKey}`]);
  const out = await witness.waitFor(/listening on http:\/\/\S+/);
  url = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? "";
  wkey = /^verifier key: (\S+)$/m.exec(out)?.[1] ?? "";
}, 120_000);
afterAll(async () => {
  await witness.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("witnesses on up", () => {
  it("cosign each checkpoint from the size they last cosigned; a lost state costs one 409", async () => {
    let store = await openDataStore(data);
    const c1 = await grow(store, ["a1", "a2"]);
    const c2 = await grow(store, ["a3"]);
    await store.close();
    // The same log, without what it kept of the witness.
    const lost = join(root, "lost");
    cpSync(data, lost, { recursive: true });
    store = await openDataStore(data);
    try {
      const registry = new Registry();
      const w = await Witnesses.start(store, [parseWitnessTarget(`${url} ${wkey}`)], { logger, registry });
      w.submit(c1);
      await w.settled();
      expect(w.states()).toMatchObject([{ url: `${url}/add-checkpoint`, size: c1.size, status: "cosigned", witness: expect.stringMatching(/^witness\.test\/w1\+[0-9a-f]{8}$/) }]);
      // Kept beside the log, attached to the checkpoint it is for, verifiable with the witness's key.
      const note = (await cosignedCheckpoints(store)).noteFor(c1);
      const verifier = parseVerifierKey(wkey);
      if (!verifier.ok) throw new Error(verifier.error.message);
      expect(openCheckpoint(note, [verifier.value]).ok).toBe(true);
      expect(await registry.getSingleMetricAsString("openfief_witness_submissions_total")).toContain('openfief_witness_submissions_total{result="cosigned"} 1');
      await w.stop();
    } finally {
      await store.close();
    }
    store = await openDataStore(lost);
    try {
      const registry = new Registry();
      const w = await Witnesses.start(store, [parseWitnessTarget(url)], { logger, registry });
      expect(w.states()[0]?.size).toBe(0);
      w.submit(c2);
      await w.settled();
      expect(w.states()[0]).toMatchObject({ size: c2.size, status: "cosigned" });
      const metric = await registry.getSingleMetricAsString("openfief_witness_submissions_total");
      expect(metric).toContain('{result="conflict"} 1');
      expect(metric).toContain('{result="cosigned"} 1');
      await w.stop();
    } finally {
      await store.close();
    }
  });

  it("a proof carries the kept cosignature; verify-proof requires it by the witness's key", async () => {
    const store = await openDataStore(data);
    let c: StoredCheckpoint;
    try {
      c = await grow(store, ["b1"]);
      const w = await Witnesses.start(store, [parseWitnessTarget(url)], { logger });
      expect(w.states()[0]?.status).toBe("cosigned"); // read back from beside the log
      w.submit(c);
      await w.settled();
      expect(w.states()[0]).toMatchObject({ size: c.size, status: "cosigned" });
      await w.stop();
    } finally {
      await store.close();
    }
    const out = join(root, "b1.tlog-proof");
    const made = await openfief(["prove", "1", "--out", out, "--data", data]);
    expect(made.stdout).toMatch(/, cosigned by witness\.test\/w1\+[0-9a-f]{8}\n$/);
    const v = await openfief(["verify-proof", out, "--key", key.verifierKey, "--witness", wkey]);
    expect([v.code, v.stdout.split("\n")[1]]).toEqual([0, expect.stringMatching(/^ {2}cosigned by witness\.test\/w1\+[0-9a-f]{8} at 20\d\d-/)]);
  });

  it("a 409 from a witness that cosigned more of the log than it has left: refused, logged, not retried", async () => {
    // The witness holds the newest size of `data`; a copy with fewer events asks it to cosign less.
    const small = join(root, "small");
    openDataDir(small);
    cpSync(join(data, "log-key"), join(small, "log-key"));
    const store = await openDataStore(small);
    try {
      const c = await grow(store, ["c1"]);
      const w = await Witnesses.start(store, [parseWitnessTarget(url)], { logger });
      w.submit(c);
      await w.settled();
      expect(w.states()[0]).toMatchObject({ status: "refused", detail: expect.stringMatching(/^the witness has cosigned \d+ events of this log, more than its checkpoint of \d+: events were removed/) });
      expect((await witnessStates(store))[0]?.status).toBe("refused");
      await w.stop();
    } finally {
      await store.close();
    }
  });

  it("a witness that is down or never answers stalls neither appends nor the other witnesses", async () => {
    const sockets = new Set<Socket>();
    const hanging: Server = createServer((s) => { sockets.add(s); });
    await new Promise<void>((r) => hanging.listen(0, "127.0.0.1", () => r()));
    const hangingUrl = `http://127.0.0.1:${(hanging.address() as { port: number }).port}`;
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", () => r()));
    const downUrl = `http://127.0.0.1:${(closed.address() as { port: number }).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    const store = await openDataStore(data);
    try {
      const w = await Witnesses.start(store, [parseWitnessTarget(hangingUrl), parseWitnessTarget(downUrl), parseWitnessTarget(url)], { logger, timeoutMs: 1_500 });
      const c = await grow(store, ["d1"]);
      const t0 = performance.now();
      w.submit(c);
      expect(performance.now() - t0).toBeLessThan(50);
      const a0 = performance.now();
      await store.append([pluginObserved("d2")]);
      expect(performance.now() - a0).toBeLessThan(500);
      await w.settled();
      const states = w.states();
      expect(states.map((s) => s.status)).toEqual(["unreachable", "unreachable", "cosigned"]);
      expect(states[0]?.detail).toMatch(/abort|timeout/i);
      await w.stop();
    } finally {
      await store.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => hanging.close(() => r()));
    }
  });
});
