/**
 * Removed instances: which removal ended the instance an event or a delivery came from, for every
 * way a plugin goes and comes back (deleted, deleted and applied again, uninstalled, uninstalled and
 * installed again, uninstalled while deleted, an uninstall not carried out yet), and the one
 * wording every face prints.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventLog, KnownEvent } from "../events/index.js";
import type { DeliveryRecord } from "./deliveries.js";
import { eventSentence } from "./log.js";
import { explain } from "./plugin-view.js";
import { currentRemoval, eventRemoval, markRemovedDeliveries, removalAfter } from "./removed.js";
import { removedHeadline, removedInstanceText } from "./wording.js";

let dir: string;
let store: EventLog;
let clockMs: number;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-removed-"));
  clockMs = Date.parse("2026-12-02T10:00:00Z");
  // Each append a second later than the one before.
  store = await openStore({ file: join(dir, "log.db"), clock: () => new Date((clockMs += 1000)) });
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A step of a plugin's life; `did` is something it did (an egress decision), labelled. */
type Step = ["install"] | ["did", string] | ["delete"] | ["uninstall"] | ["done"];

const P = "ledger-b";

const STREAM = `plugin/${P}`;
const MAX = Number.MAX_SAFE_INTEGER;

/** Appends one step; returns the label and first event it names, if any. */
async function step(s: Step, count: { delete: number; uninstall: number }): Promise<[string, KnownEvent | undefined] | null> {
  if (s[0] === "install") {
    await store.append([{ stream: STREAM, type: "plugin.observed", actor: "owner:cli", data: { name: P, spec: { image: "x" } } }]);
    return null;
  }
  if (s[0] === "did") {
    const [e] = await store.append([{ stream: `egress/${P}`, type: "egress.decision", actor: "egress", data: { plugin: P, host: `${s[1]}.example`, port: 443, allowed: true, reason: "listed", rules: 1 } }]);
    return [s[1], e];
  }
  if (s[0] === "delete") {
    const [e] = await store.append([{ stream: STREAM, type: "plugin.deleted", actor: "owner:cli", data: { name: P } }]);
    return [`delete${++count.delete}`, e];
  }
  if (s[0] === "uninstall") {
    // As requestUninstall records it: the intent, and the Plugin's deletion when it is installed.
    const installed = (await store.lookups.lastOf(STREAM, ["plugin.observed", "plugin.deleted"], MAX))?.type === "plugin.observed";
    const [e] = await store.append([
      { stream: STREAM, type: "plugin.uninstall.requested", actor: "owner:cli", data: { name: P, grant: false, secrets: [`${P}-session`], module: null } },
      ...(installed ? [{ stream: STREAM, type: "plugin.deleted", actor: "owner:cli", data: { name: P } }] : []),
    ]);
    return [`uninstall${++count.uninstall}`, e];
  }
  const request = (await store.lookups.lastOf(STREAM, ["plugin.uninstall.requested"], MAX))?.seq ?? 0;
  const [e] = await store.append([{ stream: STREAM, type: "plugin.uninstalled", actor: "owner:cli", causedBy: request, data: { name: P, request, grant: false, secrets: [`${P}-session`], absent: [], module: null, resources: [] } }]);
  return ["done", e];
}

/** Appends the steps; returns each `did` by its label and each removal by its order ("delete1", "uninstall1", …). */
async function live(steps: readonly Step[]): Promise<Map<string, KnownEvent>> {
  const at = new Map<string, KnownEvent>();
  const count = { delete: 0, uninstall: 0 };
  for (const s of steps) {
    const named = await step(s, count);
    if (named !== null && named[1] !== undefined) at.set(named[0], named[1]);
  }
  return at;
}

/** What a removal is, by the label of the event that made it: "uninstall1", "delete2", or null. */
type Expect = string | null;

