/**
 * The plugins page: one row per plugin — its state at a glance, what runs, what is asked for, who
 * signed it, what waits for approval, the last decision, a link to a view plugin's UI — and, above
 * the table, the plugins whose version cannot run whatever is approved (blockers first), then the
 * plugins waiting for the owner: only versions an approval would let run. The table refreshes
 * itself (htmx polls and swaps it).
 */
import { blockerSubject, blockerText, catalogText, outcomeText, pendingItems, pluginsOverview, problemText, verdictHelp, verdictWord } from "../../app/index.js";
import type { ApprovalInFlight, PendingApproval, PluginRow } from "../../app/index.js";
import type { RequestContext } from "../routes.js";
import { absoluteTime, ago, imageCell, statusBadge, verdictBadge } from "./format.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";
import { page } from "./layout.js";
import { rollingOutBadge } from "./plugin-page.js";

/** What a row shows beside the plugin's own row. */
interface RowFacts {
  readonly approval: PendingApproval | undefined;
  readonly approved: ApprovalInFlight | undefined;
  readonly decidedAt: string | undefined;
  readonly now: Date;
  readonly hasView: boolean;
}

function pendingCell(r: PluginRow, approval: PendingApproval | undefined, approved: ApprovalInFlight | undefined): Markup {
  if (approved !== undefined) return html`<span class="small">approved at event ${approved.seq}</span>`;
  const first = r.blockers[0];
  // No nudge to approve what cannot run: the blocker instead.
  if (first !== undefined) return html`<a href="/plugins/${r.name}#blockers"><span class="badge bad">blocked</span></a> <span class="small">by its ${blockerSubject(first)}</span>`;
  return approval === undefined ? html`<span class="muted">nothing</span>` : html`<a href="/plugins/${r.name}#pending"><span class="badge pending">waiting</span></a><br><span class="small pending-text">${shortPending(approval)}</span>`;
}

function row(r: PluginRow, { approval, approved, decidedAt, now, hasView }: RowFacts): Markup {
  const decided = r.decided === null ? html`<span class="muted">none yet</span>` : html`${outcomeText(r.decided.outcome)}<br><span class="small muted">event ${r.decided.seq}${decidedAt === undefined ? "" : html`, ${ago(decidedAt, now)}`}</span>`;
  const problems = r.problems.length === 0 ? "" : html`<div class="small problem-line"><span class="badge bad">problem</span> ${r.problems.map(problemText).join("; ")}</div>`;
  return html`<tr>
<td data-label="Plugin"><a class="nowrap" href="/plugins/${r.name}"><strong>${r.name}</strong></a>${hasView ? html`<br><a class="small" href="/plugins/${r.name}#view">its view →</a>` : ""}${problems}</td>
<td data-label="State">${approved === undefined ? statusBadge(r.status) : rollingOutBadge(approved)}</td>
<td data-label="Running">${imageCell(r.running)}${r.runtime === "wasm" ? html`<br><span class="small muted">WebAssembly</span>` : ""}</td>
<td data-label="Asked for">${r.deleted ? html`<span class="muted">(deleted)</span>` : r.asked !== null && r.asked === r.running ? html`<span class="muted">the version running</span>` : imageCell(r.asked)}</td>
<td data-label="Signature">${r.deleted ? html`<span class="muted">–</span>` : verdictBadge(r.signature)}</td>
<td data-label="Pending approval" class="pending-col">${pendingCell(r, approval, approved)}</td>
<td data-label="Last decision" class="decided">${decided}</td>
</tr>`;
}

/** At most three of what an approval adds, then how many more: the plugin's page lists them all. */
const SHOWN = 3;
function shortPending(a: PendingApproval): string {
  const items = pendingItems(a.pending);
  return items.length <= SHOWN ? a.text : `${items.slice(0, SHOWN).join(", ")} and ${items.length - SHOWN} more`;
}

