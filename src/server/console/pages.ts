/**
 * The console's routes: the pages (plugins, one plugin, log, egress, integrity, replay), the
 * approval form, signing in with a one-time link and signing out, and the error page. Every page
 * is whole HTML that works without JavaScript; htmx re-fetches a page and swaps a part of it.
 */
import { AppError, sessionProblemText } from "../../app/index.js";
import type { AppErrorCode, UserSession } from "../../app/index.js";
import { checkOrigin, clearedCookie, sessionCookie } from "../auth.js";
import { mediaType, readBody, redirect, sendHtml } from "../http.js";
import type { Access, RequestContext, Route } from "../routes.js";
import { egressPage } from "./egress-page.js";
import { html } from "./html.js";
import { integrityPage } from "./integrity-page.js";
import { proofDownload } from "./witnesses-card.js";
import { page } from "./layout.js";
import { logPage, logRows } from "./log-page.js";
import { approveForm, MAX_FORM_BYTES, pluginPageWithView, uninstallForm, uninstallPage } from "./plugin-page.js";
import { pluginsPage } from "./plugins-page.js";
import { replayPage } from "./replay-page.js";

const PAGE_STATUSES = [200, 400, 401, 403, 404, 413, 500, 503];

function pageRoute(path: string, summary: string, query: readonly string[], render: (ctx: RequestContext) => string | Promise<string>, access: Access = "viewer"): Route {
  return {
    method: "GET", path, kind: "page", access, summary, query, headers: [], statuses: PAGE_STATUSES,
    handle: async (ctx) => sendHtml(ctx.res, 200, await render(ctx)),
  };
}

const HOW_TO_SIGN_IN = html`<p>Open the sign-in link <code>openfief up</code> printed in its terminal, or ask for a new one in another terminal:</p><pre>openfief login --link              # an owner's link
openfief login --link --role viewer  # a link for someone who may only look</pre>`;

/** In a cluster: sign in with a token the cluster's API server accepts. */
const HOW_TO_SIGN_IN_CLUSTER = html`<p>Sign in with a token the cluster accepts: a ServiceAccount's token or your OIDC id token.</p><pre>kubectl create token NAME -n NAMESPACE --duration 1h</pre>
<form method="post" action="/signin" class="signin-form"><label for="token">Token</label> <input id="token" name="token" type="password" autocomplete="off" required maxlength="12000"> <button type="submit">Sign in</button></form>
<p class="small muted">The cluster decides who may look (get plugins.openfief.io) and who may approve (update plugingrants.openfief.io). The token is checked once and never kept: the console keeps a session of its own.</p>`;

/** The longest sign-in form (a long OIDC id token fits). */
const MAX_SIGN_IN_FORM_BYTES = 16 * 1024;
/** The media type of the console's forms. */
const FORM = "application/x-www-form-urlencoded";

const TITLES: Partial<Record<AppErrorCode, string>> = {
  not_found: "Not found", unauthorized: "Sign in", forbidden: "Not allowed", precondition_failed: "Changed since you looked",
  precondition_required: "Reload and try again", usage: "That request is not right", too_large: "Too large", unavailable: "Try again", log_broken: "The log does not hold",
};

/** The page for a refusal, with the app's status; `cluster`: the console in a cluster (sign in with a token). */
export function errorPage(e: AppError, session: UserSession | null, cluster = false): string {
  const title = TITLES[e.code] ?? "Something went wrong";
  const how = cluster ? HOW_TO_SIGN_IN_CLUSTER : HOW_TO_SIGN_IN;
  const body = html`<section class="card callout bad signin"><h1>${title}</h1><p>${e.message}</p>${e.code === "unauthorized" ? how : html`<p><a href="/">Back to the plugins</a></p>`}</section>`;
  return page({ title, section: "none", session, body });
}

async function signIn(ctx: RequestContext): Promise<void> {
  const { app, query, req, res, settings } = ctx;
  if (app.cluster !== undefined) {
    sendHtml(res, 200, page({ title: "Sign in", section: "none", session: null, body: html`<section class="card signin"><h1>Sign in to the OpenFief console</h1>${HOW_TO_SIGN_IN_CLUSTER}</section>` }));
    return;
  }
  const code = query.get("code");
  if (code === undefined) {
    sendHtml(res, 200, page({ title: "Sign in", section: "none", session: null, body: html`<section class="card signin"><h1>Sign in to the OpenFief console</h1>${HOW_TO_SIGN_IN}<p class="small muted">A link works once, for ten minutes.</p></section>` }));
    return;
  }
  // A link followed from another site could sign this browser in as someone else: refuse it.
  const site = req.headers["sec-fetch-site"];
  if (site === "cross-site" || site === "same-site") throw new AppError("forbidden", "this sign-in link was opened from another site: paste the link openfief printed into the address bar yourself");
  const r = await app.sessions.redeemSignIn(code);
  if (!r.ok) throw new AppError("unauthorized", sessionProblemText(r.problem));
  app.logger.info({ user: r.session.user, role: r.session.role }, "signed in to the console");
  redirect(res, "/", { "Set-Cookie": sessionCookie(r.minted, settings.tls, app.clock()) });
}

