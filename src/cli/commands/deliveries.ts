/**
 * `openfief deliveries [PLUGIN]`: the deliveries kept (in the data folder, or beside a PostgreSQL log), newest first, with each
 * connector's next sync; `openfief deliveries get BATCH`: one delivery as JSON.
 * `openfief import PLUGIN FILE`: a statement file through a running connector's `ImportFile`, as
 * one batch (docs/adr/0180); `--preview` prints the mapped delivery and keeps nothing.
 */
import type { Command } from "commander";
import {
  AppError, BATCH_ID, connectorSyncs, deliveriesOf, importFile, markRemovedDeliveries, markRemovedDelivery, OWNER_CLI,
} from "../../app/index.js";
import type { ConnectorSyncState, DeliveryRecord, MarkedDelivery } from "../../app/index.js";
import { dataDir, pluginArg, print, printJson, table, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";
import { withHostedPlugins } from "../hosted.js";

const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,64}$/;

function countsCell(r: DeliveryRecord): string {
  const c = r.counts;
  const parts = [
    [c.transactions, "transaction"], [c.fxRates, "FX rate"], [c.prices, "price"], [c.balanceAssertions, "balance"], [c.indexReadings, "index reading"], [c.problems, "problem"],
  ] as const;
  const said = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}${n === 1 ? "" : "s"}`);
  return said.length === 0 ? "nothing new" : said.join(", ");
}

/** The plugin a delivery came from, marked when that instance was removed since (the line under the table says when). */
function pluginCell(r: MarkedDelivery): string {
  return r.removed === null ? r.plugin : `${r.plugin} (removed)`;
}

/** A connector's schedule and its next sync (or retry, with the failure that caused it), in one line. */
function syncLine(s: ConnectorSyncState): string {
  const every = s.schedule.every === undefined ? `cron "${s.schedule.cron ?? ""}" (UTC)` : `every ${s.schedule.every}`;
  const next = s.nextAt === null ? "never again" : `${s.retrying ? "retry" : "next sync"} at ${s.nextAt}`;
  return `${s.name}: ${every}, jitter ${s.schedule.jitter}; ${next}${s.lastFailed !== null && s.retrying ? ` (attempt ${s.lastFailed.attempt} failed: ${s.lastFailed.code})` : ""}`;
}

function batchArg(batch: string): string {
  if (!BATCH_ID.test(batch)) throw new AppError("usage", `invalid batch ID ${JSON.stringify(batch.slice(0, 64))}: letters, digits, ".", "_" and "-", at most 128`);
  return batch;
}

export function register(program: Command): void {
  withJson(withData(program.command("deliveries")))
    .description("list the deliveries kept (newest first; those of a removed instance marked) and each connector's next sync; `deliveries get BATCH` prints one as JSON")
    .argument("[plugin]", "only this plugin's deliveries; or `get`")
    .argument("[batch]", "with `get`: the batch to print")
    .action(async (first: string | undefined, batch: string | undefined, o: DataOptions) => {
      const dir = dataDir(o);
      if (first === "get" && batch !== undefined) {
        const wanted = batchArg(batch);
        const d = await withLog(o, (store) => deliveriesOf(store, dir).get(wanted));
        if (d === null) throw new AppError("not_found", `no delivery of batch ${batch}`);
        return printJson(await withLog(o, (store) => markRemovedDelivery(store, d)));
      }
      if (batch !== undefined) throw new AppError("usage", "too many arguments: deliveries [PLUGIN], or deliveries get BATCH");
      const plugin = first === undefined ? undefined : pluginArg(first);
      const { records, syncs } = await withLog(o, async (store) => ({
        records: await markRemovedDeliveries(store, await deliveriesOf(store, dir).list(plugin)),
        syncs: (await connectorSyncs(store)).filter((s) => plugin === undefined || s.name === plugin),
      }));
      if (o.json === true) return printJson({ deliveries: records, connectors: syncs });
      print(records.length === 0 ? "no deliveries" : table(
        ["BATCH", "PLUGIN", "KIND", "RECORDED", "CONTENTS", "DIGEST"],
        records.map((r) => [r.batchId, pluginCell(r), r.kind, r.recordedAt, countsCell(r), r.digest.slice(0, 19)]),
      ));
      for (const text of new Set(records.flatMap((r) => (r.removed === null ? [] : [`${pluginCell(r)}: ${r.removed.text}`])))) print(text);
      for (const s of syncs) print(syncLine(s));
    });

  withJson(withData(program.command("import")))
    .description("import a statement file through a running connector's ImportFile, as one batch, and keep its delivery")
    .argument("<plugin>", "the connector's name")
    .argument("<file>", "the statement file")
    .option("--media-type <type>", "the file's media type, such as text/csv or application/xml")
    .option("--preview", "print the mapped delivery and keep nothing")
    .action(async (name: string, file: string, o: DataOptions & { mediaType?: string; preview?: boolean }) => {
      pluginArg(name);
      if (o.mediaType !== undefined && !MEDIA_TYPE.test(o.mediaType)) throw new AppError("usage", `invalid --media-type ${JSON.stringify(o.mediaType.slice(0, 64))}: type/subtype`);
      await withHostedPlugins(o, async (hosted, rt, dir) => {
        const r = await importFile(hosted, deliveriesOf(rt.store, dir), rt.store, {
          plugin: name, file, actor: OWNER_CLI, preview: o.preview === true, ...(o.mediaType === undefined ? {} : { mediaType: o.mediaType }),
        });
        if (o.json === true) printJson(r);
        else if (!r.ok) print(`${name} import: ${r.code}: ${r.message}`);
        else if (r.preview) print(JSON.stringify(r.delivery, null, 2));
        else print(`imported ${file} through ${name} as batch ${r.batchId}: ${countsCell(r.record)} (openfief deliveries get ${r.batchId})`);
        if (!r.ok) process.exitCode = 1;
      });
    });
}
