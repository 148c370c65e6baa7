/**
 * Egress: what each plugin's traffic through the egress proxy was allowed, refused by policy, or
 * failed to reach, over a window of time — a chart of the counts, each plugin's destinations with
 * their counts and last reason, and the latest decisions. htmx refreshes it; the filter is a plain
 * form.
 */
import { AppError, currentRemoval, EGRESS_OUTCOMES, egressReasonText, egressSummary, hostPort, listPlugins, removalAfter } from "../../app/index.js";
import type { EgressDestination, EgressOutcome, EgressPluginSummary, RemovedInstance } from "../../app/index.js";
import type { RequestContext } from "../routes.js";
import { egressChart } from "./chart.js";
import { absoluteTime, ago, outcomeBadge } from "./format.js";
import { html, trusted } from "./html.js";
import type { Markup } from "./html.js";
import { page } from "./layout.js";

/** The windows the page offers. */
const WINDOWS: Readonly<Record<string, { label: string; ms: number; buckets: number }>> = {
  "1h": { label: "the last hour", ms: 3_600_000, buckets: 30 },
  "24h": { label: "the last 24 hours", ms: 86_400_000, buckets: 24 },
  "7d": { label: "the last 7 days", ms: 7 * 86_400_000, buckets: 28 },
  "30d": { label: "the last 30 days", ms: 30 * 86_400_000, buckets: 30 },
};

/** "3 allowed, 1 refused, 2 failed": the outcomes that happened, in the faces' order. */
function counted(c: Readonly<Record<EgressOutcome, number>>): string {
  const parts = EGRESS_OUTCOMES.filter((o) => c[o] > 0).map((o) => `${c[o]} ${o}`);
  return parts.length === 0 ? "none" : parts.join(", ");
}

/** The last decision about a destination, in the words the log uses ("failed to reach: no such host"). */
function lastDecision(d: EgressDestination): string {
  const reason = egressReasonText(d.last.reason);
  if (d.last.outcome === "allowed") return `allowed: ${reason}`;
  return d.last.outcome === "refused" ? `refused by policy: ${reason}` : `failed to reach: ${reason}`;
}

function destinationRow(d: EgressDestination, now: Date): Markup {
  const dest = hostPort(d.host, d.port);
  const badges = EGRESS_OUTCOMES.filter((o) => d[o] > 0).map((o) => outcomeBadge(o));
  return html`<tr><td data-label="Destination"><code>${dest}</code></td><td class="badges" data-label="Outcome">${badges}</td><td class="small" data-label="Decisions">${counted(d)}</td><td class="small" data-label="Last decision">${lastDecision(d)}<br><span class="muted">event ${d.last.seq}, ${ago(d.last.time, now)}</span></td></tr>`;
}

/** What a removed instance did, marked in the words every face uses. */
function removedMark(r: RemovedInstance | null | undefined): Markup {
  return r === null || r === undefined ? html`` : html`<div class="small removed-from"><span aria-hidden="true">✕ </span>${r.text}</div>`;
}

function pluginCard(p: EgressPluginSummary, now: Date, removed: RemovedInstance | null): Markup {
  return html`<section class="card"><h2><a href="/plugins/${p.plugin}">${p.plugin}</a> <span class="muted small">${counted(p)}</span></h2>${removed === null ? "" : html`<p class="small removed-from"><span aria-hidden="true">✕ </span>${p.plugin} is a removed instance: these are ${removed.text}.</p>`}
<div class="table-wrap"><table class="cards"><thead><tr><th>Destination</th><th>Outcome</th><th>Decisions</th><th>Last decision</th></tr></thead><tbody>${p.destinations.map((d) => destinationRow(d, now))}</tbody></table></div></section>`;
}

function option(value: string, label: string, selected: boolean): Markup {
  return html`<option value="${value}"${selected ? trusted(" selected") : ""}>${label}</option>`;
}

