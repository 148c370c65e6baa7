/**
 * How the console shows values: times absolute and relative, digests and hashes shortened with
 * the full value on hover, states as a badge of colour and words, permissions as lists. Every
 * function returns {@link Markup} built with `html`, so each value is escaped on its way out.
 */
import { shortImage, statusText, verdictCell, verdictHelp, verdictWord } from "../../app/index.js";
import type { EgressOutcome, PermissionLists, PluginStatus, SignatureView } from "../../app/index.js";
import { html } from "./html.js";
import type { Markup } from "./html.js";

const UNITS: readonly [number, string][] = [[86_400, "day"], [3_600, "h"], [60, "min"], [1, "s"]];

/** "12 s ago", "5 min ago", "3 h ago", "2 days ago" (or "in 5 min"). */
export function relativeTime(iso: string, now: Date): string {
  const seconds = Math.round((now.getTime() - Date.parse(iso)) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 5) return "just now";
  for (const [size, unit] of UNITS) {
    if (abs >= size) {
      const n = Math.floor(abs / size);
      const u = unit === "day" && n !== 1 ? "days" : unit;
      return seconds >= 0 ? `${n} ${u} ago` : `in ${n} ${u}`;
    }
  }
  return "just now";
}

/** `2026-12-01 12:03:04 UTC` from an ISO time. */
export function absoluteTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 19)} UTC`;
}

/** A time, absolute and relative, with the exact value on hover. */
export function when(iso: string | null, now: Date): Markup {
  if (iso === null) return html`<span class="muted">–</span>`;
  return html`<time datetime="${iso}" title="${iso}">${absoluteTime(iso)}</time> <span class="muted small">(${relativeTime(iso, now)})</span>`;
}

/** A time relative only, with the absolute one on hover (for tables). */
export function ago(iso: string, now: Date): Markup {
  return html`<time datetime="${iso}" title="${absoluteTime(iso)}">${relativeTime(iso, now)}</time>`;
}

/** An image reference shortened (`nbp-fx@sha256:ac327d8f7783`), the full reference on hover. */
export function image(ref: string | null): Markup {
  if (ref === null) return html`<span class="muted">none</span>`;
  return html`<code class="img" title="${ref}">${shortImage(ref)}…</code>`;
}

/**
 * An image reference as {@link image} shows it, breakable only before its digest: for a table
 * cell, whose column then needs to be no wider than the longer of the two parts.
 */
export function imageCell(ref: string | null): Markup {
  if (ref === null) return html`<span class="muted">none</span>`;
  const short = `${shortImage(ref)}…`;
  const at = short.indexOf("@");
  if (at <= 0) return image(ref);
  return html`<code class="img split" title="${ref}"><span>${short.slice(0, at)}</span><wbr><span>${short.slice(at)}</span></code>`;
}

const DIGEST = "sha256:";
const HEX = /^[0-9a-f]{64}/;
/** Whether a character can be part of an image reference's repository (`registry:5000/org/name`). */
function inReference(c: string | undefined): boolean {
  return c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c === "." || c === "-" || c === "_" || c === "/" || c === ":");
}

/**
 * A sentence with every image reference and digest in it shortened (the full value on hover),
 * the rest escaped as text. Scans with `indexOf`, never a backtracking regex: sentences can hold
 * what a plugin's manifest or an event said.
 */
export function richText(text: string): Markup {
  const parts: Markup[] = [];
  let from = 0;
  for (let at = text.indexOf(DIGEST, from); at >= 0; at = text.indexOf(DIGEST, from)) {
    const hex = text.slice(at + DIGEST.length, at + DIGEST.length + 64);
    if (!HEX.test(hex)) {
      parts.push(html`${text.slice(from, at + DIGEST.length)}`);
      from = at + DIGEST.length;
      continue;
    }
    const end = at + DIGEST.length + 64;
    let start = at;
    if (text[at - 1] === "@") {
      // An image reference: back to the start of its repository.
      start = at - 1;
      while (start > from && inReference(text[start - 1])) start -= 1;
    }
    const value = text.slice(start, end);
    parts.push(html`${text.slice(from, start)}`, start === at ? hash(value) : image(value));
    from = end;
  }
  parts.push(html`${text.slice(from)}`);
  return html`${parts}`;
}

/** A hash or digest shortened (`sha256:` and 12 hex), the full value on hover. */
export function hash(value: string): Markup {
  const keep = value.startsWith(DIGEST) ? DIGEST.length + 12 : 12;
  return html`<code class="img" title="${value}">${value.length > keep + 2 ? `${value.slice(0, keep)}…` : value}</code>`;
}

const STATUS_MARK: Readonly<Record<PluginStatus, string>> = { running: "●", held_back: "◐", stopped: "○", deleted: "✕" };

/** A plugin's state in colour and words. */
export function statusBadge(s: PluginStatus): Markup {
  return html`<span class="badge ${s}"><span aria-hidden="true">${STATUS_MARK[s]}</span>${statusText(s)}</span>`;
}

/**
 * A signature verdict in colour and one word (`verified`, `trusted`, `refused`), who signed it
 * beside it, and what it means on hover (the words of `src/app/wording.ts`).
 */
export function verdictBadge(v: SignatureView | null, o: { readonly who?: boolean } = {}): Markup {
  if (v === null) return html`<span class="muted" title="${verdictHelp(null)}">not checked yet</span>`;
  const cls = v.outcome === "verified" ? "good" : v.outcome === "refused" ? "bad" : "neutral";
  const badge = html`<span class="badge ${cls}" title="${verdictHelp(v.outcome)}">${verdictWord(v.outcome)}</span>`;
  return o.who === false ? badge : html`${badge} <span class="small">${verdictCell(v)}</span>`;
}

const OUTCOME: Readonly<Record<EgressOutcome, { mark: string; words: string; help: string }>> = {
  allowed: { mark: "✓", words: "allowed", help: "the plugin may go there, and the proxy opened the tunnel" },
  refused: { mark: "✕", words: "refused", help: "refused by policy: not granted, or an address the proxy never dials" },
  failed: { mark: "!", words: "failed", help: "granted, but not reached: the name did not resolve, or DNS did not answer" },
};

/** An egress outcome in colour and words, what it means on hover. */
export function outcomeBadge(o: EgressOutcome): Markup {
  const { mark, words, help } = OUTCOME[o];
  return html`<span class="badge ${o}" title="${help}"><span aria-hidden="true">${mark}</span>${words}</span>`;
}

/** A yes/no check in colour and words. */
export function checkBadge(ok: boolean, yes: string, no: string): Markup {
  return html`<span class="badge ${ok ? "good" : "bad"}"><span aria-hidden="true">${ok ? "✓" : "✕"}</span>${ok ? yes : no}</span>`;
}

/** A list of words, or a muted "none". */
export function words(list: readonly string[] | null | undefined, none = "none"): Markup {
  if (list === null || list === undefined || list.length === 0) return html`<span class="muted">${none}</span>`;
  return html`<ul class="plain">${list.map((w) => html`<li>${w}</li>`)}</ul>`;
}

/** Rows of permissions: asked for, granted, run with. */
export function permissionRows(p: { asked: PermissionLists | null; granted: PermissionLists | null; effective: PermissionLists | null }): Markup {
  const kinds: [keyof PermissionLists, string][] = [["capabilities", "Capabilities"], ["egress", "Egress (host:port)"], ["secrets", "Secrets (by name)"], ["dataTiers", "Data tiers"], ["rules", "Kubernetes rules (views)"]];
  // A plugin that is no view asks for no rules: no row for them.
  const any = [p.asked, p.granted, p.effective].some((l) => (l?.rules.length ?? 0) > 0);
  return html`${kinds.filter(([k]) => k !== "rules" || any).map(([k, label]) => html`<tr><th scope="row">${label}</th><td data-label="Asked for">${words(p.asked?.[k], p.asked === null ? "–" : "none")}</td><td data-label="Granted">${words(p.granted?.[k], p.granted === null ? "no grant" : "none")}</td><td data-label="Runs with">${words(p.effective?.[k], p.effective === null ? "nothing runs" : "none")}</td></tr>`)}`;
}

/** Pretty JSON for a `<pre>`. */
export function json(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? "null";
}
