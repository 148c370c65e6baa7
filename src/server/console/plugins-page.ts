/**
 * The plugins page: one row per plugin — its state at a glance, what runs, what is asked for, who
 * signed it, what waits for approval, the last decision, a link to a view plugin's UI — and, above
 * the table, the plugins whose version cannot run whatever is approved (blockers first), then the
 * plugins waiting for the owner: only versions an approval would let run. The table refreshes
 * itself (htmx polls and swaps it).
 */
import { blockerSubject, blockerText, outcomeText, pluginsOverview, problemText, verdictHelp, verdictWord } from "../../app/index.js";
import type { PendingApproval, PluginRow } from "../../app/index.js";
import type { RequestContext } from "../routes.js";
import { absoluteTime, ago, image, statusBadge, verdictBadge } from "./format.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";
import { page } from "./layout.js";

function pendingCell(r: PluginRow, approval: PendingApproval | undefined): Markup {
  const first = r.blockers[0];
  // No nudge to approve what cannot run: the blocker instead.
  if (first !== undefined) return html`<a href="/plugins/${r.name}#blockers"><span class="badge bad">blocked</span></a> <span class="small">by its ${blockerSubject(first)}</span>`;
  return approval === undefined ? html`<span class="muted">nothing</span>` : html`<a href="/plugins/${r.name}#pending"><span class="badge pending">waiting</span></a> <span class="small">${approval.text}</span>`;
}

function row(r: PluginRow, approval: PendingApproval | undefined, decidedAt: string | undefined, now: Date, hasView: boolean): Markup {
  const pending = pendingCell(r, approval);
  const decided = r.decided === null ? html`<span class="muted">none yet</span>` : html`${outcomeText(r.decided.outcome)}<br><span class="small muted nowrap">event ${r.decided.seq}${decidedAt === undefined ? "" : html`, ${ago(decidedAt, now)}`}</span>`;
  const problems = r.problems.length === 0 ? "" : html`<div class="small"><span class="badge bad">problem</span> ${r.problems.map(problemText).join("; ")}</div>`;
  return html`<tr>
<td class="nowrap"><a href="/plugins/${r.name}"><strong>${r.name}</strong></a>${hasView ? html`<br><a class="small" href="/plugins/${r.name}#view">its view →</a>` : ""}${problems}</td>
<td>${statusBadge(r.status)}</td>
<td>${image(r.running)}${r.runtime === "wasm" ? html`<br><span class="small muted">WebAssembly</span>` : ""}</td>
<td>${r.deleted ? html`<span class="muted">(deleted)</span>` : r.asked !== null && r.asked === r.running ? html`<span class="muted">the version running</span>` : image(r.asked)}</td>
<td>${r.deleted ? html`<span class="muted">–</span>` : verdictBadge(r.signature)}</td>
<td>${pending}</td>
<td>${decided}</td>
</tr>`;
}

/** The plugins whose version asked for cannot run whatever is approved: what blocks each, first. */
function blocked(rows: readonly PluginRow[]): Markup {
  if (rows.length === 0) return html``;
  return html`<section class="card callout bad" aria-labelledby="blocked-h" id="blocked"><h2 id="blocked-h">Cannot run as asked</h2><p class="small">No approval would make these run: fix what blocks each first.</p><ul class="plain">${rows.map((r) => html`<li><a href="/plugins/${r.name}#blockers"><strong>${r.name}</strong></a>: ${r.blockers.map(blockerText).join("; ")}.</li>`)}</ul></section>`;
}

function waiting(p: readonly PendingApproval[]): Markup {
  if (p.length === 0) return html``;
  return html`<section class="card callout" aria-labelledby="waiting-h"><h2 id="waiting-h">Waiting for your approval</h2><ul class="plain">${p.map((a) => html`<li><a href="/plugins/${a.name}#pending"><strong>${a.name}</strong></a>: approving adds ${a.text}. <a href="/plugins/${a.name}#pending">Review and approve →</a></li>`)}</ul></section>`;
}

function summary(rows: readonly PluginRow[]): string {
  const count = (s: PluginRow["status"]) => rows.filter((r) => r.status === s).length;
  const parts = [[count("running"), "running"], [count("held_back"), "held back"], [count("stopped"), "stopped"], [count("deleted"), "deleted"]].filter(([n]) => n !== 0).map(([n, w]) => `${n} ${w}`);
  return `${rows.length} plugin${rows.length === 1 ? "" : "s"}${parts.length === 0 ? "" : `: ${parts.join(", ")}`}`;
}

/** One line of help for the Signature column: what each verdict means for a plugin. */
function signatureLegend(): Markup {
  const outcomes = ["verified", "unverified", "refused"] as const;
  return html`<p class="small legend">Signature: ${outcomes.map((o, i) => html`${i === 0 ? "" : "; "}<strong>${verdictWord(o)}</strong>: ${verdictHelp(o).replace(/\.$/, "")}`)}.</p>`;
}

/** The plugins whose page frames a view (their running version has a UI), when views run. */
async function withViews(ctx: RequestContext, rows: readonly PluginRow[]): Promise<ReadonlySet<string>> {
  const views = ctx.app.views;
  if (views === null) return new Set();
  const framed = await Promise.all(rows.map(async (r) => ((await views.frame(r.name)) === null ? null : r.name)));
  return new Set(framed.filter((n): n is string => n !== null));
}

/** `GET /`. */
export async function pluginsPage(ctx: RequestContext): Promise<string> {
  const { app, session } = ctx;
  const now = app.clock();
  const { rows, pending, blocked: cannotRun, decidedAt } = await pluginsOverview(app.store);
  const viewed = await withViews(ctx, rows);
  const table = rows.length === 0
    ? html`<p class="empty">No plugins yet. Apply a Plugin with <code>openfief apply -f plugin.yaml</code>, or start with <code>openfief up --demo</code>.</p>`
    : html`<div class="table-wrap"><table><thead><tr><th>Plugin</th><th>State</th><th>Running</th><th>Asked for</th><th>Signature</th><th>Pending approval</th><th>Last decision</th></tr></thead><tbody>${rows.map((r) => row(r, pending.find((p) => p.name === r.name), decidedAt.get(r.name), now, viewed.has(r.name)))}</tbody></table></div>`;
  const body = html`<div class="page-head"><h1>Plugins</h1><p>${summary(rows)}</p></div>
<div id="live" hx-get="/" hx-trigger="every 3s" hx-select="#live" hx-swap="outerHTML">
${blocked(cannotRun)}
${waiting(pending)}
${table}
${rows.length === 0 ? "" : signatureLegend()}
<p class="small muted">As of ${absoluteTime(now.toISOString())}; this table refreshes by itself.</p>
</div>`;
  return page({ title: "Plugins", section: "plugins", session, body });
}