/** `GET /egress`. */
export async function egressPage(ctx: RequestContext): Promise<string> {
  const { app, query, session } = ctx;
  const now = app.clock();
  const key = query.get("window") ?? "24h";
  const w = WINDOWS[key];
  if (w === undefined) throw new AppError("usage", `window must be one of ${Object.keys(WINDOWS).join(", ")}`, "window");
  const plugin = query.get("plugin");
  const s = await egressSummary(app.store, { since: new Date(now.getTime() - w.ms), until: now, buckets: w.buckets, ...(plugin === undefined ? {} : { plugin }) });
  const names = (await listPlugins(app.store)).map((r) => r.name);
  // A removed instance's decisions stay, marked (docs/adr/0195).
  const removedNow = new Map<string, RemovedInstance | null>();
  for (const p of s.plugins) removedNow.set(p.plugin, await currentRemoval(app.store, p.plugin));
  const removedRows = new Map<number, RemovedInstance | null>();
  for (const r of s.recent) removedRows.set(r.seq, await removalAfter(app.store, r.plugin, { seq: r.seq }));
  const self = new URLSearchParams({ window: key, ...(plugin === undefined ? {} : { plugin }) });
  const body = html`<div class="page-head"><h1>Egress</h1><p>What the egress proxy allowed, refused by policy, or failed to reach, ${w.label}${plugin === undefined ? "" : ` for ${plugin}`}.</p></div>
<form class="filters card" method="get" action="/egress">
<label>Plugin<select name="plugin">${option("", "every plugin", plugin === undefined)}${names.map((n) => option(n, n, n === plugin))}</select></label>
<label>Window<select name="window">${Object.entries(WINDOWS).map(([k, v]) => option(k, v.label, k === key))}</select></label>
<button type="submit">Show</button>
</form>
<div id="live" hx-get="/egress?${self.toString()}" hx-trigger="every 5s" hx-select="#live" hx-swap="outerHTML">
<section class="card"><h2>Decisions over time</h2>
<div class="legend"><span><span class="swatch allowed"></span>allowed (${s.allowed})</span><span title="not granted, or an address the proxy never dials"><span class="swatch refused"></span>refused by policy (${s.refused})</span><span title="granted, but the name did not resolve"><span class="swatch failed"></span>failed to reach (${s.failed})</span><span class="muted">${absoluteTime(s.since)} – ${absoluteTime(s.until)}</span></div>
${egressChart(s.buckets)}
${s.truncated ? html`<p class="small">Only the first ${s.allowed + s.refused + s.failed} decisions of the window are counted.</p>` : ""}
</section>
${s.plugins.length === 0 ? html`<section class="card"><p class="empty">No egress decisions ${w.label}. A plugin's connections through the proxy show here: allowed, refused by policy, or failed to reach.</p></section>` : html`<div class="stack">${s.plugins.map((p) => pluginCard(p, now, removedNow.get(p.plugin) ?? null))}</div>`}
${s.recent.length === 0 ? "" : html`<section class="card"><h2>Latest decisions</h2><div class="table-wrap"><table class="cards"><thead><tr><th class="num">Event</th><th>When</th><th>Plugin</th><th>Destination</th><th>Outcome</th><th>Reason</th></tr></thead><tbody>${s.recent.map((r) => html`<tr><td class="num" data-label="Event">${r.seq}</td><td class="nowrap" data-label="When">${ago(r.time, now)}</td><td data-label="Plugin">${r.plugin}${removedMark(removedRows.get(r.seq))}</td><td data-label="Destination"><code>${hostPort(r.host, r.port)}</code></td><td data-label="Outcome">${outcomeBadge(r.outcome)}</td><td class="small" data-label="Reason">${egressReasonText(r.reason)}${r.address === null ? "" : ` (dialled ${r.address})`}</td></tr>`)}</tbody></table></div></section>`}
</div>`;
  return page({ title: "Egress", section: "egress", session, body });
}
