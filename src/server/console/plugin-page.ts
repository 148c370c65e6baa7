/**
 * One plugin: its state, what keeps the version asked for from running whatever is approved (its
 * spec, signature or config: shown first, and while it holds, the Approve button is off and names
 * it), what waits for approval with an Approve button that says exactly what it
 * adds (pinned to the version the page was read at), `why` in the CLI's sentences, the three sides
 * of its permissions (asked, granted, run with), its config and its timeline with causes; for a
 * view plugin, its own UI in a sandboxed iframe from the plugin proxy (seed 002). The approval is a
 * plain form (POST, then a redirect back here); htmx only keeps the page current, around the view,
 * which it never swaps (that would reload it).
 */
import { createHash } from "node:crypto";
import { AppError, approve, uninstallPlan, uninstallPlugin, blockerSubject, blockerText, containerText, describeRule, hostPort, pendingItems, pluginView, verdictHelp, verdictText, webActor } from "../../app/index.js";
import type { ApprovalInFlight, GrantSpec, NextSteps, Pending, PluginView, RemovedInstance, TimelineEntry, UserSession, ViewFrame, ViewsFace } from "../../app/index.js";
import { assetUrls } from "./assets.js";
import { mediaType, readBody } from "../http.js";
import type { RequestContext } from "../routes.js";
import { ago, hash, image, json, permissionRows, richText, statusBadge, verdictBadge, when } from "./format.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";
import { page } from "./layout.js";
import { deliveriesCard } from "./deliveries-card.js";

/** How the console's `why` sentences say what to do next. */
export const WEB_STEPS: NextSteps = { approve: () => "Approve it below", check: "see the Integrity page" };

/** The most bytes a console form may send. */
export const MAX_FORM_BYTES = 4096;

function hostPortOf(h: { host: string; port: number }): string {
  return hostPort(h.host, h.port);
}

/** The roles a grant approves, in its order: those written before roles, then `secretRoles`. */
function secretRolesOf(g: GrantSpec): string[] {
  return [...g.secrets, ...(g.secretRoles ?? []).map((r) => r.role)];
}

/** Each approved Secret role as the grant mounts it: `role` (its own name), or `role as Secret <name>` (docs/adr/0160). */
function secretItems(g: GrantSpec): string[] {
  return [...g.secrets, ...(g.secretRoles ?? []).map((r) => (r.secret === r.role ? r.role : `${r.role} as Secret ${r.secret}`))];
}

function grantAfterRows(after: GrantSpec, p: Pending): Markup {
  const mark = (items: readonly string[], added: ReadonlySet<string>) => items.length === 0 ? html`<span class="muted">none</span>` : html`${items.map((x, i) => html`${i === 0 ? "" : ", "}${added.has(x) ? html`<strong><span class="plus" aria-label="added">+</span>${x}</strong>` : x}`)}`;
  const rows: [string, readonly string[], ReadonlySet<string>][] = [
    ["Capabilities", after.capabilities, new Set(p.capabilities)],
    ["Egress", after.egress.map(hostPortOf), new Set(p.egress.map(hostPortOf))],
    ["Secrets", secretItems(after), new Set(secretItems(after).filter((_, i) => p.secrets.includes(secretRolesOf(after)[i] ?? "")))],
    ["Data tiers", after.dataTiers, new Set(p.dataTiers)],
    ...((after.rbac ?? []).length === 0 ? [] : [["Kubernetes rules", (after.rbac ?? []).map(describeRule), new Set((p.rbac ?? []).map(describeRule))] as [string, readonly string[], ReadonlySet<string>]]),
  ];
  return html`${rows.map(([label, items, added]) => html`<tr><th scope="row">${label}</th><td>${mark(items, added)}</td></tr>`)}`;
}

