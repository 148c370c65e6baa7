/**
 * Replay: the state as it was after any event — each plugin's running and asked-for image, its
 * decision's outcome and what waited — chosen with a slider or a sequence number or time, and
 * stepped one event at a time. The form works without JavaScript; with htmx the state follows
 * the slider.
 */
import { describePending, outcomeText, parseReplayPoint, replay } from "../../app/index.js";
import type { Replayed } from "../../app/index.js";
import type { RequestContext } from "../routes.js";
import { imageCell, richText, when } from "./format.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";
import { page } from "./layout.js";


function stateMarkup(r: Replayed, now: Date): Markup {
  const at = r.event === null ? html`<p>Before the first event: nothing was known yet.</p>` : html`<p><strong>Event ${r.seq}</strong> (${when(r.time, now)}) on <code>${r.event.stream}</code>: ${richText(r.event.text)}.</p>`;
  const table = r.plugins.length === 0 ? html`<p class="empty">No plugins yet at this point.</p>` : html`<div class="table-wrap"><table class="cards"><thead><tr><th>Plugin</th><th>Running</th><th>Asked for</th><th>Decision</th><th>Waiting for approval</th></tr></thead><tbody>${r.plugins.map((p) => html`<tr><td data-label="Plugin"><strong>${p.name}</strong></td><td data-label="Running">${imageCell(p.running)}</td><td data-label="Asked for">${p.deleted ? html`<span class="muted">(deleted)</span>` : imageCell(p.asked)}</td><td data-label="Decision">${p.outcome === null ? html`<span class="muted">none yet</span>` : outcomeText(p.outcome)}</td><td data-label="Waiting for approval" class="pending-text">${p.pending === null ? html`<span class="muted">nothing</span>` : describePending(p.pending)}</td></tr>`)}</tbody></table></div>`;
  const prev = r.seq > 0 ? html`<a href="/replay?at=${r.seq - 1}" rel="prev">← event ${r.seq - 1}</a>` : html`<span></span>`;
  const next = r.seq < r.head ? html`<a href="/replay?at=${r.seq + 1}" rel="next">event ${r.seq + 1} →</a>` : html`<span class="muted">this is now</span>`;
  return html`<section class="card" id="replay-state"><h2>The state after event ${r.seq} of ${r.head}</h2>${at}${table}<p class="small muted">${r.verdicts} image verdict(s) recorded by then.</p><nav class="pager" aria-label="Step">${prev}${next}</nav></section>`;
}

/** `GET /replay`. */
export async function replayPage(ctx: RequestContext): Promise<string> {
  const { app, query, session } = ctx;
  const now = app.clock();
  const text = query.get("at");
  const head = await app.store.head();
  const r = await replay(app.store, text === undefined ? { seq: head } : parseReplayPoint(text));
  const body = html`<div class="page-head"><h1>Replay</h1><p>The state folded from the log as it stood after any event.</p></div>
<form class="card" method="get" action="/replay">
<label for="at-slider">Drag to any event of the log; the state below follows (without JavaScript, press Show).</label>
<div class="slider"><span class="small muted">0</span>
<input id="at-slider" type="range" name="at" min="0" max="${r.head}" value="${r.seq}" hx-get="/replay" hx-trigger="input changed delay:150ms" hx-select="#replay-state" hx-target="#replay-state" hx-swap="outerHTML">
<span class="small muted">${r.head} (now)</span></div>
<div class="actions"><button type="submit">Show</button></div>
</form>
<form class="filters card" method="get" action="/replay">
<label>Or a sequence number or time<input name="at" placeholder="42 or 2026-12-01T12:00:00Z" value="${text ?? ""}" size="30"></label>
<button type="submit">Show</button> <a href="/replay">Now</a>
</form>
${stateMarkup(r, now)}`;
  return page({ title: "Replay", section: "replay", session, body });
}
