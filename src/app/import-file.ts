/**
 * `openfief import PLUGIN FILE` (docs/adr/0180): a statement file through a running connector's
 * `ImportFile`, as one batch the core generates. The file's size is checked before it is read
 * (the core's limit for one import; the connector refuses what is over its own), the connector's
 * answer is checked against the contract like a sync's, and the delivery is stored by digest
 * with each transaction's source prefixed with the instance's name. `--preview` maps the file
 * and stores nothing (the contract's PREVIEW mode).
 */
import { randomUUID } from "node:crypto";
import { open, stat } from "node:fs/promises";
import { basename } from "node:path";
import type { EventLog } from "../events/index.js";
import { pluginStream } from "../events/index.js";
import type { JsonValue } from "../plugins/index.js";
import { checkDelivery, deliveryOfResponse } from "./deliveries.js";
import type { DeliveryRecord, DeliveryStore } from "./deliveries.js";
import { AppError } from "./errors.js";
import type { PluginCaller } from "./plugin-caller.js";

/** The largest file one import carries (the host's ImportFile limit). */
export const MAX_IMPORT_FILE_BYTES = 8 * 1024 * 1024;

/** What an import did. */
export type ImportOutcome =
  | { readonly ok: true; readonly batchId: string; readonly preview: false; readonly record: DeliveryRecord }
  | { readonly ok: true; readonly batchId: string; readonly preview: true; readonly delivery: JsonValue }
  | { readonly ok: false; readonly batchId: string; readonly code: string; readonly message: string };

/** Options of {@link importFile}. */
export interface ImportFileOptions {
  readonly plugin: string;
  readonly file: string;
  readonly mediaType?: string;
  readonly preview?: boolean;
  readonly clock?: () => Date;
  /** Who imports (`owner:cli`). */
  readonly actor: string;
  /** The batch ID (default: `import-` and a random UUID). */
  readonly batchId?: string;
}

/** Reads a file of at most `max` bytes, refusing a larger one before reading it. */
async function readCapped(path: string, max: number): Promise<Buffer> {
  let size: number;
  try {
    const s = await stat(path);
    if (!s.isFile()) throw new AppError("usage", `${basename(path)} is not a file`);
    size = s.size;
  } catch (err) {
    if (err instanceof AppError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new AppError("usage", `cannot read ${path}: ${code === "ENOENT" || code === "ENOTDIR" ? "no such file or folder" : code === "EACCES" ? "permission denied" : "unreadable"}`);
  }
  if (size > max) throw new AppError("too_large", `${basename(path)} is ${size} bytes, over the ${max}-byte limit of one import`);
  const f = await open(path, "r");
  try {
    const buf = Buffer.alloc(max + 1);
    let n = 0;
    for (;;) {
      const { bytesRead } = await f.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n > max) throw new AppError("too_large", `${basename(path)} grew over the ${max}-byte limit of one import`);
    }
    return buf.subarray(0, n);
  } finally {
    await f.close();
  }
}

/** Imports a file through a running WebAssembly connector; a failed call is an outcome, recorded by the host. */
export async function importFile(hosted: PluginCaller, deliveries: DeliveryStore, store: EventLog, o: ImportFileOptions): Promise<ImportOutcome> {
  const content = await readCapped(o.file, MAX_IMPORT_FILE_BYTES);
  const batchId = o.batchId ?? `import-${randomUUID()}`;
  const header = {
    batchId, mode: o.preview === true ? "INGEST_MODE_PREVIEW" : "INGEST_MODE_COMMIT", fileName: basename(o.file).slice(0, 255),
    ...(o.mediaType === undefined ? {} : { mediaType: o.mediaType }),
  };
  const r = await hosted.call(o.plugin, "import_file", { header, contentBase64: content.toString("base64") });
  if (!r.ok) return { ok: false, batchId, code: r.error.code, message: r.error.message };
  const checked = checkDelivery(o.plugin, batchId, deliveryOfResponse(r.result));
  if (!checked.ok) return { ok: false, batchId, code: checked.problem.code, message: checked.problem.message };
  if (o.preview === true) return { ok: true, batchId, preview: true, delivery: checked.value.delivery };
  const { record } = await deliveries.record({ batchId, plugin: o.plugin, kind: "import" }, checked.value, (o.clock ?? (() => new Date()))());
  await store.append([{
    stream: pluginStream(o.plugin), type: "import.delivered", actor: o.actor,
    data: { name: o.plugin, batchId, fileName: header.fileName, size: content.length, digest: record.digest, counts: record.counts },
  }]);
  return { ok: true, batchId, preview: false, record };
}