/** What keeps the version asked for from running whatever is approved, before anything else about it. */
function blockersCard(v: PluginView): Markup {
  const blockers = v.row.blockers;
  if (blockers.length === 0 || v.row.deleted) return html``;
  return html`<section class="card callout bad" id="blockers" aria-labelledby="blockers-h">
<h2 id="blockers-h">Cannot run as asked</h2>
<p>The version asked for, ${image(v.asked?.image ?? null)}, cannot run whatever the grant approves:</p>
<ul>${blockers.map((b) => html`<li>${richText(`${blockerText(b)}.`)}</li>`)}</ul>
<p class="small">Fix that first (apply a corrected Plugin, or an image signed by a signer you trust); no approval is offered until then. ${v.row.running === null ? "Nothing runs meanwhile." : html`Meanwhile ${image(v.row.running)} keeps running under the grant.`}</p>
</section>`;
}

/** Who approved, as the person reading the page says it: "you", or the actor of the grant edit. */
function approver(a: ApprovalInFlight, session: UserSession | null): string {
  return session !== null && a.actor === webActor(session.role, session.user) ? "you" : a.actor;
}

/** The state of a plugin approved since its latest decision, in the words of the page head. */
export function rollingOutBadge(a: ApprovalInFlight): Markup {
  return html`<span class="badge pending" title="approved at event ${a.seq}; the reconciler has not decided again yet"><span aria-hidden="true">◔</span>${a.rollsOut ? "approved; rolling out" : "approved; deciding"}</span>`;
}

/** Between an approval and the decision that takes it in: what happens next, never "nothing waits" beside the old decision. */
function approvedCard(v: PluginView, a: ApprovalInFlight, session: UserSession | null): Markup {
  const next = a.rollsOut
    ? html`Rolling out ${image(a.image)} now: the reconciler decides again in a moment, and this page follows it.`
    : html`The reconciler decides again in a moment; this page follows it.`;
  return html`<section class="card callout ok" id="pending"><h2>Approved by ${approver(a, session)}</h2><p>The grant edit is event ${a.seq}: the grant now gives everything the version asked for requests. ${next}</p></section>`;
}

/**
 * The approval box. Its markup names its own content (a digest in its id, `hx-preserve`): the
 * page's refresh keeps the box that is there, button and all, unless what it says changed, so it
 * never moves from under a pointer on its way to a click.
 */
function pendingCard(v: PluginView, session: UserSession | null): Markup {
  const box = approvalBox(v, session);
  const digest = createHash("sha256").update(box.toString()).digest("hex").slice(0, 16);
  return html`<div id="approval-${digest}" class="approval" hx-preserve="true">${box}</div>`;
}

function approvalBox(v: PluginView, session: UserSession | null): Markup {
  if (v.approved !== null) return approvedCard(v, v.approved, session);
  const p = v.pending;
  if (p === null) return html`<section class="card" id="pending"><h2>Approval</h2><p>Nothing waits for approval: the grant gives everything the version asked for requests.</p></section>`;
  const items = pendingItems(p.pending);
  const first = p.blockers[0];
  if (first !== undefined) {
    // Shown so the owner sees the whole request, but off: approving would not make it run.
    return html`<section class="card" id="pending" aria-labelledby="pending-h">
<h2 id="pending-h">Approval (not offered)</h2>
<p>The version asked for also needs more than the grant gives: ${items.join(", ")}. Approving that would not make it run, so it is not offered while its ${blockerSubject(first)} blocks it.</p>
<div class="actions"><button type="button" disabled>Approve: blocked by its ${blockerSubject(first)}</button></div>
</section>`;
  }
  const owner = session?.role === "owner";
  // A button says what it adds; past a few permissions it points at the list above instead of repeating it.
  const label = items.length <= 3 ? `Approve: add ${items.join(", ")}` : `Approve: add these ${items.length} permissions`;
  const button = owner
    ? html`<button type="submit" class="primary">${label}</button>`
    : html`<button type="submit" class="primary" disabled>${label}</button><span class="small">Only an owner may approve; you are signed in as a viewer.</span>`;
  return html`<section class="card callout" id="pending" aria-labelledby="pending-h">
<h2 id="pending-h">Waiting for your approval</h2>
<p>The version asked for, ${image(v.asked?.image ?? null)}, needs more than the grant gives. Until it is approved, ${v.row.running === null ? "nothing runs" : html`${image(v.row.running)} keeps running under the grant`}.</p>
<p>Approving adds exactly this to the grant, and nothing else:</p>
<ul class="adds">${items.map((i) => html`<li><span class="plus" aria-hidden="true">+</span>${i}</li>`)}</ul>
<h3>The grant after approving</h3>
<div class="table-wrap"><table><tbody>${grantAfterRows(p.grantAfter, p.pending)}</tbody></table></div>
<form method="post" action="/plugins/${v.name}/approve" class="actions">
<input type="hidden" name="version" value="${p.version}">
${button}
</form>
<p class="small muted">Pinned to version ${p.version} of ${v.name}'s events: if anything changes before the approval arrives, nothing is approved and this page shows what changed.</p>
</section>`;
}

