/**
 * The log: a filter (plugin, type, time), the latest events newest first with what each says and
 * what caused it, older pages by sequence number, and new events as they are appended (htmx polls
 * for the rows after the newest one shown; without JavaScript, reload).
 */
import { eventSentences, eventTypes, listPlugins, readLog, readLogTail } from "../../app/index.js";
import type { KnownEvent, LogQuery } from "../../app/index.js";
import { limitOf, logFilters, seqOf } from "../params.js";
import type { RequestContext } from "../routes.js";
import { ago, richText } from "./format.js";
import { html, trusted } from "./html.js";
import type { Markup } from "./html.js";
import { page } from "./layout.js";

function filterQuery(q: LogQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (q.plugin !== undefined) p.set("plugin", q.plugin);
  for (const t of q.types ?? []) p.append("type", t);
  if (q.since !== undefined) p.set("since", q.since.toISOString());
  if (q.until !== undefined) p.set("until", q.until.toISOString());
  return p;
}

/** A plugin's stream links to its events; the singletons (`trust`, …) are plain text. */
function streamLink(stream: string): Markup {
  const m = /^(?:plugin|egress)\/([a-z][-a-z0-9]*)$/.exec(stream);
  return m === null ? html`${stream}` : html`<a href="/log?plugin=${m[1] ?? ""}">${stream}</a>`;
}

function eventRow(sentences: ReadonlyMap<number, string>, e: KnownEvent, now: Date): Markup {
  return html`<tr><td class="num" data-label="Event">${e.seq}</td><td class="nowrap" data-label="When">${ago(e.time, now)}</td><td class="small nowrap" data-label="Stream">${streamLink(e.stream)}</td><td class="type" data-label="Type"><code>${e.type}</code></td><td class="small nowrap" data-label="By">${e.actor}</td><td class="what" data-label="What happened">${richText(sentences.get(e.seq) ?? "")}</td><td class="num small" data-label="Cause">${e.causedBy === null ? html`<span class="muted" title="an observation: nothing in the log caused it">–</span>` : html`<span title="${`caused by event ${e.causedBy}`}">${e.causedBy}</span>`}</td></tr>`;
}

/** The poller: a hidden row that asks for the rows after `after` and replaces itself with them (and a new poller). */
function poller(q: LogQuery, after: number): Markup {
  const p = filterQuery(q);
  p.set("after", String(after));
  return html`<tr id="log-poll" class="poll" hidden hx-get="/log/rows?${p.toString()}" hx-trigger="every 2s" hx-swap="outerHTML"><td colspan="7"></td></tr>`;
}

function option(value: string, label: string, selected: boolean): Markup {
  return html`<option value="${value}"${selected ? trusted(" selected") : ""}>${label}</option>`;
}

async function filterForm(ctx: RequestContext, q: LogQuery, limit: number): Promise<Markup> {
  const plugins = (await listPlugins(ctx.app.store)).map((r) => r.name);
  const types = eventTypes(ctx.app.store);
  const chosen = q.types?.[0];
  return html`<form class="filters card" method="get" action="/log">
<label>Plugin<select name="plugin">${option("", "every plugin", q.plugin === undefined)}${plugins.map((n) => option(n, n, n === q.plugin))}</select></label>
<label>Type<select name="type">${option("", "every type", chosen === undefined)}${types.map((t) => option(t, t, t === chosen))}</select></label>
<label>Since (ISO time)<input name="since" placeholder="any time" value="${q.since?.toISOString() ?? ""}" size="22"></label>
<label>Until (ISO time)<input name="until" placeholder="any time" value="${q.until?.toISOString() ?? ""}" size="22"></label>
<label>Per page<input name="limit" type="number" min="1" max="500" value="${limit}" size="4"></label>
<button type="submit">Show</button> <a href="/log">Clear</a>
</form>`;
}

/** `GET /log`. */
export async function logPage(ctx: RequestContext): Promise<string> {
  const { app, query, session } = ctx;
  const now = app.clock();
  const q = logFilters(app.store, query);
  const limit = limitOf(query, 50);
  const before = seqOf(query, "before");
  const tail = await readLogTail(app.store, q, { limit, ...(before === undefined ? {} : { beforeSeq: before }) });
  const newest = [...tail.events].reverse();
  const live = before === undefined;
  const older = filterQuery(q);
  if (tail.older !== null) older.set("before", String(tail.older));
  older.set("limit", String(limit));
  const sentences = await eventSentences(app.store, newest);
  const rows = newest.length === 0 && !live ? html`` : html`${live ? poller(q, tail.head) : ""}${newest.map((e) => eventRow(sentences, e, now))}`;
  const body = html`<div class="page-head"><h1>Log</h1><p>${tail.head} events in the hash-chained log${live ? html` · <span class="live">live</span>` : html` · events before ${before}`}</p></div>
${await filterForm(ctx, q, limit)}
<div class="table-wrap"><table class="cards"><thead><tr><th class="num">Event</th><th>When</th><th>Stream</th><th>Type</th><th>By</th><th>What happened</th><th class="num">Cause</th></tr></thead>
<tbody id="log-rows">${rows}</tbody></table></div>
${newest.length === 0 ? html`<p class="empty">No events match.</p>` : ""}
<nav class="pager" aria-label="Pages">${live ? html`<span></span>` : html`<a href="/log?${filterQuery(q).toString()}">← Newest</a>`}${tail.older === null ? html`<span class="muted">The first event is shown.</span>` : html`<a href="/log?${older.toString()}">Older events →</a>`}</nav>`;
  return page({ title: "Log", section: "log", session, body });
}

/** `GET /log/rows`: the rows after `after`, newest first, under a new poller (htmx swaps them in). */
export async function logRows(ctx: RequestContext): Promise<string> {
  const { app, query } = ctx;
  const now = app.clock();
  const q = logFilters(app.store, query);
  const page = await readLog(app.store, { ...q, afterSeq: seqOf(query, "after") ?? 0, limit: 200 });
  const after = page.next ?? page.head;
  const sentences = await eventSentences(app.store, page.events);
  return html`${poller(q, after)}${[...page.events].reverse().map((e) => eventRow(sentences, e, now))}`.toString();
}
