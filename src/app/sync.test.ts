/**
 * The sync scheduler with a fake clock over a real SQLite log and a real deliveries folder: the
 * watermark is the recorded delivery's, retries reuse the batch ID, backoff is capped, a connector
 * that does not run is never called, and a crash between storing a delivery and recording it
 * retries the batch without counting anything twice.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventLog, KnownEvent } from "../events/index.js";
import { parseSyncSchedule } from "../plugins/index.js";
import type { SyncSchedule } from "../plugins/index.js";
import { checkDelivery, dataDirDeliveries } from "./deliveries.js";
import type { DeliveryStore } from "./deliveries.js";
import { planSync, statusOfCode, SyncScheduler, syncHistory } from "./sync.js";
import type { SyncAnswer, SyncConnector } from "./sync.js";

let dir: string;
let store: EventLog;
let deliveries: DeliveryStore;
let now: Date;
const clock = (): Date => now;
const advance = (ms: number): void => {
  now = new Date(now.getTime() + ms);
};

function schedule(value: unknown): SyncSchedule {
  const r = parseSyncSchedule(value, "spec.sync");
  if (!r.ok) throw new Error("bad schedule");
  return r.value;
}

/** A connector that delivers one rate per call and keeps the date it was asked at as its watermark. */
function rates(batchId: string, watermark: string, day: string) {
  return {
    batchId, institution: { id: "ecb", name: "European Central Bank" }, watermark: day,
    fxRates: [{ date: day, baseCurrency: "EUR", quoteCurrency: "USD", rate: "1.0512", source: `after ${watermark || "nothing"}` }],
    transactions: [{ sourceId: `t-${day}`, date: day, description: "fee", postings: [{ accountId: "a", amount: "-1.00", currency: "EUR" }] }],
  };
}

interface Fake {
  calls: { name: string; batchId: string; watermark: string }[];
  answers: ((req: { batchId: string; watermark: string }) => SyncAnswer)[];
}

function scheduler(connectors: SyncConnector[], fake: Fake, extra: { deliveries?: DeliveryStore; ids?: string[] } = {}): SyncScheduler {
  let n = 0;
  return new SyncScheduler({
    store, deliveries: extra.deliveries ?? deliveries, clock,
    connectors: () => Promise.resolve(connectors),
    sync: (name, req) => {
      fake.calls.push({ name, ...req });
      const answer = fake.answers.shift();
      return Promise.resolve(answer === undefined ? { ok: false, code: "no_answer", status: "internal" } : answer(req));
    },
    newBatchId: () => extra.ids?.[n++] ?? `batch-${++n}`,
    backoff: { baseMs: 1_000, capMs: 4_000, maxAttempts: 6 },
  });
}