function whyCard(v: PluginView, session: UserSession | null): Markup {
  if (v.why === null) return html`<section class="card"><h2>Why</h2><p class="muted">No rollout decision yet: the reconciler has not looked at this plugin.</p></section>`;
  // The latest decision predates the approval: its "waits for approval" is no longer true.
  if (v.approved !== null) return html`<section class="card why"><h2>Why it runs what it runs</h2><p>Approved by ${approver(v.approved, session)} at event ${v.approved.seq}, after the latest decision (event ${v.why.answer.decision.seq}). The reconciler is deciding again; why it runs what it runs shows here once it has.</p></section>`;
  // A removed instance's headline is the card above: the decision's sentences follow here.
  const lines = v.removed === null ? v.why.sentences : v.why.sentences.slice(1);
  const main = lines.filter((l) => !l.startsWith("  - ") && l !== "It was caused by:");
  const causes = lines.filter((l) => l.startsWith("  - ")).map((l) => l.slice(4));
  return html`<section class="card why"><h2>Why it runs what it runs</h2><ul>${main.map((l) => html`<li>${richText(l)}</li>`)}</ul>${causes.length === 0 ? "" : html`<h3>It was caused by</h3><ol>${causes.map((c) => html`<li>${richText(c)}</li>`)}</ol>`}</section>`;
}

/** The head's badge of a removed instance: how it went, in full on hover. */
function removedBadge(r: RemovedInstance): Markup {
  return html`<span class="badge deleted" title="${r.text}"><span aria-hidden="true">✕</span>removed instance</span>`;
}

/** A removed instance says so first: how it went, what went with it, and that what it did stays. */
function removedCard(v: PluginView): Markup {
  const headline = v.removed === null ? undefined : v.why?.sentences[0];
  if (v.removed === null) return html``;
  return html`<section class="card callout bad" id="removed" aria-labelledby="removed-h"><h2 id="removed-h">Removed instance</h2>
<p>${headline ?? `${v.name} is a removed instance.`}</p>
<p class="small">What it did before it was removed stays: its decisions, deliveries and calls are shown as ${v.removed.text}.</p></section>`;
}

/** Who signed the version asked for, what that means, and one line of help. */
function signatureFact(v: PluginView): Markup {
  if (v.row.deleted) return html`<span class="muted">–</span>`;
  const s = v.row.signature;
  return html`${verdictBadge(s, { who: false })}${s === null ? "" : html` ${verdictText(s)}.`}<br><span class="small muted">${verdictHelp(s?.outcome ?? null)}</span>`;
}

function timelineRow(t: TimelineEntry, now: Date): Markup {
  const e = t.event;
  return html`<tr><td class="num" data-label="Event">${e.seq}</td><td class="nowrap" data-label="When">${ago(e.time, now)}</td><td class="type" data-label="Type"><code>${e.type}</code></td><td class="small nowrap" data-label="By">${e.actor}</td><td class="what" data-label="What happened">${richText(t.text)}</td><td class="small what" data-label="Caused by">${t.cause === null ? html`<span class="muted">–</span>` : html`event ${t.cause.seq}: ${richText(t.cause.text)}`}</td></tr>`;
}

