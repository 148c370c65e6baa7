/**
 * Integrity: whether the log's hash chain holds and its append-only guards are in place
 * (`verify-log`), whether re-deciding from the log reproduces every recorded decision
 * (`check-decisions`), and the chain head they ran against.
 */
import { integrityReport } from "../../app/index.js";
import type { IntegrityReport } from "../../app/index.js";
import type { RequestContext } from "../routes.js";
import { checkBadge, hash, when } from "./format.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";
import { page } from "./layout.js";

function chainCard(r: IntegrityReport): Markup {
  const c = r.log.chain;
  const text = c.ok ? html`<p>Every one of the ${c.count} events hashes to the next: no event was changed, removed or inserted.</p>` : html`<p><strong>The log does not hold at event ${c.seq}</strong>: ${c.reason}. Nothing acts on it until it is restored from a copy that holds.</p>`;
  const guards = r.log.guards.ok ? html`<p>The guards that refuse to update or delete an event are in place.</p>` : html`<p><strong>Guards missing:</strong> ${r.log.guards.missing.join(", ")}. Someone changed the database by hand; <code>openfief verify-log --restore-guards</code> re-creates them once the chain is seen to hold.</p>`;
  return html`<section class="card ${c.ok && r.log.guards.ok ? "callout ok" : "callout bad"}"><h2>Hash chain ${checkBadge(c.ok && r.log.guards.ok, "holds", "broken")}</h2>${text}${guards}</section>`;
}

function decisionsCard(r: IntegrityReport): Markup {
  const d = r.decisions;
  if (d.divergences.length === 0) {
    return html`<section class="card callout ok"><h2>Decisions ${checkBadge(true, "reproduce", "differ")}</h2><p>Re-running the deciders over the log gives every one of the ${d.checked} recorded decisions again.</p></section>`;
  }
  return html`<section class="card callout bad"><h2>Decisions ${checkBadge(false, "reproduce", "differ")}</h2><p>${d.diverged} of ${d.checked} recorded decisions are not what the log decides now:</p>
<ul>${d.divergences.map((x) => html`<li>event ${x.seq} (<a href="/plugins/${x.name}">${x.name}</a>): the recorded ${x.field} differ</li>`)}</ul></section>`;
}

/** `GET /integrity`. */
export function integrityPage(ctx: RequestContext): string {
  const { app, session } = ctx;
  const now = app.clock();
  const r = integrityReport(app.store);
  const body = html`<div class="page-head"><h1>Integrity</h1><p>Checked just now, over the whole log. <a href="/integrity">Check again</a></p></div>
<div class="grid">${chainCard(r)}${decisionsCard(r)}</div>
<section class="card"><h2>Chain head</h2><dl class="facts">
<dt>Last event</dt><dd>${r.head.seq === 0 ? html`<span class="muted">the log is empty</span>` : html`<a href="/replay?at=${r.head.seq}">event ${r.head.seq}</a>`}</dd>
<dt>Appended</dt><dd>${when(r.head.time, now)}</dd>
<dt>Its hash</dt><dd>${hash(r.head.hash)}</dd>
</dl><p class="small muted">Keep the head's hash somewhere else: a log that still ends in it was not rewritten.</p></section>`;
  return page({ title: "Integrity", section: "integrity", session, body });
}