describe("which removal ended the instance something came from", () => {
  it.each<[string, Step[], Record<string, Expect>, Expect]>([
    ["an installed plugin: nothing is from a removed instance", [["install"], ["did", "a"]], { a: null }, null],
    ["deleted: what it did before is from the deleted instance, what came after is not",
      [["install"], ["did", "a"], ["delete"], ["did", "b"]], { a: "delete1", b: null }, "delete1"],
    ["deleted and applied again: the same instance is back, nothing is from a removed one",
      [["install"], ["did", "a"], ["delete"], ["install"], ["did", "b"]], { a: null, b: null }, null],
    ["uninstalled: what it did is from the uninstalled instance",
      [["install"], ["did", "a"], ["uninstall"], ["done"]], { a: "uninstall1" }, "uninstall1"],
    ["an uninstall not carried out yet already marks it",
      [["install"], ["did", "a"], ["uninstall"]], { a: "uninstall1" }, "uninstall1"],
    ["uninstalled and installed again: the first life is from a removed instance, the new one is not",
      [["install"], ["did", "a"], ["uninstall"], ["done"], ["install"], ["did", "b"]], { a: "uninstall1", b: null }, null],
    ["deleted, then uninstalled: the uninstall is what ended it",
      [["install"], ["did", "a"], ["delete"], ["uninstall"], ["done"]], { a: "uninstall1" }, "uninstall1"],
    ["uninstalled, installed again, deleted: each life by its own removal",
      [["install"], ["did", "a"], ["uninstall"], ["done"], ["install"], ["did", "b"], ["delete"]], { a: "uninstall1", b: "delete1" }, "delete1"],
  ])("%s", async (_what, steps, marks, now) => {
    const at = await live(steps);
    const seqOf = (label: Expect) => (label === null ? null : at.get(label)?.seq);
    for (const [label, expected] of Object.entries(marks)) {
      const e = at.get(label);
      if (e === undefined) throw new Error(`no event ${label}`);
      const r = await eventRemoval(store, e);
      expect(r?.seq ?? null, label).toBe(seqOf(expected));
      if (expected !== null) expect(r?.how, label).toBe(expected.startsWith("delete") ? "deleted" : "uninstalled");
      // A delivery recorded as it happened is marked the same way.
      expect((await removalAfter(store, P, { time: e.time }))?.seq ?? null, `${label} by time`).toBe(seqOf(expected));
    }
    expect((await currentRemoval(store, P))?.seq ?? null).toBe(seqOf(now));
  });

  it("never marks the removal itself, nor a plugin the log never heard of", async () => {
    const at = await live([["install"], ["uninstall"], ["done"]]);
    for (const label of ["uninstall1", "done"]) expect(await eventRemoval(store, at.get(label) as KnownEvent)).toBeNull();
    expect(await currentRemoval(store, "nobody")).toBeNull();
    expect(await removalAfter(store, "Not A Name", { seq: 0 })).toBeNull();
  });

  it("why of an instance removed before any decision says so in its not_found", async () => {
    await live([["install"], ["uninstall"], ["done"]]);
    await expect(explain(store, P)).rejects.toThrow(/^no decision recorded for ledger-b; ledger-b is a removed instance: it was uninstalled at /);
  });

  it("says whether an uninstall was carried out", async () => {
    await live([["install"], ["uninstall"]]);
    expect((await currentRemoval(store, P))?.doneSeq).toBeNull();
    const at = await live([["done"]]);
    expect((await currentRemoval(store, P))?.doneSeq).toBe(at.get("done")?.seq);
  });
});

describe("the words every face prints", () => {
  it.each<[string, Parameters<typeof removedInstanceText>[0], string]>([
    ["an uninstall", { name: "ecb-fx", how: "uninstalled", seq: 40, at: "2026-12-02T17:15:45.125Z" }, "from removed instance ecb-fx (removed at 2026-12-02 17:15:45 UTC, event 40, uninstalled)"],
    ["a deletion", { name: "nbp-fx", how: "deleted", seq: 7, at: "2026-12-02T09:00:00Z" }, "from removed instance nbp-fx (removed at 2026-12-02 09:00:00 UTC, event 7, its Plugin deleted)"],
  ])("%s", (_what, r, text) => {
    expect(removedInstanceText(r)).toBe(text);
  });

  it.each<[string, Parameters<typeof removedHeadline>, RegExp]>([
    ["uninstalled, with what went", [{ name: "a", how: "uninstalled", seq: 4, at: "2026-12-02T10:00:00Z" }, { grant: true, secrets: ["a-session"], module: null }],
      /^a is a removed instance: it was uninstalled at 2026-12-02 10:00:00 UTC \(event 4\), removing its objects and allow-list entry, its grant, Secret a-session\. Its decisions and deliveries stay in the log/],
    ["an uninstall under way", [{ name: "a", how: "uninstalled", seq: 4, at: "2026-12-02T10:00:00Z" }, null], /^a is a removed instance: its uninstall was asked for at 2026-12-02 10:00:00 UTC \(event 4\) and is not finished yet\./],
    ["deleted, its grant and Secrets kept", [{ name: "a", how: "deleted", seq: 4, at: "2026-12-02T10:00:00Z" }, null], /^a is a removed instance: its Plugin was deleted at 2026-12-02 10:00:00 UTC \(event 4\); nothing else was removed \(its grant and Secrets go only when it is uninstalled\)/],
  ])("%s", (_what, args, line) => {
    expect(removedHeadline(...args)).toMatch(line);
  });

  it("log lines and deliveries carry the same words", async () => {
    const at = await live([["install"], ["did", "a"], ["uninstall"], ["done"]]);
    const text = removedInstanceText({ name: P, how: "uninstalled", seq: at.get("uninstall1")?.seq ?? 0, at: at.get("uninstall1")?.time ?? "" });
    expect(await eventSentence(store, at.get("a") as KnownEvent)).toMatch(new RegExp(` — ${text.replace(/[()]/g, "\\$&")}$`));
    const record: DeliveryRecord = { batchId: "b1", plugin: P, kind: "import", digest: "sha256:00", recordedAt: at.get("a")?.time ?? "", counts: { transactions: 0, postings: 0, balanceAssertions: 0, problems: 0, prices: 0, fxRates: 1, indexReadings: 0 } };
    const later: DeliveryRecord = { ...record, batchId: "b2", plugin: "other", recordedAt: "2026-12-03T00:00:00Z" };
    const marked = await markRemovedDeliveries(store, [record, later]);
    expect(marked.map((m) => m.removed?.text ?? null)).toEqual([text, null]);
  });
});
