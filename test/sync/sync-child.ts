/**
 * A process that runs one tick of the sync scheduler over a data folder, with a connector that
 * delivers two FX rates for whatever batch it is asked for. Run with
 * OPENFIEF_TEST_KILL_AFTER_DELIVERY=1 it kills itself (SIGKILL) right after storing the delivery,
 * before `sync.delivered` is appended. Prints each call as a JSON line.
 */
import { join } from "node:path";
import { dataDirDeliveries } from "../../src/app/deliveries.js";
import { SyncScheduler } from "../../src/app/sync.js";
import { openStore } from "../../src/events/index.js";
import { DEFAULT_SYNC_SCHEDULE } from "../../src/plugins/index.js";

const dir = process.argv[2] ?? "";
const store = await openStore({ file: join(dir, "log.db") });
const scheduler = new SyncScheduler({
  store, deliveries: dataDirDeliveries(dir), clock: () => new Date("2026-12-02T10:00:00.000Z"),
  connectors: () => Promise.resolve([{ name: "bank", schedule: DEFAULT_SYNC_SCHEDULE }]),
  sync: (name, req) => {
    process.stdout.write(`${JSON.stringify({ name, ...req })}\n`);
    return Promise.resolve({
      ok: true,
      delivery: {
        batchId: req.batchId, watermark: `w-${process.pid}`,
        transactions: [{ sourceId: "t-1", date: "2026-12-01", postings: [{ accountId: "a", amount: "-1.00", currency: "EUR" }] }],
        fxRates: [{ date: "2026-12-01", baseCurrency: "EUR", quoteCurrency: "USD", rate: "1.0512" }, { date: "2026-12-01", baseCurrency: "EUR", quoteCurrency: "PLN", rate: "4.2731" }],
      },
    });
  },
  newBatchId: () => `b-${process.pid}`,
});
await scheduler.tick();
await store.close();
