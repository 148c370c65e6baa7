/**
 * The console's half of a view (seed 002, FUN-17 "Delivering the token"; docs/adr/0075). The
 * plugin page frames the view's entry on the plugin proxy's origin in
 * `<iframe sandbox="allow-scripts allow-same-origin" data-openfief-view …>`; this script:
 *
 *   - mints a PluginToken at once, in parallel with the iframe's load (`POST /api/v1/plugin-tokens`,
 *     with the session cookie, same origin);
 *   - answers the view's `plugin:ready` with `openfief:init {protocolVersion: 1, token, theme,
 *     …context}` once the mint is done;
 *   - mints again when two thirds of the token's life have passed (well before 80 %) and pushes
 *     `openfief:token-refreshed`;
 *   - sends `openfief:auth-failed {reason}` when the mint refuses (401, 403, 404, 409); a mint that
 *     fails otherwise (503, the network) is tried again until the token ends;
 *   - names the plugin proxy's origin as the target of every message (never `*`), and takes a
 *     message only from the iframe's window (`event.source`) at that origin (`event.origin`).
 *
 * The token is held in a variable of this module only: never in storage, a URL or the DOM.
 * Served as a file (the console's CSP allows no inline script); no dependencies.
 */

/** The protocol's version (the SDK's `PROTOCOL_VERSION`). */
export const PROTOCOL_VERSION = 1;
/** How far into a token's life the console mints the next one: before FUN-17's 80 %, with room for retries. */
export const REFRESH_FRACTION = 2 / 3;
/** Mint answers that are final: the view can no longer act until something changes. */
export const REFUSALS = new Set([400, 401, 403, 404, 409]);
/** Waits between mints that failed but may pass. */
const RETRY_MS = [1000, 2000, 5000, 10000];

function defaults(o) {
  return {
    win: o.window ?? globalThis.window,
    doFetch: o.fetch ?? ((...a) => globalThis.fetch(...a)),
    later: o.setTimeout ?? ((f, ms) => globalThis.setTimeout(f, ms)),
    cancel: o.clearTimeout ?? ((t) => globalThis.clearTimeout(t)),
    now: o.now ?? (() => Date.now()),
    onStatus: o.onStatus ?? (() => undefined),
  };
}

/**
 * When a JWT says it was issued (ms), or null: read only to schedule the next mint from the
 * token's own life (its `iat` is whole seconds, and the answer arrives after it), never trusted.
 */
export function issuedAtOf(token) {
  const part = typeof token === "string" ? token.split(".")[1] : undefined;
  if (part === undefined) return null;
  try {
    const claims = JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "=")));
    return typeof claims?.iat === "number" ? claims.iat * 1000 : null;
  } catch {
    return null;
  }
}

/** One mint: the token, when it was issued and when it ends, or why not and whether it is final. */
async function mintOnce(doFetch, mintUrl, installationId, now) {
  let res;
  try {
    res = await doFetch(mintUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ installationId }),
    });
  } catch {
    return { ok: false, final: false, reason: "unreachable" };
  }
  let body = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON: the reason is the status alone.
  }
  if (res.ok && typeof body?.token === "string" && typeof body?.expiresAt === "string") {
    const expiresAt = Date.parse(body.expiresAt);
    return { ok: true, token: body.token, expiresAt, issuedAt: Math.min(issuedAtOf(body.token) ?? now(), expiresAt) };
  }
  // The console's API answers {code, message, reason}: the mint's reason when it has one.
  const reason = typeof body?.reason === "string" ? body.reason : typeof body?.code === "string" ? body.code : `http_${res.status}`;
  return { ok: false, final: REFUSALS.has(res.status), reason: reason.slice(0, 100), status: res.status };
}

/**
 * Mounts the console's side of one view. `frame` is the iframe (its `src` names the plugin
 * proxy's origin); `mintUrl` the console's JSON mint route; `installationId` the view's;
 * `context` what `openfief:init` carries besides the token (theme, gatewayUrl, …). The rest
 * (`window`, `fetch`, timers, `now`, `onStatus`) is for tests.
 */
