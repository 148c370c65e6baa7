/**
 * A connector's syncs on its page: its schedule, its next sync (or retry, with the failure that
 * caused it), and its latest deliveries with their counts and digests (docs/adr/0179, 0180).
 * Nothing of a delivery's contents is shown: `openfief deliveries get BATCH` prints one.
 */
import { connectorDeliveries, deliveriesOf, markRemovedDeliveries } from "../../app/index.js";
import type { ConnectorSyncState, DeliveryRecord, FaceContext, MarkedDelivery, RemovedInstance } from "../../app/index.js";
import { hash, when } from "./format.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";

function countsText(r: DeliveryRecord): string {
  const c = r.counts;
  const parts = [[c.transactions, "transaction"], [c.fxRates, "FX rate"], [c.prices, "price"], [c.balanceAssertions, "balance"], [c.indexReadings, "index reading"], [c.problems, "problem"]] as const;
  const said = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}${n === 1 ? "" : "s"}`);
  return said.length === 0 ? "nothing new" : said.join(", ");
}

/** When the next sync is: due now, a time, or a retry with the failure that caused it. */
function nextText(sync: ConnectorSyncState | null, now: Date, removed: RemovedInstance | null): Markup {
  if (sync === null && removed !== null) return html`<span class="muted">never: ${removed.name} is a removed instance</span>`;
  if (sync === null) return html`<span class="muted">not scheduled: it does not run now</span>`;
  if (sync.nextAt === null) return html`<span class="muted">never again (its schedule has no next time)</span>`;
  const at = Date.parse(sync.nextAt) <= now.getTime() ? html`due now` : when(sync.nextAt, now);
  if (!sync.retrying) return at;
  return html`<span class="badge warn">retry</span> ${at}${sync.lastFailed === null ? "" : html` <span class="small muted">after attempt ${sync.lastFailed.attempt} failed with ${sync.lastFailed.code}</span>`}`;
}

/** A batch, marked when its instance was removed since: "from removed instance X (removed at …)". */
function batchCell(r: MarkedDelivery): Markup {
  return r.removed === null ? html`<code>${r.batchId}</code>` : html`<code>${r.batchId}</code><div class="small removed-from"><span aria-hidden="true">✕ </span>${r.removed.text}</div>`;
}

/** The card, for a running connector or one with deliveries kept; nothing for any other plugin. */
export async function deliveriesCard(app: FaceContext, name: string, now: Date, removed: RemovedInstance | null = null): Promise<Markup> {
  const { sync, recent: kept } = await connectorDeliveries(app.store, deliveriesOf(app.store, app.dataDir), name, now);
  if (sync === null && kept.length === 0) return html``;
  const recent = await markRemovedDeliveries(app.store, kept);
  const schedule = sync === null ? null : sync.schedule.every === undefined ? `cron ${sync.schedule.cron ?? ""} (UTC)` : `every ${sync.schedule.every}`;
  const next = nextText(sync, now, removed);
  return html`<section class="card" id="deliveries" aria-labelledby="deliveries-h"><h2 id="deliveries-h">Syncs and deliveries</h2>
<dl class="facts">
${schedule === null ? "" : html`<dt>Schedule</dt><dd>${schedule}, jitter ${sync?.schedule.jitter ?? "0s"}</dd>`}
<dt>Next sync</dt><dd>${next}</dd>
</dl>
${recent.length === 0 ? html`<p class="muted">No delivery kept yet.</p>` : html`<div class="table-wrap"><table class="cards"><thead><tr><th>Batch</th><th>Kind</th><th>Kept</th><th>Contents</th><th>Digest</th></tr></thead><tbody>${recent.map((r) => html`<tr><td data-label="Batch">${batchCell(r)}</td><td data-label="Kind">${r.kind}</td><td data-label="Kept">${when(r.recordedAt, now)}</td><td data-label="Contents">${countsText(r)}</td><td data-label="Digest">${hash(r.digest)}</td></tr>`)}</tbody></table></div>`}
${recent.length === 0 ? "" : html`<p class="small muted">${recent.length === 1 ? `The latest delivery of ${name}` : `The latest ${recent.length} deliveries of ${name}, newest first`}; each in full with <code>openfief deliveries get BATCH</code>.</p>`}
</section>`;
}
