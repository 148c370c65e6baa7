/**
 * Deliveries kept (docs/adr/0179): what a connector answered for a batch, checked against the
 * connector contract, each transaction's source prefixed with the instance's name (so one instance
 * never writes over another's transactions), and stored content-addressed behind a small port.
 * The first delivery recorded for a batch stands: recording the batch again (a retry after a crash
 * between storing and the log's `sync.delivered`) returns it unchanged, so nothing is counted twice.
 *
 * The data folder's adapter keeps `deliveries/objects/<sha256 hex>.json` (the delivery, canonical
 * protobuf-JSON) and `deliveries/batches/<batch>.json` (which plugin, when, the digest, counts);
 * a batch file is linked into place only once complete, and never replaced.
 */
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { link, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { fromJson, toJson } from "@bufbuild/protobuf";
import { DeliverySchema } from "../gen/openfief/connector/v1/connector_pb.js";
import type { DeliveryCounts } from "../events/index.js";
import type { JsonValue } from "../plugins/index.js";

/** A batch ID: what the core generates, and what a file name may safely be. */
export const BATCH_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** How a delivery came: a scheduled sync or an imported file. */
export type DeliveryKind = "sync" | "import";

/** A delivery checked against the contract and ready to store. */
export interface CheckedDelivery {
  /** The delivery as canonical protobuf-JSON, sources prefixed. */
  readonly delivery: JsonValue;
  readonly counts: DeliveryCounts;
  readonly watermark: string;
}

/** What the store knows of a recorded batch (without the delivery's contents). */
export interface DeliveryRecord {
  readonly batchId: string;
  readonly plugin: string;
  readonly kind: DeliveryKind;
  /** `sha256:<hex>` of the stored delivery. */
  readonly digest: string;
  readonly recordedAt: string;
  readonly counts: DeliveryCounts;
}

/** A recorded batch with its delivery. */
export interface StoredDelivery extends DeliveryRecord {
  readonly delivery: JsonValue;
  readonly watermark: string;
}

/** The deliveries store: the data folder's, or (in a cluster) the log's database. */
export interface DeliveryStore {
  /** Stores a batch's delivery; `fresh: false` when the batch was recorded before (that record stands). */
  record(batch: { readonly batchId: string; readonly plugin: string; readonly kind: DeliveryKind }, checked: CheckedDelivery, at: Date): Promise<{ readonly record: DeliveryRecord; readonly fresh: boolean }>;
  /** A recorded batch with its delivery, or null. */
  get(batchId: string): Promise<StoredDelivery | null>;
  /** The recorded batches, newest first; of one plugin when named. */
  list(plugin?: string, limit?: number): Promise<DeliveryRecord[]>;
}

/** Why a connector's answer is not a delivery of the batch. */
export interface DeliveryProblem {
  readonly code: "invalid_delivery";
  readonly message: string;
}

/**
 * Checks a connector's answer: a `Delivery` of the contract (no unknown field, every field its
 * type), echoing `batchId`; each transaction's `sourceId` becomes `<instance>/<sourceId>`.
 */
export function checkDelivery(instance: string, batchId: string, answer: unknown): { ok: true; value: CheckedDelivery } | { ok: false; problem: DeliveryProblem } {
  let message;
  try {
    message = fromJson(DeliverySchema, answer as never);
  } catch (err) {
    return { ok: false, problem: { code: "invalid_delivery", message: `not a Delivery: ${(err instanceof Error ? err.message : String(err)).slice(0, 200)}` } };
  }
  if (message.batchId !== batchId) {
    return { ok: false, problem: { code: "invalid_delivery", message: `the delivery names batch ${JSON.stringify(message.batchId.slice(0, 130))}, not ${batchId}` } };
  }
  for (const t of message.transactions) t.sourceId = `${instance}/${t.sourceId}`;
  const counts: DeliveryCounts = {
    transactions: message.transactions.length,
    postings: message.transactions.reduce((n, t) => n + t.postings.length, 0),
    balanceAssertions: message.balanceAssertions.length,
    problems: message.problems.length,
    prices: message.prices.length,
    fxRates: message.fxRates.length,
    indexReadings: message.indexReadings.length,
  };
  return { ok: true, value: { delivery: toJson(DeliverySchema, message) as JsonValue, counts, watermark: message.watermark } };
}

/**
 * The Delivery inside a `SyncResponse` or `ImportFileResponse` (`{delivery: {...}}`), as a
 * connector answers; what is not such a response is returned as it is (and fails the check).
 */
export function deliveryOfResponse(result: unknown): unknown {
  if (typeof result !== "object" || result === null || Array.isArray(result)) return result;
  const keys = Object.keys(result);
  return keys.length === 1 && keys[0] === "delivery" ? (result as { delivery: unknown }).delivery : result;
}

/** `sha256:<hex>` of a delivery's canonical text. */
export function digestOf(text: string): string {
  return `sha256:${createHash("sha256").update(text).digest("hex")}`;
}

async function writeSynced(path: string, text: string): Promise<void> {
  const f = await open(path, "w", 0o600);
  try {
    await f.writeFile(text);
    await f.sync();
  } finally {
    await f.close();
  }
}

async function syncDir(dir: string): Promise<void> {
  const d = await open(dir, "r");
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as unknown;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/** The deliveries store in a data folder (`<data>/deliveries`). */
export function dataDirDeliveries(dataDir: string): DeliveryStore {
  const root = join(dataDir, "deliveries");
  const objects = join(root, "objects");
  const batches = join(root, "batches");
  const ready = (): void => {
    mkdirSync(objects, { recursive: true, mode: 0o700 });
    mkdirSync(batches, { recursive: true, mode: 0o700 });
  };
  const objectPath = (digest: string): string => join(objects, `${digest.slice("sha256:".length)}.json`);
  const readRecord = async (batchId: string): Promise<DeliveryRecord | null> => {
    if (!BATCH_ID.test(batchId)) return null;
    return (await readJson(join(batches, `${batchId}.json`))) as DeliveryRecord | null;
  };

  return {
    async record(batch, checked, at) {
      if (!BATCH_ID.test(batch.batchId)) throw new Error(`invalid batch ID ${JSON.stringify(batch.batchId.slice(0, 130))}`);
      ready();
      const before = await readRecord(batch.batchId);
      if (before !== null) return { record: before, fresh: false };
      const text = JSON.stringify(checked.delivery);
      const digest = digestOf(text);
      const tmp = join(root, `.tmp-${process.pid}-${batch.batchId}`);
      await writeSynced(tmp, text);
      await rename(tmp, objectPath(digest));
      const record: DeliveryRecord = { batchId: batch.batchId, plugin: batch.plugin, kind: batch.kind, digest, recordedAt: at.toISOString(), counts: checked.counts };
      await writeSynced(tmp, `${JSON.stringify(record)}\n`);
      try {
        // link, not rename: a batch already in place is never replaced.
        await link(tmp, join(batches, `${batch.batchId}.json`));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        const won = await readRecord(batch.batchId);
        if (won !== null) return { record: won, fresh: false };
        throw err;
      } finally {
        await rm(tmp, { force: true });
      }
      await syncDir(batches);
      return { record, fresh: true };
    },
    async get(batchId) {
      const record = await readRecord(batchId);
      if (record === null) return null;
      const text = await readFile(objectPath(record.digest), "utf8");
      if (digestOf(text) !== record.digest) throw new Error(`the delivery of batch ${batchId} does not match its digest`);
      const delivery = JSON.parse(text) as JsonValue;
      const watermark = typeof delivery === "object" && delivery !== null && !Array.isArray(delivery) && typeof delivery["watermark"] === "string" ? delivery["watermark"] : "";
      return { ...record, delivery, watermark };
    },
    async list(plugin, limit = 100) {
      let names: string[];
      try {
        names = await readdir(batches);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
        throw err;
      }
      const records: DeliveryRecord[] = [];
      for (const n of names) {
        if (!n.endsWith(".json")) continue;
        const r = await readRecord(n.slice(0, -".json".length));
        if (r !== null && (plugin === undefined || r.plugin === plugin)) records.push(r);
      }
      records.sort((a, b) => (a.recordedAt < b.recordedAt ? 1 : a.recordedAt > b.recordedAt ? -1 : a.batchId < b.batchId ? 1 : -1));
      return records.slice(0, limit);
    },
  };
}