/** The plugins whose version asked for cannot run whatever is approved: what blocks each, first. */
function blocked(rows: readonly PluginRow[]): Markup {
  if (rows.length === 0) return html``;
  return html`<section class="card callout bad" aria-labelledby="blocked-h" id="blocked"><h2 id="blocked-h">Cannot run as asked</h2><p class="small">No approval would make these run: fix what blocks each first.</p><ul class="plain">${rows.map((r) => html`<li><a href="/plugins/${r.name}#blockers"><strong>${r.name}</strong></a>: ${r.blockers.map(blockerText).join("; ")}.</li>`)}</ul></section>`;
}

function waiting(p: readonly PendingApproval[]): Markup {
  if (p.length === 0) return html``;
  return html`<section class="card callout" aria-labelledby="waiting-h"><h2 id="waiting-h">Waiting for your approval</h2><ul class="plain">${p.map((a) => html`<li><a href="/plugins/${a.name}#pending"><strong>${a.name}</strong></a>: approving adds <span class="pending-text">${shortPending(a)}</span>. <a href="/plugins/${a.name}#pending">Review and approve →</a></li>`)}</ul></section>`;
}

function summary(rows: readonly PluginRow[], approved: ReadonlyMap<string, ApprovalInFlight>): string {
  // An approved plugin is counted as rolling out, not under the status its last decision gave it.
  const count = (s: PluginRow["status"]) => rows.filter((r) => r.status === s && !approved.has(r.name)).length;
  const parts = [[count("running"), "running"], [approved.size, "approved and rolling out"], [count("held_back"), "held back"], [count("stopped"), "stopped"], [count("deleted"), "deleted"]].filter(([n]) => n !== 0).map(([n, w]) => `${n} ${w}`);
  return `${rows.length} plugin${rows.length === 1 ? "" : "s"}${parts.length === 0 ? "" : `: ${parts.join(", ")}`}`;
}

/** One line of help for the Signature column: what each verdict means for a plugin. */
function signatureLegend(): Markup {
  const outcomes = ["verified", "unverified", "refused"] as const;
  return html`<p class="small signature-legend">Signature: ${outcomes.map((o, i) => html`${i === 0 ? "" : "; "}<strong>${verdictWord(o)}</strong>: ${verdictHelp(o).replace(/\.$/, "")}`)}.</p>`;
}

/** A line for each plugin whose catalog entry does not match the image asked for: said, never shown as verified. */
function catalogNotes(rows: readonly PluginRow[]): Markup {
  const notes = rows.flatMap((r) => (r.deleted || r.signature?.catalog == null || r.signature.catalog.standing === "verified" ? [] : [html`<li><strong>${r.name}</strong>: ${catalogText(r.signature.catalog, { short: true })}; not verified.</li>`]));
  return notes.length === 0 ? html`` : html`<ul class="small catalog-notes">${notes}</ul>`;
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
  const { rows, pending, blocked: cannotRun, decidedAt, approved } = await pluginsOverview(app.store);
  const viewed = await withViews(ctx, rows);
  const table = rows.length === 0
    ? html`<p class="empty">No plugins yet. Apply a Plugin with <code>openfief apply -f plugin.yaml</code>, or start with <code>openfief up --demo</code>.</p>`
    : html`<div class="table-wrap"><table class="cards"><thead><tr><th>Plugin</th><th>State</th><th>Running</th><th>Asked for</th><th>Signature</th><th>Pending approval</th><th>Last decision</th></tr></thead><tbody>${rows.map((r) => row(r, { approval: pending.find((p) => p.name === r.name), approved: approved.get(r.name), decidedAt: decidedAt.get(r.name), now, hasView: viewed.has(r.name) }))}</tbody></table></div>`;
  const body = html`<div class="page-head"><h1>Plugins</h1><p>${summary(rows, approved)}</p></div>
<div id="live" hx-get="/" hx-trigger="every 3s" hx-select="#live" hx-swap="outerHTML">
${blocked(cannotRun)}
${waiting(pending)}
${table}
${catalogNotes(rows)}
${rows.length === 0 ? "" : signatureLegend()}
<p class="small muted">As of ${absoluteTime(now.toISOString())}; this table refreshes by itself.</p>
</div>`;
  return page({ title: "Plugins", section: "plugins", session, body });
}