/**
 * In a cluster: the sign-in form's token, checked by the cluster (TokenReview, then the roles'
 * reviews), becomes a console session naming the user, their groups and uid, and their role. The
 * token itself is neither kept nor logged. The form must come from the console's own origin (a
 * page elsewhere could otherwise sign this browser in as someone else).
 */
async function signInWithToken(ctx: RequestContext): Promise<void> {
  const { app, req, res, settings } = ctx;
  if (app.cluster === undefined) throw new AppError("usage", "sign in with the link openfief up printed (openfief login --link)");
  checkOrigin(req, settings.origins, "cookie");
  if (mediaType(req) !== "application/x-www-form-urlencoded") throw new AppError("unsupported_media_type", "send the token from the console's sign-in form");
  const form = new URLSearchParams(await readBody(req, MAX_SIGN_IN_FORM_BYTES, "the form"));
  const u = await app.cluster.authenticate(form.get("token")?.trim() ?? undefined);
  const minted = await app.sessions.mintKubeSession(u.user, u.kube, u.role);
  app.logger.info({ user: u.user, role: u.role }, "signed in to the console with the cluster's identity");
  redirect(res, "/", { "Set-Cookie": sessionCookie(minted, settings.tls, app.clock()) });
}

function signOut(ctx: RequestContext): void {
  checkOrigin(ctx.req, ctx.settings.origins, "bearer");
  redirect(ctx.res, "/signin", { "Set-Cookie": clearedCookie(ctx.settings.tls) });
}

/** Every route of the console. */
export function consolePageRoutes(): Route[] {
  return [
    pageRoute("/", "the plugins", [], pluginsPage),
    // Where a newcomer looks for the list, beside /plugins/{name}.
    pageRoute("/plugins", "the plugins", [], pluginsPage),
    pageRoute("/plugins/{name}", "one plugin", ["approved"], pluginPageWithView),
    {
      method: "POST", path: "/plugins/{name}/approve", kind: "page", access: "owner", summary: "the approval form", query: [], headers: [], statuses: [303, 400, 401, 403, 404, 409, 412, 413, 415, 428, 500, 503],
      body: { types: [FORM], maxBytes: MAX_FORM_BYTES, unsupported: "send the approval from the console's form" },
      handle: async (ctx) => {
        const r = await approveForm(ctx);
        if ("redirect" in r) redirect(ctx.res, r.redirect);
        else sendHtml(ctx.res, r.status, r.markup);
      },
    },
    pageRoute("/plugins/{name}/uninstall", "the uninstall confirmation", [], uninstallPage, "owner"),
    {
      method: "POST", path: "/plugins/{name}/uninstall", kind: "page", access: "owner", summary: "the uninstall form", query: [], headers: [], statuses: [303, 400, 401, 403, 404, 409, 412, 413, 415, 428, 500, 503],
      body: { types: [FORM], maxBytes: MAX_FORM_BYTES, unsupported: "send the uninstall from the console's form" },
      handle: async (ctx) => {
        const r = await uninstallForm(ctx);
        if ("redirect" in r) redirect(ctx.res, r.redirect);
        else sendHtml(ctx.res, r.status, r.markup);
      },
    },
    pageRoute("/log", "the log", ["plugin", "type", "since", "until", "before", "limit"], logPage),
    pageRoute("/log/rows", "the log's newer rows (htmx)", ["plugin", "type", "since", "until", "after"], logRows),
    pageRoute("/egress", "egress decisions", ["plugin", "window"], egressPage),
    pageRoute("/integrity", "the log's integrity", [], integrityPage),
    { method: "GET", path: "/integrity/proof", kind: "page", access: "viewer", summary: "an event's proof (C2SP tlog-proof) as a download", query: ["seq"], headers: [], statuses: PAGE_STATUSES, handle: proofDownload },
    pageRoute("/replay", "the state as of an event", ["at"], replayPage),
    { method: "GET", path: "/signin", kind: "page", access: "public", summary: "sign in with a one-time link", query: ["code"], headers: [], statuses: [200, 303, 400, 401, 403, 500, 503], handle: signIn },
    { method: "POST", path: "/signin", kind: "page", access: "public", summary: "sign in with a token the cluster accepts (the console in a cluster)", query: [], headers: [], statuses: [303, 400, 401, 403, 413, 415, 500, 503],
      body: { types: [FORM], maxBytes: MAX_SIGN_IN_FORM_BYTES, unsupported: "send the token from the console's sign-in form" }, handle: signInWithToken },
    { method: "POST", path: "/signout", kind: "page", access: "public", summary: "sign out", query: [], headers: [], statuses: [303, 400, 403, 413, 415, 500, 503],
      body: { types: [FORM], maxBytes: 1024 }, handle: signOut },
  ];
}