export function mountView(options) {
  const { win, doFetch, later, cancel, now, onStatus } = defaults(options);
  const { frame, mintUrl, installationId } = options;
  const context = { ...(options.context ?? {}) };
  const target = new URL(frame.src).origin;
  if (target === "null" || target === win.location?.origin) throw new TypeError("a view is framed from the plugin proxy's own origin, never the console's");

  /** The current token: here only. */
  let token = null;
  let expiresAt = 0;
  let issuedAt = 0;
  let failed = null;
  let ready = false;
  let initSent = false;
  let timer = null;
  let stopped = false;

  const post = (message) => {
    // Pinned: if the frame was navigated away from the plugin proxy, the browser drops it.
    frame.contentWindow?.postMessage(message, target);
  };

  /** Tells the view what it needs to know now: its first token, a fresh one, or that it failed. */
  const deliver = () => {
    if (!ready) return;
    if (token === null) post({ type: "openfief:auth-failed", reason: failed ?? "unavailable" });
    else if (!initSent) post({ type: "openfief:init", protocolVersion: PROTOCOL_VERSION, token, ...context });
    else post({ type: "openfief:token-refreshed", token });
    if (token !== null) initSent = true;
  };

  const pause = (ms) => new Promise((resolve) => {
    timer = later(() => {
      timer = null;
      resolve();
    }, ms);
  });

  /**
   * Mints until it has a token or a final answer: a refusal, or failures past `until` (the end of
   * the token in hand, or half a minute for the first). Returns whether it got a token.
   */
  async function obtain(until) {
    for (let attempt = 0; !stopped; attempt++) {
      const r = await mintOnce(doFetch, mintUrl, installationId, now);
      if (stopped) return false;
      if (r.ok) {
        token = r.token;
        expiresAt = r.expiresAt;
        issuedAt = r.issuedAt;
        failed = null;
        onStatus({ state: "ok", expiresAt });
        return true;
      }
      const wait = RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)];
      if (r.final || now() + wait >= until) {
        token = null;
        failed = r.final ? r.reason : "unavailable";
        onStatus({ state: "failed", reason: failed, status: r.final ? r.status : null });
        return false;
      }
      await pause(wait);
    }
    return false;
  }

  /** Mints the next token when two thirds of this one's life (from its `iat`) have passed, and so on. */
  function schedule() {
    timer = later(async () => {
      timer = null;
      const got = await obtain(expiresAt);
      if (stopped) return;
      deliver();
      if (got) schedule();
    }, Math.max(0, issuedAt + (expiresAt - issuedAt) * REFRESH_FRACTION - now()));
  }

  // At once, while the browser loads the frame.
  const first = obtain(now() + 30_000).then((got) => {
    if (got && !stopped) schedule();
  });

  async function onMessage(event) {
    // Both factors, on every message: the frame's own window, at the plugin proxy's origin.
    if (event.source !== frame.contentWindow || event.origin !== target) return;
    const data = event.data;
    if (typeof data !== "object" || data === null || data.type !== "plugin:ready") return;
    await first;
    ready = true;
    // A view that loads again (it navigated within the proxy) starts over with an init.
    initSent = false;
    deliver();
  }

  win.addEventListener("message", onMessage);
  return {
    /** The origin every message is sent to. */
    target,
    /** Resolves once the first mint has answered. */
    started: first,
    stop() {
      stopped = true;
      if (timer !== null) cancel(timer);
      win.removeEventListener("message", onMessage);
    },
  };
}

/** Reads a view's settings from its iframe's data attributes (server-rendered: no inline script). */
export function viewSettings(frame, doc) {
  const d = frame.dataset;
  const theme = doc.documentElement.dataset.theme === "dark" ? "dark" : "light";
  return {
    frame,
    mintUrl: d.mintUrl,
    installationId: d.installationId,
    context: { theme, gatewayUrl: d.gatewayUrl, installationId: d.installationId, installationName: d.installationName, clusterId: d.clusterId, user: d.user },
  };
}

/** Why a mint was refused, in the words of the person looking at the page. */
const REASONS = {
  view_not_running: "its grant does not give it the view capability, or nothing of it runs (look at Approval below)",
  deleting: "the plugin is being removed",
  can_view: "you may not view this plugin",
  no_installation: "the plugin is gone",
  unavailable: "the console could not be reached; reload the page to try again",
};

/** The words a status gives on the page (never the token). */
export function describe(s) {
  if (s.state === "ok") return `The view acts as you, within what its grant allows, through a PluginToken the console renews before it ends (${new Date(s.expiresAt).toLocaleTimeString()}).`;
  const why = s.status === 401 ? "your session ended or is not valid here: sign in again" : REASONS[s.reason] ?? "the console refused its token";
  return `The view cannot act: ${why} (${s.reason}).`;
}

// On the plugin page: mount every framed view, and say how it stands beside it.
if (typeof document !== "undefined") {
  for (const frame of document.querySelectorAll("iframe[data-openfief-view]")) {
    const status = document.getElementById(frame.dataset.statusId ?? "");
    mountView({
      ...viewSettings(frame, document),
      onStatus: (s) => {
        if (status === null) return;
        status.textContent = describe(s);
        status.dataset.state = s.state;
      },
    });
  }
}
