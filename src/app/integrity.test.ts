/**
 * The integrity page's report checks only what came after its last verified event: an edit made
 * before that point is not read again (so not seen), an edit after it is, and `verify-log`, which
 * walks the whole chain, catches both.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import { tamper as editFile } from "../../test/support/sqlite-file.js";
import { integrityReport, verifyLog } from "./integrity.js";

let dir: string;
let store: EventLog;

const decision = (i: number) => ({ stream: "egress/echo", type: "egress.decision", actor: "egress", data: { plugin: "echo", host: `h${i}.example`, port: 443, allowed: false, reason: "no_allow_list", rules: 1 } });

/** Changes an event's actor by hand, as someone with the file could, leaving its hash as it was. */
async function tamper(seq: number): Promise<void> {
  editFile(store.location, `UPDATE events SET actor = 'mallory' WHERE seq = ${seq}`);
  expect(await store.restoreGuards()).toEqual(["events_no_update"]);
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-integrity-"));
  store = await openStore({ file: join(dir, "log.db") });
  for (let i = 1; i <= 10; i++) await store.append([decision(i)]);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the integrity report", () => {
  it("walks the whole chain the first time, then from the last event it verified", async () => {
    const first = await integrityReport(store);
    expect([first.chain.verifiedBefore, first.chain.result, first.ok]).toEqual([0, { ok: true, count: 10 }, true]);
    for (let i = 11; i <= 12; i++) await store.append([decision(i)]);
    const next = await integrityReport(store);
    expect([next.chain.verifiedBefore, next.chain.result, next.head.seq]).toEqual([10, { ok: true, count: 12 }, 12]);
  });

  it("does not read an event before its last verified one again, which verify-log, walking the whole chain, still does", async () => {
    await integrityReport(store);
    await tamper(4);
    await store.append([decision(11)]);
    expect(await integrityReport(store)).toMatchObject({ ok: true, chain: { verifiedBefore: 10, result: { ok: true, count: 11 } } });
    expect(await verifyLog(store)).toMatchObject({ ok: false, chain: { ok: false, seq: 4 } });
  });

  it("finds an edit made after its last verified event, and one of that event itself", async () => {
    await integrityReport(store);
    for (let i = 11; i <= 12; i++) await store.append([decision(i)]);
    await tamper(12);
    expect(await integrityReport(store)).toMatchObject({ ok: false, chain: { verifiedBefore: 10, result: { ok: false, seq: 12 } } });
    await tamper(10);
    expect(await integrityReport(store)).toMatchObject({ ok: false, chain: { verifiedBefore: 10, result: { ok: false, seq: 10 } } });
  });

  it("re-decides each decision once, as far as the log reached, and counts the ones that do not reproduce", async () => {
    // With no allow-list event in the log, an egress decision is checked for its addresses only.
    const first = await integrityReport(store);
    expect(first.decisions).toMatchObject({ upTo: 10, checked: 10, diverged: 0 });
    await store.append([{ stream: "plugin/echo", type: "workload.desired", actor: "reconciler", data: { name: "echo", running: true, image: `registry.example/echo@sha256:${"a".repeat(64)}`, objects: [], allowList: ["h11.example:443"] } }]);
    // Allowed to a host the list does not hold, and there was no list before it either.
    await store.append([{ ...decision(99), data: { ...decision(99).data, allowed: true, reason: "listed" } }]);
    const next = await integrityReport(store);
    expect(next.decisions).toMatchObject({ upTo: 12, checked: 11, diverged: 1, divergences: [{ seq: 12, name: "echo", field: "egress.list" }] });
  });
});