/** The approval's note, true of the page it is on: rolling out until the decision, then what came of it. */
function flash(approved: string | undefined, v: PluginView): Markup {
  if (approved === undefined) return html``;
  const next = v.approved !== null ? "The reconciler rolls out the version asked for in a moment; this page follows it."
    : v.row.status === "running" ? "The version asked for runs now." : "The reconciler has decided again: see below.";
  return html`<div class="flash ok" role="status">Approved: your grant edit is event ${approved}. ${next}</div>`;
}

/**
 * A view plugin's UI: framed from the plugin proxy's origin in a sandbox that gives it scripts and
 * its own origin, nothing more (no top navigation, no popups, no forms); the console's script mints
 * its token in parallel with the frame's load and hands it over (docs/adr/0075).
 */
export function viewCard(f: ViewFrame | null, views: ViewsFace | null, session: UserSession | null): Markup {
  if (f === null || views === null) return html``;
  return html`<section class="card view-card" id="view" aria-labelledby="view-h">
<div class="view-head"><h2 id="view-h">${f.installationName}'s view</h2><span class="small muted">The plugin's own page, from the plugin proxy (${views.pluginProxyOrigin}). It acts as you, and only within what both you and its grant allow.</span></div>
<iframe class="view-frame" title="${f.installationName}: the plugin's view" sandbox="allow-scripts allow-same-origin" src="${f.src}" referrerpolicy="no-referrer" data-openfief-view data-status-id="view-status" data-mint-url="/api/v1/plugin-tokens" data-installation-id="${f.installationId}" data-installation-name="${f.installationName}" data-gateway-url="${views.gatewayUrl}" data-cluster-id="${views.clusterId}" data-user="${session?.user ?? ""}"></iframe>
<p id="view-status" class="small muted" role="status">${f.state === "ready" ? "Minting the view's token…" : "The view cannot act now: its grant does not give it the view capability, or it is being removed."}</p>
<script type="module" src="${assetUrls().viewFrame}"></script>
</section>`;
}

/** The plugin page with its view, when it has one. */
export async function pluginPageWithView(ctx: RequestContext): Promise<string> {
  const views = ctx.app.views;
  const frame = views === null ? null : await views.frame(ctx.params.name ?? "");
  return await pluginPage(ctx, html``, frame);
}

/** The grant edit `?approved=` names, when the page is the one an approval was sent back to. */
function approvedParam(ctx: RequestContext): string | undefined {
  const approved = ctx.req.method === "POST" ? undefined : ctx.query.get("approved");
  return approved !== undefined && /^\d{1,15}$/.test(approved) ? approved : undefined;
}

