/**
 * The store benchmark ends by re-running the deciders over the log it grew; the workload must be
 * one they reproduce, or the benchmark reports divergences the code under test did not cause.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { recheckAddresses } from "../src/egress/index.js";
import { openStore } from "../src/events/index.js";
import type { EventLog } from "../src/events/index.js";
import { checkDecisions } from "../src/projections/index.js";
import { Workload } from "./workload.js";

let dir: string;
let store: EventLog;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-workload-"));
  store = await openStore({ file: join(dir, "log.db") });
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the store benchmark's workload", () => {
  it.each([
    ["every plugin's first round", 5, 100],
    ["plugins upgraded many times over", 7, 2_000],
  ])("is reproduced by the deciders, rollouts and egress alike (%s)", async (_what, plugins, events) => {
    const w = new Workload(plugins);
    for (const b of w.batches(await store.head(), events, 300)) await store.append(b);
    const r = await checkDecisions(store, { egressAddresses: recheckAddresses });
    expect(r.divergences).toEqual([]);
    // A rollout decision and 13 or 14 egress decisions a round, every one checked.
    expect(r.checked).toBe((await store.read({ type: ["rollout.decided", "egress.decision"] })).length);
    expect(r.checked).toBeGreaterThan(w.rounds * 14 - 1);
  });
});
