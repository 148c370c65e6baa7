/**
 * Integrity: whether the log's hash chain holds and its append-only guards are in place, whether
 * re-deciding reproduces every recorded decision and verdict, and the chain head — each checked only as far as
 * it was not already (the last verified event onwards, each decision once): a page costs what was
 * appended since it was last checked, not the whole log (ADR 0102).
 */
import { integrityReport, latestCheckpoint } from "../../app/index.js";
import type { FaceContext, IntegrityReport } from "../../app/index.js";
import type { RequestContext } from "../routes.js";
import { checkBadge, hash, when } from "./format.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";
import { page } from "./layout.js";
import { proofCard, witnessesCard } from "./witnesses-card.js";

/** The newest signed checkpoint, as the page shows it. */
interface Newest { readonly size: number; readonly seq: number; readonly root: string }

function chainCard(r: IntegrityReport): Markup {
  const c = r.chain.result;
  const before = r.chain.verifiedBefore;
  const text = !c.ok
    ? html`<p><strong>The log does not hold at event ${c.seq}</strong>: ${c.reason}. Nothing acts on it until it is restored from a copy that holds.</p>`
    : c.count === 0
      ? html`<p>The log is empty.</p>`
      : before === 0
        ? html`<p>Every one of the ${c.count} events hashes to the next: no event was changed, removed or inserted.</p>`
        : html`<p>Every event up to event ${c.count} hashes to the next. Events 1 to ${before} were verified before (the last verified event, ${before}, was hashed again); ${c.count === before ? "nothing was appended since" : html`events ${before + 1} to ${c.count} were verified now`}.</p>`;
  const guards = r.guards.ok ? html`<p>The guards that refuse to update or delete an event are in place.</p>` : html`<p><strong>Guards missing:</strong> ${r.guards.missing.join(", ")}. Someone changed the database by hand; <code>openfief verify-log --restore-guards</code> re-creates them once the chain is seen to hold.</p>`;
  return html`<section class="card ${r.ok ? "callout ok" : "callout bad"}"><h2>Hash chain ${checkBadge(r.ok, "holds", "broken")}</h2>${text}${guards}</section>`;
}

/** What a difference is about: the plugin (a link to its page), or the image a signature verdict is about. */
function subject(x: { readonly name: string; readonly family: string }): Markup {
  return x.family === "signature" ? html`<code>${x.name}</code>` : html`<a href="/plugins/${x.name}">${x.name}</a>`;
}

/** What made it: a decision's family, or a verdict's (signature, config, grant: docs/adr/0191). */
function maker(family: string): string {
  return family === "signature" || family === "config" || family === "grant" ? `the ${family} verdict's` : family;
}

/** The decisions card: whether re-deciding under each decision's own rules reproduces it. */
export function decisionsCard(r: IntegrityReport): Markup {
  const d = r.decisions;
  if (d.divergences.length === 0) {
    return html`<section class="card callout ok"><h2>Decisions ${checkBadge(true, "reproduce", "differ")}</h2><p>Re-running the deciders, each decision under the rules it names, gives every one of the ${d.checked} decisions recorded up to event ${d.upTo} again.</p></section>`;
  }
  return html`<section class="card callout bad"><h2>Decisions ${checkBadge(false, "reproduce", "differ")}</h2><p>${d.diverged} of the ${d.checked} decisions recorded up to event ${d.upTo} are not what the rules they name decide (a bug or tampering):</p>
<ul>${d.divergences.map((x) => html`<li>event ${x.seq} (${subject(x)}): the recorded ${x.field} differ from what ${maker(x.family)} rules ${x.rules} decide</li>`)}</ul>${d.more === 0 ? "" : html`<p>And ${d.more} more differences: <code>openfief check-decisions</code> lists them all.</p>`}</section>`;
}