/** The plugin page's markup; `notice` is a message above it (a refused approval), `frame` its view. */
export async function pluginPage(ctx: RequestContext, notice: Markup, frame: ViewFrame | null): Promise<string> {
  const { app, params, session } = ctx;
  const now = app.clock();
  const v = await pluginView(app.store, params.name ?? "", { steps: WEB_STEPS, timeline: 30 });
  // Kept current in two parts around the view: the view itself is never swapped (that would reload it).
  const approved = approvedParam(ctx);
  // The note of an approval refreshes with the page (the poll keeps its ?approved=), so it never lags what the page shows.
  const self = approved === undefined ? `/plugins/${v.name}` : `/plugins/${v.name}?approved=${approved}`;
  const body = html`${notice}
<div id="live" hx-get="${self}" hx-trigger="every 3s" hx-select="#live" hx-select-oob="#live-more" hx-swap="outerHTML">
${flash(approved, v)}
<div class="page-head big"><h1>${v.name}</h1>${v.removed !== null ? removedBadge(v.removed) : v.approved === null ? statusBadge(v.row.status) : rollingOutBadge(v.approved)}</div>
${removedCard(v)}
<section class="card"><dl class="facts">
<dt>Running</dt><dd>${image(v.row.running)}${v.row.runtime === null ? "" : html` <span class="small muted">${v.row.runtime === "wasm" ? html`as WebAssembly in the plugin host, module ${hash(v.row.module ?? "")}` : containerText(v.row.target)}</span>`}</dd>
${v.row.lastCall === null ? "" : html`<dt>Last call</dt><dd>${v.row.lastCall.ok ? html`${v.row.lastCall.succeeded} succeeded, until ${when(v.row.lastCall.at, now)}` : html`<span class="badge bad">failed</span> ${v.row.lastCall.method}: ${v.row.lastCall.code} (${v.row.lastCall.source === "plugin" ? "reported by the plugin" : "the host refused it"}), ${when(v.row.lastCall.at, now)}`}</dd>`}
<dt>Asked for</dt><dd>${v.row.deleted ? html`<span class="muted">(deleted)</span>` : image(v.row.asked)}</dd>
<dt>Signature</dt><dd>${signatureFact(v)}</dd>
<dt>Last decision</dt><dd>${v.why === null ? html`<span class="muted">none yet</span>` : html`event ${v.why.answer.decision.seq}, ${when(v.why.answer.decision.time, now)}`}</dd>
</dl></section>
</div>
${viewCard(frame, app.views, session)}
<div id="live-more">
${blockersCard(v)}
${pendingCard(v, session)}
${whyCard(v, session)}
${await deliveriesCard(app, v.name, now, v.removed)}
<section class="card"><h2>Permissions</h2><div class="table-wrap"><table class="cards"><thead><tr><th></th><th>Asked for (the version asked for)</th><th>Granted</th><th>Runs with</th></tr></thead><tbody>${permissionRows(v.permissions)}</tbody></table></div>
<p class="small muted">Only what is both asked for and granted runs.</p></section>
${uninstallCard(v, session)}
<section class="card"><h2>Config</h2>${v.asked === null ? html`<p class="muted">The Plugin is deleted.</p>` : html`<pre>${json(v.asked.config ?? {})}</pre>`}</section>
<section class="card"><h2>Timeline</h2><p class="small muted">The latest ${v.timeline.entries.length} events of ${v.name}, newest first. <a href="/log?plugin=${v.name}">All of them in the log →</a></p>
<div class="table-wrap"><table class="cards"><thead><tr><th class="num">Event</th><th>When</th><th>Type</th><th>By</th><th>What happened</th><th>Caused by</th></tr></thead><tbody>${[...v.timeline.entries].reverse().map((t) => timelineRow(t, now))}</tbody></table></div></section>
</div>`;
  return page({ title: v.name, section: "plugins", session, body });
}

/** `POST /plugins/{name}/approve` (a form with the version seen): approve, then back to the page. */
export async function approveForm(ctx: RequestContext): Promise<{ redirect: string } | { status: number; markup: string }> {
  const { app, params, session, req } = ctx;
  if (session === null) throw new AppError("unauthorized", "sign in first");
  if (mediaType(req) !== "application/x-www-form-urlencoded") throw new AppError("unsupported_media_type", "send the approval from the console's form");
  const form = new URLSearchParams(await readBody(req, MAX_FORM_BYTES, "the form"));
  const version = form.get("version") ?? "";
  if (!/^\d{1,15}$/.test(version)) throw new AppError("precondition_required", "the approval must name the version it was shown (reload the page)", "version");
  const name = params.name ?? "";
  try {
    const r = app.cluster === undefined ? await approve(app.store, name, webActor(session.role, session.user), Number(version)) : await app.cluster.approve(app.store, name, session, Number(version));
    return { redirect: r.seq === null ? `/plugins/${encodeURIComponent(name)}` : `/plugins/${encodeURIComponent(name)}?approved=${r.seq}` };
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== "precondition_failed") throw err;
    const notice = html`<div class="flash bad" role="alert"><strong>Nothing was approved.</strong> ${name} changed since you looked at it (version ${version}): look again at what is pending now, below, and approve that if you agree.</div>`;
    return { status: 412, markup: await pluginPage(ctx, notice, null) };
  }
}