async function syncEvents(name = "ecb-fx"): Promise<KnownEvent[]> {
  return (await store.read({ stream: `plugin/${name}` })).filter((e) => e.type.startsWith("sync."));
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-sync-"));
  store = await openStore({ file: join(dir, "log.db") });
  deliveries = dataDirDeliveries(dir);
  now = new Date("2026-12-02T10:00:00.000Z");
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const hourly: SyncConnector = { name: "ecb-fx", schedule: schedule({ every: "1h", jitter: "5m" }) };

describe("the sync scheduler", () => {
  it("syncs at once, then on the schedule with the recorded delivery's watermark, and records digest and counts only", async () => {
    const fake: Fake = { calls: [], answers: [(r) => ({ ok: true, delivery: rates(r.batchId, r.watermark, "2026-12-01") }), (r) => ({ ok: true, delivery: rates(r.batchId, r.watermark, "2026-12-02") })] };
    const s = scheduler([hourly], fake);
    const next = await s.tick();
    expect(fake.calls).toEqual([{ name: "ecb-fx", batchId: "batch-1", watermark: "" }]);
    // The next slot is an hour after the first, plus its jitter (at most five minutes).
    expect(next!.getTime() - now.getTime()).toBeGreaterThanOrEqual(3_600_000);
    expect(next!.getTime() - now.getTime()).toBeLessThanOrEqual(3_900_000);
    advance(next!.getTime() - now.getTime() - 1);
    expect(await s.tick()).toEqual(next);
    expect(fake.calls).toHaveLength(1);
    advance(1);
    await s.tick();
    expect(fake.calls[1]).toEqual({ name: "ecb-fx", batchId: "batch-2", watermark: "2026-12-01" });

    const events = await syncEvents();
    expect(events.map((e) => e.type)).toEqual(["sync.started", "sync.delivered", "sync.started", "sync.delivered"]);
    const delivered = events[1]!;
    expect(delivered.data).toEqual({
      name: "ecb-fx", batchId: "batch-1", attempt: 1, fresh: true, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      counts: { transactions: 1, postings: 1, balanceAssertions: 0, problems: 0, prices: 0, fxRates: 1, indexReadings: 0 },
    });
    expect(JSON.stringify(events)).not.toContain("1.0512");
    expect(delivered.causedBy).toBe(events[0]!.seq);
    // The delivery is kept, each transaction's source prefixed with the instance's name.
    const kept = await deliveries.get("batch-1");
    expect(kept?.digest).toBe((delivered.data as { digest: string }).digest);
    expect((kept?.delivery as { transactions: { sourceId: string }[] }).transactions[0]!.sourceId).toBe("ecb-fx/t-2026-12-01");
    expect((await deliveries.list("ecb-fx")).map((d) => d.batchId)).toEqual(["batch-2", "batch-1"]);
  });

  it("retries unavailable with the same batch ID and capped exponential backoff, and keeps the watermark until a delivery is recorded", async () => {
    const down: SyncAnswer = { ok: false, code: "http_failed", status: "unavailable" };
    const fake: Fake = { calls: [], answers: [() => down, () => down, () => down, () => down, (r) => ({ ok: true, delivery: rates(r.batchId, r.watermark, "2026-12-02") })] };
    const s = scheduler([hourly], fake);
    const waits: number[] = [];
    let next = await s.tick();
    while (fake.calls.length < 5) {
      waits.push(next!.getTime() - now.getTime());
      now = next!;
      next = await s.tick();
    }
    expect(waits).toEqual([1_000, 2_000, 4_000, 4_000]);
    expect(new Set(fake.calls.map((c) => c.batchId))).toEqual(new Set(["batch-1"]));
    expect(fake.calls.every((c) => c.watermark === "")).toBe(true);
    const events = await syncEvents();
    expect(events.filter((e) => e.type === "sync.failed").map((e) => e.data)).toEqual([1, 2, 3, 4].map((attempt) => ({
      name: "ecb-fx", batchId: "batch-1", attempt, code: "http_failed", status: "unavailable", retryAt: expect.any(String),
    })));
    expect(events.at(-1)).toMatchObject({ type: "sync.delivered", data: { batchId: "batch-1", attempt: 5 } });
  });

  it("gives a batch up after its last attempt, and on any failure but unavailable; the next slot starts a new batch with the same watermark", async () => {
    const fake: Fake = {
      calls: [],
      answers: [
        (r) => ({ ok: true, delivery: rates(r.batchId, r.watermark, "2026-12-01") }),
        () => ({ ok: false, code: "invalid_argument", status: "invalid_argument" }),
        (r) => ({ ok: true, delivery: { ...rates(r.batchId, r.watermark, "2026-12-03"), batchId: "someone-else" } }),
        (r) => ({ ok: true, delivery: rates(r.batchId, r.watermark, "2026-12-04") }),
      ],
    };
    const s = scheduler([hourly], fake);
    let next = await s.tick();
    for (let i = 0; i < 3; i++) {
      now = next!;
      next = await s.tick();
    }
    expect(fake.calls.map((c) => [c.batchId, c.watermark])).toEqual([["batch-1", ""], ["batch-2", "2026-12-01"], ["batch-3", "2026-12-01"], ["batch-4", "2026-12-01"]]);
    const failed = (await syncEvents()).filter((e) => e.type === "sync.failed").map((e) => e.data);
    expect(failed).toEqual([
      { name: "ecb-fx", batchId: "batch-2", attempt: 1, code: "invalid_argument", status: "invalid_argument" },
      { name: "ecb-fx", batchId: "batch-3", attempt: 1, code: "invalid_delivery", status: "internal" },
    ]);
  });

  it("stops retrying after the last attempt", async () => {
    const fake: Fake = { calls: [], answers: Array.from({ length: 6 }, () => (): SyncAnswer => ({ ok: false, code: "unavailable", status: "unavailable" })) };
    const s = scheduler([hourly], fake);
    let next = await s.tick();
    while (next !== null && next.getTime() - now.getTime() < 3_000_000) {
      now = next;
      next = await s.tick();
    }
    expect(fake.calls).toHaveLength(6);
    const last = (await syncEvents()).at(-1);
    expect(last).toMatchObject({ type: "sync.failed", data: { attempt: 6, status: "unavailable" } });
    expect((last?.data as { retryAt?: string }).retryAt).toBeUndefined();
  });

  it("never calls a connector that does not run (held back, stopped or removed)", async () => {
    const fake: Fake = { calls: [], answers: [] };
    const s = scheduler([], fake);
    expect(await s.tick()).toBeNull();
    advance(86_400_000);
    expect(await s.tick()).toBeNull();
    expect(fake.calls).toEqual([]);
    expect(await syncEvents()).toEqual([]);
  });

  it("after a crash between storing a delivery and recording it, retries the batch with the same ID and counts nothing twice", async () => {
    const crashing: DeliveryStore = {
      ...deliveries,
      record: async (...args) => {
        await deliveries.record(...args);
        throw new Error("killed");
      },
    };
    const first: Fake = { calls: [], answers: [(r) => ({ ok: true, delivery: rates(r.batchId, r.watermark, "2026-12-01") })] };
    await scheduler([hourly], first, { deliveries: crashing, ids: ["b-first"] }).tick();
    expect((await syncEvents()).map((e) => e.type)).toEqual(["sync.started"]);

    // A new process: the batch is unfinished, so it is retried at once with the same ID; the connector may answer differently now.
    advance(5_000);
    const second: Fake = { calls: [], answers: [(r) => ({ ok: true, delivery: rates(r.batchId, r.watermark, "2026-12-02") })] };
    await scheduler([hourly], second, { ids: ["never-used"] }).tick();
    expect(second.calls).toEqual([{ name: "ecb-fx", batchId: "b-first", watermark: "" }]);
    const events = await syncEvents();
    expect(events.map((e) => [e.type, (e.data as { attempt: number }).attempt])).toEqual([["sync.started", 1], ["sync.started", 2], ["sync.delivered", 2]]);
    expect(events[2]!.data).toMatchObject({ batchId: "b-first", fresh: false });
    const list = await deliveries.list();
    expect(list).toHaveLength(1);
    expect(readdirSync(join(dir, "deliveries", "objects"))).toHaveLength(1);
    // The first stored delivery stands, and its watermark is the next sync's.
    expect((await deliveries.get("b-first"))?.watermark).toBe("2026-12-01");
  });

  it("spreads connectors by jitter, and one connector's failure never stops another's", async () => {
    const other: SyncConnector = { name: "nbp-fx", schedule: schedule({ every: "1h", jitter: "30m" }) };
    const fake: Fake = { calls: [], answers: [() => { throw new Error("boom"); }, (r) => ({ ok: true, delivery: rates(r.batchId, r.watermark, "2026-12-01") })] };
    const s = scheduler([hourly, other], fake);
    await s.tick();
    expect(fake.calls.map((c) => c.name)).toEqual(["ecb-fx", "nbp-fx"]);
    expect((await syncEvents("nbp-fx")).map((e) => e.type)).toEqual(["sync.started", "sync.delivered"]);
    // A call that never reached the connector is retried like an unavailable one.
    expect((await syncEvents("ecb-fx")).at(-1)?.data).toMatchObject({ code: "call_failed", status: "unavailable", retryAt: expect.any(String) });
  });
});

describe("planSync", () => {
  it("runs a schedule missed by more than one slot once, now", async () => {
    const fake: Fake = { calls: [], answers: [(r) => ({ ok: true, delivery: rates(r.batchId, r.watermark, "2026-12-01") })] };
    await scheduler([hourly], fake).tick();
    advance(5 * 3_600_000);
    const plan = planSync(await syncHistory(store, "ecb-fx"), hourly.schedule, "ecb-fx", now);
    expect(plan).toEqual({ kind: "new", at: now, slot: now });
  });
});

describe("checkDelivery and statusOfCode", () => {
  it("refuses what is not a Delivery of the contract", () => {
    expect(checkDelivery("x", "b", { batchId: "b", surprise: 1 }).ok).toBe(false);
    expect(checkDelivery("x", "b", { batchId: "b", fxRates: "many" }).ok).toBe(false);
    expect(checkDelivery("x", "b", { batchId: "c" }).ok).toBe(false);
    expect(checkDelivery("x", "b", { batchId: "b" })).toMatchObject({ ok: true, value: { watermark: "" } });
  });

  it.each([["http_failed", "unavailable"], ["plugin_not_installed", "unavailable"], ["plugin_timed_out", "deadline_exceeded"], ["invalid_argument", "invalid_argument"], ["unavailable", "unavailable"], ["bad_xml", "unknown"]])("%s is %s", (code, status) => {
    expect(statusOfCode(code)).toBe(status);
  });
});
