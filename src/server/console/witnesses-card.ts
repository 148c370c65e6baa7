/**
 * The integrity page's witnesses (docs/adr/0155): each witness the log submits its checkpoints to,
 * the newest size it cosigned and how it last answered; and, in a card of its own, an event's proof
 * (C2SP tlog-proof, docs/adr/0153) as a download, to hand to an auditor.
 */
import { logVerifier, parseCount, proveEvent, witnessStates } from "../../app/index.js";
import { parseVerifierKey } from "../../tlog/index.js";
import type { WitnessState } from "../../app/index.js";
import type { RequestContext } from "../routes.js";
import { checkBadge, when } from "./format.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";

const STATUS: Record<WitnessState["status"], string> = {
  cosigned: "cosigned the newest checkpoint it was sent",
  behind: "not asked yet",
  refused: "refused a checkpoint",
  rejected: "does not take this log",
  unreachable: "could not be reached",
};

function row(s: WitnessState, now: Date): Markup {
  // Named by its key when it gave one (or it was given), its URL under it; else by its URL alone.
  const name = s.witness === "" ? html`<code>${s.url}</code>` : html`<code>${s.witness}</code><br><span class="small muted">${s.url}</span>`;
  return html`<tr><td data-label="Witness">${name}</td>
<td data-label="Newest size cosigned">${s.size === 0 ? html`<span class="muted">none yet</span>` : String(s.size)}</td>
<td data-label="Last answer">${s.status === "refused" ? html`<strong>${STATUS[s.status]}</strong>` : STATUS[s.status]}${s.detail === "" ? "" : html`<br><span class="small">${s.detail}</span>`}</td>
<td data-label="When">${when(s.at === "" ? null : s.at, now)}</td></tr>`;
}

/** The witnesses' card, read from what the log keeps beside it (whichever process submitted). */
export async function witnessesCard(ctx: RequestContext): Promise<Markup> {
  const states = await witnessStates(ctx.app.store);
  const now = ctx.app.clock();
  const refused = states.some((s) => s.status === "refused");
  if (states.length === 0) {
    return html`<section class="card"><h2>Witnesses</h2><p>No witness cosigns this log's checkpoints yet. With <code>openfief up --witness URL</code> (in a cluster, the operator's <code>--witness</code>) each checkpoint is sent to a witness that refuses to cosign a history other than the one it saw: then nobody, not even whoever holds the database, can show two histories unnoticed.</p></section>`;
  }
  return html`<section class="card ${refused ? "callout bad" : ""}"><h2>Witnesses ${checkBadge(!refused, "agree", "refused")}</h2>
${refused ? html`<p><strong>A witness refused a checkpoint of this log</strong> as inconsistent with one it cosigned before: the log may have been rewritten, or shown another history. Check it with <code>openfief verify-log --checkpoint</code> against a checkpoint kept elsewhere.</p>` : ""}
<div class="table-wrap"><table class="cards"><thead><tr><th>Witness</th><th>Newest size cosigned</th><th>Last answer</th><th>When</th></tr></thead><tbody>${states.map((s) => row(s, now))}</tbody></table></div>
</section>`;
}

/** What the proof card needs: the events the newest signed checkpoint covers, the log's head, whether the log signs checkpoints. */
export interface ProofCoverage {
  /** The newest checkpoint's size (events 1 to it have a proof), or null before the first. */
  readonly covered: number | null;
  readonly head: number;
  /** Whether checkpoints are signed (this control plane's key, or in a cluster the published one). */
  readonly signs: boolean;
}

/** When the events past the newest checkpoint (of `covered` events, fewer than the head) get a proof. */
function later(c: ProofCoverage, covered: number): Markup {
  const which = covered + 1 === c.head ? `Event ${c.head} gets` : `Events ${covered + 1} to ${c.head} get`;
  return html` ${which} one after the next checkpoint${c.signs ? "" : ", once the log signs checkpoints again (see Signed checkpoints above)"}.`;
}

/**
 * An event's proof as a download, in a card of its own: the event's number (as the Log page shows
 * it), up to the newest signed checkpoint's size, since a proof needs a checkpoint that covers the
 * event. Before the first checkpoint there is nothing to download: the card says when there will be.
 */
export function proofCard(c: ProofCoverage): Markup {
  const head = html`<section class="card" id="proof" aria-labelledby="proof-h"><h2 id="proof-h">Proof of an event</h2>`;
  const what = html`<code>event-N.tlog-proof</code>: the event, its inclusion proof and a signed checkpoint, which <code>openfief verify-proof</code> checks offline`;
  if (c.covered === null || c.covered === 0) {
    const when = c.signs ? "after the next checkpoint (signed within seconds of the log growing)" : "once the log signs checkpoints (see Signed checkpoints above)";
    return html`${head}<p id="proof-hint">No event can be proven yet: a proof needs a signed checkpoint that covers the event. Proofs can be downloaded ${when}.</p>
<p class="small muted">A proof is ${what}.</p></section>`;
  }
  const covers = c.covered >= c.head ? html`Every event so far (1 to ${c.covered}) has one.` : html`Events 1 to ${c.covered} have one (the newest checkpoint covers them).${later(c, c.covered)}`;
  return html`${head}
<form method="get" action="/integrity/proof" class="proof-form"><label for="proof-seq">Event number</label> <input id="proof-seq" type="number" name="seq" min="1" max="${c.covered}" required aria-describedby="proof-hint"> <button type="submit">Download proof</button></form>
<p id="proof-hint" class="small muted">Downloads ${what}. ${covers}</p>
</section>`;
}

/** `GET /integrity/proof?seq=N`: the event's proof, as a file to save. */
export async function proofDownload(ctx: RequestContext): Promise<void> {
  const seq = parseCount(ctx.query.get("seq") ?? "", "seq");
  const published = ctx.app.logKey?.verifierKey;
  const key = published === undefined ? null : parseVerifierKey(published);
  const proof = await proveEvent(ctx.app.store, seq, key?.ok === true ? key.value : logVerifier(ctx.app.dataDir, process.env));
  const body = Buffer.from(proof.text, "utf8");
  ctx.res.writeHead(200, {
    "Content-Type": "text/plain; charset=utf-8", "Content-Disposition": `attachment; filename="event-${seq}.tlog-proof"`, "Cache-Control": "no-store",
    "Content-Length": body.length,
  });
  ctx.res.end(body);
}
