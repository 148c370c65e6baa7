/**
 * The page around every console page: the head (the stylesheet, htmx with eval off and no
 * injected styles, no inline script or style anywhere), the navigation with the current page
 * marked, who is signed in and a sign-out form, and the footer.
 */
import type { UserSession } from "../../app/index.js";
import { assetUrls } from "./assets.js";
import { html, trusted } from "./html.js";
import type { Markup } from "./html.js";

/** A page of the navigation. */
export type Section = "plugins" | "log" | "egress" | "integrity" | "replay" | "none";

const NAV: readonly [Section, string, string][] = [
  ["plugins", "/", "Plugins"],
  ["log", "/log", "Log"],
  ["egress", "/egress", "Egress"],
  ["integrity", "/integrity", "Integrity"],
  ["replay", "/replay", "Replay"],
];

/** htmx's settings: no eval (the CSP forbids it anyway), no style element injected. */
const HTMX_CONFIG = trusted(`<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false}'>`);

/** What a page is. */
export interface PageParts {
  readonly title: string;
  readonly section: Section;
  readonly session: UserSession | null;
  readonly body: Markup;
  /** A line under the body, such as the log's head. */
  readonly footer?: Markup;
}

/** A whole page. */
export function page(p: PageParts): string {
  const a = assetUrls();
  const nav = NAV.map(([s, href, label]) => html`<li><a href="${href}"${s === p.section ? trusted(' aria-current="page"') : ""}>${label}</a></li>`);
  const who = p.session === null ? "" : html`<div class="who"><span class="user">${p.session.user}</span><span class="role" title="${p.session.role === "owner" ? "may approve and change plugins" : "may look, not change"}">${p.session.role}</span><form method="post" action="/signout"><button type="submit">Sign out</button></form></div>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${p.title} · OpenFief</title>
${HTMX_CONFIG}
<link rel="stylesheet" href="${a.css}">
<link rel="icon" href="${a.icon}" type="image/svg+xml">
<script src="${a.htmx}" defer></script>
</head>
<body>
<header class="top"><div class="bar">
<a class="brand" href="/" title="OpenFief console"><img class="logo" src="${a.icon}" alt="" width="22" height="22"><span class="name">OpenFief</span> <span class="sub">console</span></a>
${p.session === null ? "" : html`<nav aria-label="Console"><ul class="nav">${nav}</ul></nav>`}
${who}
</div></header>
<main id="main">
${p.body}
</main>
<footer>${p.footer ?? ""}</footer>
</body>
</html>
`.toString();
}