/** The way to uninstall, for an owner, while the plugin is installed: a link to the confirmation. */
function uninstallCard(v: PluginView, session: UserSession | null): Markup {
  if (session?.role !== "owner" || v.row.deleted) return html``;
  return html`<section class="card" id="uninstall"><h2>Uninstall</h2>
<p>Removes ${v.name} and leaves nothing behind: its objects, its grant, its own Secrets. What it did stays in the log.</p>
<div class="actions"><a class="button danger" href="/plugins/${v.name}/uninstall">Uninstall ${v.name}…</a></div></section>`;
}

/** `GET /plugins/{name}/uninstall`: the confirmation, naming exactly what goes; refused with what blocks it. */
export async function uninstallPage(ctx: RequestContext): Promise<string> {
  const { app, params, session } = ctx;
  const name = params.name ?? "";
  let body: Markup;
  try {
    const plan = await uninstallPlan(app.store, name);
    const goes = [html`its objects and its allow-list entry (it stops running)`, ...(plan.grant ? [html`its grant`] : []), ...plan.secrets.map((s) => html`Secret <code>${s}</code>`), ...(plan.module === null ? [] : [html`module ${hash(plan.module)}`])];
    body = html`<div class="page-head"><h1>Uninstall ${name}?</h1></div>
<section class="card callout" id="confirm-uninstall"><h2>This removes, and nothing else:</h2>
<ul class="adds">${goes.map((g) => html`<li><span class="plus minus" aria-hidden="true">−</span>${g}</li>`)}</ul>
<p>Its decisions, deliveries and egress decisions stay in the log, shown as from a removed instance.</p>
<form method="post" action="/plugins/${name}/uninstall" class="actions">
<input type="hidden" name="version" value="${plan.version}">
<button type="submit" class="danger">Uninstall ${name}</button> <a href="/plugins/${name}">Cancel</a>
</form>
<p class="small muted">Pinned to version ${plan.version} of ${name}'s events: if anything changes first, nothing is removed.</p></section>`;
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== "plugin_pinned") throw err;
    body = html`<div class="page-head"><h1>Uninstall ${name}?</h1></div>
<section class="card callout" id="confirm-uninstall"><h2>Cannot uninstall ${name} now</h2><p>${err.message} (plugin_pinned).</p><p><a href="/plugins/${name}">Back to ${name}</a></p></section>`;
  }
  return page({ title: `Uninstall ${name}`, section: "plugins", session, body });
}

/** `POST /plugins/{name}/uninstall` (the confirmation's form, with the version seen): record the uninstall; the reconciler carries it out. */
export async function uninstallForm(ctx: RequestContext): Promise<{ redirect: string } | { status: number; markup: string }> {
  const { app, params, session, req } = ctx;
  if (session === null) throw new AppError("unauthorized", "sign in first");
  if (mediaType(req) !== "application/x-www-form-urlencoded") throw new AppError("unsupported_media_type", "send the uninstall from the console's form");
  const form = new URLSearchParams(await readBody(req, MAX_FORM_BYTES, "the form"));
  const version = form.get("version") ?? "";
  if (!/^\d{1,15}$/.test(version)) throw new AppError("precondition_required", "the uninstall must name the version it was shown (reload the page)", "version");
  const name = params.name ?? "";
  try {
    await uninstallPlugin(app.store, name, webActor(session.role, session.user), null, Number(version));
    return { redirect: `/plugins/${encodeURIComponent(name)}` };
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== "precondition_failed") throw err;
    const notice = html`<div class="flash bad" role="alert"><strong>Nothing was removed.</strong> ${name} changed since you looked at it (version ${version}): look again before uninstalling.</div>`;
    return { status: 412, markup: await pluginPage(ctx, notice, null) };
  }
}