/** Decisions under older rules that today's would make differently: shown apart, an upgrade's effect rather than a fault. */
export function upgradesCard(r: IntegrityReport): Markup {
  const u = r.decisions.upgrades;
  if (u.length === 0) return html``;
  const seqs = new Set(u.map((x) => x.seq)).size;
  return html`<section class="card" id="upgrade-effects"><h2>Under today's rules</h2><p>${r.decisions.upgradesCapped ? "At least " : ""}${seqs} decisions made under older rules would be decided differently today: what the upgrade changed, not a fault.</p>
<ul>${u.map((x) => html`<li>event ${x.seq} (${subject(x)}): its ${x.field} under ${maker(x.family)} rules ${x.rules}, another under today's ${x.today}</li>`)}</ul>${r.decisions.upgradesCapped ? html`<p><code>openfief check-decisions</code> lists them all.</p>` : ""}</section>`;
}

/** The log's key and its newest signed checkpoint: what an auditor checks the log with, anywhere. */
function transparencyCard(app: FaceContext, c: Newest | null): Markup {
  const key = app.logKey ?? null;
  if (key === null) {
    // In a cluster the key is the one the operator's leader publishes (docs/adr/0192).
    const why = app.cluster === undefined
      ? html`This control plane signs no checkpoints of the log (it was started with <code>--no-checkpoints</code>).`
      : html`The operator has not published the log's verifier key (the ConfigMap <code>openfief-log-verifier</code>): it signs no checkpoints (no Secret <code>openfief-log-key</code>), or has not yet.`;
    return html`<section class="card"><h2>Signed checkpoints</h2><p class="muted">${why}</p></section>`;
  }
  const newest = c === null
    ? html`<dt>Newest checkpoint</dt><dd><span class="muted">none recorded yet: the signer (the control plane, or in a cluster the operator's leader) signs one within seconds of the log growing while it runs</span></dd>`
    : html`<dt>Newest checkpoint</dt><dd>events 1 to ${c.size} (<a href="/tlog/checkpoint">the signed note</a>, recorded as <a href="/replay?at=${c.seq}">event ${c.seq}</a>)</dd>
<dt>Its root</dt><dd><code>${c.root}</code></dd>`;
  return html`<section class="card"><h2>Signed checkpoints</h2><p>The log is a Merkle tree whose heads are signed with the log's key and published as files anyone can fetch (<code>/tlog/checkpoint</code>, <code>/tlog/tile/…</code>; <code>openfief export-tiles</code> writes the same files to a folder). A log rewritten, cut short or shown differently to two people no longer matches a checkpoint someone kept.</p><dl class="facts">
<dt>Origin</dt><dd><code>${key.origin}</code></dd>
<dt>Verifier key</dt><dd><code>${key.verifierKey}</code></dd>
${newest}
</dl></section>`;
}

/** `GET /integrity`. */
export async function integrityPage(ctx: RequestContext): Promise<string> {
  const { app, session } = ctx;
  const now = app.clock();
  const r = await integrityReport(app.store);
  const checkpoint = await latestCheckpoint(app.store);
  const transparency = transparencyCard(app, checkpoint);
  const body = html`<div class="page-head"><h1>Integrity</h1><p>Checked just now, as far as it was not already: the chain from the last verified event to the last event, each decision once, after it was recorded. <code>openfief verify-log</code> and <code>openfief check-decisions</code> go over the whole log again. <a href="/integrity">Check again</a></p></div>
<div class="grid">${chainCard(r)}${decisionsCard(r)}</div>${upgradesCard(r)}
<section class="card"><h2>Chain head</h2><dl class="facts">
<dt>Last event</dt><dd>${r.head.seq === 0 ? html`<span class="muted">the log is empty</span>` : html`<a href="/replay?at=${r.head.seq}">event ${r.head.seq}</a>`}</dd>
<dt>Appended</dt><dd>${when(r.head.time, now)}</dd>
<dt>Its hash</dt><dd>${hash(r.head.hash)}</dd>
</dl><p class="small muted">Keep the head's hash somewhere else: a log that still ends in it was not rewritten.</p></section>
${transparency}
${await witnessesCard(ctx)}
${proofCard({ covered: checkpoint?.size ?? null, head: r.head.seq, signs: app.logKey != null })}`;
  return page({ title: "Integrity", section: "integrity", session, body });
}
