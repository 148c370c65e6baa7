/**
 * The deliveries table beside the log (docs/adr/0199), as part of the event log's contract
 * (event-log-contract.ts runs it for every store): a batch recorded once stands, the delivery's
 * text is kept once per digest, and listings are newest first, of one plugin when named.
 */
import { describe, expect, it } from "vitest";
import type { TestContext } from "vitest";
import type { EventLog } from "../../src/events/port.js";
import type { DeliveryRow, DeliveryTable, LogTables } from "../../src/events/tables.js";

type Open = (opts?: { clock?: () => Date }) => Promise<EventLog>;

function tableOf(log: EventLog, ctx: TestContext): DeliveryTable {
  const tables = log.tables as LogTables | undefined;
  if (tables === undefined) ctx.skip("this log keeps no tables beside it");
  return tables.deliveries;
}

const digest = (c: string): string => `sha256:${c.repeat(64)}`;
const row = (batchId: string, plugin: string, at: string, d = digest("a"), kind = "sync"): DeliveryRow => ({
  batchId, plugin, kind, digest: d, recordedAt: at, counts: JSON.stringify({ transactions: 1, postings: 2, balanceAssertions: 0, problems: 0, prices: 0, fxRates: 0, indexReadings: 0 }),
});

/** The deliveries part of the contract. */
export function describeDeliveryTable(open: Open): void {
  describe("the deliveries table", () => {
    it("records a batch once: a second record of the batch writes nothing and returns the first row", async (ctx) => {
      const log = await open();
      const t = tableOf(log, ctx);
      const first = row("b-1", "ecb-fx", "2026-12-02T10:00:00.000Z");
      expect(await t.record(first, '{"batchId":"b-1"}')).toEqual({ row: first, fresh: true });
      const again = await t.record(row("b-1", "ecb-fx", "2026-12-02T11:00:00.000Z", digest("b")), '{"batchId":"b-1","x":1}');
      expect(again).toEqual({ row: first, fresh: false });
      expect(await t.get("b-1")).toEqual({ row: first, body: '{"batchId":"b-1"}' });
      expect(await t.get("b-2")).toBeNull();
      // Deliveries are no events: the log did not grow.
      expect(await log.head()).toBe(0);
    });

    it("keeps one text per digest, shared by the batches that delivered it", async (ctx) => {
      const log = await open();
      const t = tableOf(log, ctx);
      await t.record(row("b-1", "ecb-fx", "2026-12-02T10:00:00.000Z", digest("c")), "same");
      await t.record(row("b-2", "ecb-fx", "2026-12-02T10:01:00.000Z", digest("c")), "same");
      expect((await t.get("b-2"))?.body).toBe("same");
    });

    it("lists the newest first, of one plugin when named, at most `limit`", async (ctx) => {
      const log = await open();
      const t = tableOf(log, ctx);
      await t.record(row("b-1", "ecb-fx", "2026-12-02T10:00:00.000Z"), "x");
      await t.record(row("b-2", "nbp-fx", "2026-12-02T10:01:00.000Z"), "x");
      await t.record(row("b-3", "ecb-fx", "2026-12-02T10:02:00.000Z", digest("a"), "import"), "x");
      expect((await t.list(null, 10)).map((r) => r.batchId)).toEqual(["b-3", "b-2", "b-1"]);
      expect((await t.list("ecb-fx", 10)).map((r) => [r.batchId, r.kind])).toEqual([["b-3", "import"], ["b-1", "sync"]]);
      expect((await t.list(null, 1)).map((r) => r.batchId)).toEqual(["b-3"]);
    });

    it("refuses a row whose digest is not sha256:<hex>", async (ctx) => {
      const log = await open();
      const t = tableOf(log, ctx);
      await expect(t.record(row("b-1", "ecb-fx", "2026-12-02T10:00:00.000Z", "md5:00"), "x")).rejects.toThrow();
      expect(await t.get("b-1")).toBeNull();
    });
  });
}
