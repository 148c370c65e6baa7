/**
 * @openfief/sdk-browser: the browser SDK for an OpenFief view plugin's UI (seed 002, FUN-17
 * "Delivering the token"). The UI runs in the console's sandboxed iframe on the plugin proxy's
 * origin; the console mints a PluginToken for the signed-in user and hands it over by
 * `postMessage`. This module is that handshake's other half, plus what a UI needs to use the token:
 *
 *   - `getToken()`: the current PluginToken (waits for the console's first one);
 *   - `fetch(url, init)`: the token attached as `Authorization: Bearer`, retried once on a 401
 *     (to ride out a refresh racing the call); only to the gateway and the plugin proxy;
 *   - `kube(path, init)`: `fetch` of a Kubernetes path through the gateway;
 *   - `watch(path, handlers)`: a Kubernetes watch through the gateway that reconnects near its
 *     token's end with the last `resourceVersion`, so the UI sees one uninterrupted stream.
 *
 * The protocol (version 1): the SDK posts `plugin:ready`; the console answers `openfief:init
 * {protocolVersion: 1, token, theme, …context}`, later `openfief:token-refreshed {token}` before
 * 80 % of the token's life, or `openfief:auth-failed {reason}` when it can no longer mint. Every
 * message the SDK sends names the console's origin as its target; every message it receives is
 * taken only from the parent window (`event.source`) at the console's origin (`event.origin`).
 * The token lives in a variable of this module: never in storage, a URL or the DOM.
 *
 * Served by the plugin proxy at `/plugins/sdk/<version>/sdk.js`; it imports `./context.js` beside
 * it, which the proxy writes with the deployment's origins. No dependencies, no build step.
 * Apache-2.0.
 */
import { CONSOLE_ORIGIN, GATEWAY_ORIGIN, PLUGIN_PROXY_ORIGIN } from "./context.js";

/** The postMessage protocol's version. */
export const PROTOCOL_VERSION = 1;
/** This SDK's version: the `<version>` of the URL it is served at. */
export const SDK_VERSION = "0.1.0";

/** The view can no longer act: the console could not mint a token (`reason` says why). */
export class AuthFailedError extends Error {
  /** @param {string} reason */
  constructor(reason) {
    super(`the console could not give this view a token (${reason})`);
    this.name = "AuthFailedError";
    /** @readonly */
    this.reason = reason;
  }
}

/** The seconds-since-epoch `exp` of a JWT, or null (read only to schedule; the gateway verifies). */
export function tokenExpiry(token) {
  const part = typeof token === "string" ? token.split(".")[1] : undefined;
  if (part === undefined) return null;
  try {
    const json = JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "=")));
    return typeof json.exp === "number" ? json.exp : null;
  } catch {
    return null;
  }
}

function isRecord(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function originOf(url) {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** The options with their defaults, checked. */
function settings(options) {
  const o = {
    win: options.window ?? globalThis.window,
    consoleOrigin: options.consoleOrigin ?? CONSOLE_ORIGIN,
    gatewayOrigin: options.gatewayOrigin ?? GATEWAY_ORIGIN,
    pluginProxyOrigin: options.pluginProxyOrigin ?? PLUGIN_PROXY_ORIGIN,
    doFetch: options.fetch ?? ((...a) => globalThis.fetch(...a)),
    later: options.setTimeout ?? ((f, ms) => globalThis.setTimeout(f, ms)),
    cancel: options.clearTimeout ?? ((t) => globalThis.clearTimeout(t)),
    now: options.now ?? (() => Date.now()),
    refreshWaitMs: options.refreshWaitMs ?? 2000,
  };
  if (o.win === undefined || o.win === null) throw new TypeError("createView needs a window");
  if (typeof o.consoleOrigin !== "string" || originOf(o.consoleOrigin) !== o.consoleOrigin) throw new TypeError("createView needs the console's origin (the plugin proxy's context.js names it)");
  return o;
}

/**
 * What the console told the view: the token (here only), the context, or why it failed; who
 * waits for a change; who listens. `take` applies one message already checked for its sender.
 */
function channel({ later, cancel }) {
  const st = { token: null, failure: null, context: null };
  let waiters = [];
  const listeners = { init: [], token: [], authFailed: [] };

  const settle = () => {
    const w = waiters;
    waiters = [];
    for (const x of w) x();
  };

  const emit = (kind, value) => {
    for (const f of listeners[kind]) {
      try {
        f(value);
      } catch {
        // A listener's failure is the plugin's; the protocol goes on.
      }
    }
  };

  const fail = (reason) => {
    st.token = null;
    st.failure = reason;
    settle();
    emit("authFailed", reason);
    return true;
  };

  const setToken = (t, kind, value) => {
    st.token = t;
    st.failure = null;
    settle();
    emit(kind, value);
    return true;
  };

  function take(data) {
    const hasToken = typeof data.token === "string" && data.token !== "";
    if (data.type === "openfief:init") {
      if (data.protocolVersion !== PROTOCOL_VERSION) return fail("protocol_version");
      if (!hasToken) return false;
      const { type: _t, token: _k, protocolVersion: _p, ...rest } = data;
      st.context = Object.freeze({ ...rest });
      return setToken(data.token, "init", st.context);
    }
    if (data.type === "openfief:token-refreshed") return hasToken && setToken(data.token, "token", tokenExpiry(data.token));
    if (data.type === "openfief:auth-failed") return fail(typeof data.reason === "string" ? data.reason.slice(0, 200) : "unknown");
    return false;
  }

  /** Resolves on the next token change (or failure), or after `ms`. */
  function change(ms) {
    return new Promise((resolve) => {
      let timer = null;
      const done = () => {
        if (timer !== null) cancel(timer);
        resolve();
      };
      waiters.push(done);
      if (ms !== undefined) timer = later(() => {
        waiters = waiters.filter((w) => w !== done);
        resolve();
      }, ms);
    });
  }

  const on = (kind, f) => {
    listeners[kind].push(f);
    return () => {
      listeners[kind] = listeners[kind].filter((g) => g !== f);
    };
  };

  return { st, take, change, on };
}

/**
 * Creates a view's connection to the console. Options (all optional in a browser):
 * `window` (the iframe's window), the three origins (default: the proxy's `context.js`),
 * `fetch`, `setTimeout`/`clearTimeout`, `now` (ms), `refreshWaitMs` (how long a 401 waits for a
 * fresher token before its one retry, default 2000).
 */
export function createView(options = {}) {
  const { win, consoleOrigin, gatewayOrigin, pluginProxyOrigin, doFetch, later, cancel, now, refreshWaitMs } = settings(options);
  const ch = channel({ later, cancel });
  const { st, change } = ch;
  const stats = { accepted: 0, ignored: 0 };

  function onMessage(event) {
    // Both factors, on every message: the parent window, at the console's origin.
    const fromConsole = event.source === win.parent && event.origin === consoleOrigin;
    if (fromConsole && isRecord(event.data) && typeof event.data.type === "string" && ch.take(event.data)) stats.accepted += 1;
    else stats.ignored += 1;
  }

  win.addEventListener("message", onMessage);
  const framed = win.parent !== undefined && win.parent !== null && win.parent !== win;
  if (framed) win.parent.postMessage({ type: "plugin:ready", protocolVersion: PROTOCOL_VERSION, sdkVersion: SDK_VERSION }, consoleOrigin);
  else st.failure = "not_framed";

  async function getToken() {
    while (st.token === null) {
      if (st.failure !== null) throw new AuthFailedError(st.failure);
      await change();
    }
    return st.token;
  }

  function target(input) {
    const url = new URL(String(input instanceof Request ? input.url : input), win.location?.href);
    if (url.origin !== gatewayOrigin && url.origin !== pluginProxyOrigin) {
      throw new TypeError(`the SDK sends the token only to the gateway (${gatewayOrigin}) and the plugin proxy (${pluginProxyOrigin}), not to ${url.origin}`);
    }
    return url;
  }

  function send(url, init, t) {
    const headers = new Headers(init.headers ?? {});
    headers.set("Authorization", `Bearer ${t}`);
    return doFetch(url.href, { ...init, headers, credentials: "omit", referrerPolicy: "no-referrer" });
  }

  async function viewFetch(input, init = {}) {
    const url = target(input);
    const used = await getToken();
    const first = await send(url, init, used);
    if (first.status !== 401) return first;
    // Once: with a newer token when one came (or comes within refreshWaitMs), else the same.
    if (st.token === used) await change(refreshWaitMs);
    if (st.token === null && st.failure !== null) return first;
    return send(url, init, await getToken());
  }

  function gatewayUrl(path) {
    const base = st.context?.gatewayUrl;
    if (typeof base !== "string" || originOf(base) !== gatewayOrigin) throw new TypeError("the console named no gateway on the gateway's origin");
    if (typeof path !== "string" || !path.startsWith("/")) throw new TypeError("a Kubernetes path starts with /");
    return `${base.replace(/\/+$/, "")}${path}`;
  }

  async function kube(path, init = {}) {
    await getToken();
    return viewFetch(gatewayUrl(path), init);
  }

  function watch(path, handlers) {
    return startWatch({ path, handlers, kube, later, cancel, now, current: () => st.token });
  }

  return {
    getToken,
    fetch: viewFetch,
    kube,
    watch,
    /** Resolves with the console's context (installation, theme, gateway URL, …) once it sent `openfief:init`. */
    async ready() {
      await getToken();
      return st.context;
    },
    get context() {
      return st.context;
    },
    get theme() {
      return st.context?.theme ?? null;
    },
    /** Why the view cannot act, or null. */
    get failure() {
      return st.failure;
    },
    /** Messages taken and ignored so far (tests, diagnostics). */
    get stats() {
      return { ...stats };
    },
    /** Listens for `init`, `token` (a refresh) or `authFailed`; returns a function that stops listening. */
    on: ch.on,
    close() {
      win.removeEventListener("message", onMessage);
    },
  };
}

/** How long before its token's end a watch reconnects: a tenth of what is left when it connects. */
export const WATCH_RECONNECT_FRACTION = 0.9;
const BACKOFF_MS = [1000, 2000, 5000, 10000, 30000];

/** A watch through the gateway that reconnects near its token's end with the last resourceVersion. */
function startWatch({ path, handlers, kube, later, cancel, now, current }) {
  let resourceVersion = handlers.resourceVersion ?? "";
  let stopped = false;
  let controller = null;
  let timer = null;
  let renew = null;
  let failures = 0;
  let connections = 0;

  const url = () => {
    const sep = path.includes("?") ? "&" : "?";
    const rv = resourceVersion === "" ? "" : `&resourceVersion=${encodeURIComponent(resourceVersion)}`;
    return `${path}${sep}watch=1&allowWatchBookmarks=true${rv}`;
  };

  const reconnect = (ms) => {
    if (stopped) return;
    timer = later(() => {
      timer = null;
      void connect();
    }, ms);
  };

  const backoff = () => {
    failures += 1;
    reconnect(BACKOFF_MS[Math.min(failures, BACKOFF_MS.length) - 1]);
  };

  const reset = () => {
    resourceVersion = "";
    handlers.onReset?.();
  };

  /** One line of the stream: "more", or why the stream is over ("reset" after a 410, "error"). */
  function take(line) {
    if (line.trim() === "") return "more";
    let event;
    try {
      event = JSON.parse(line);
    } catch {
      return "more";
    }
    if (event.type === "ERROR") {
      if (event.object?.code === 410) return "reset";
      handlers.onError?.(event.object ?? {});
      return "error";
    }
    const rv = event.object?.metadata?.resourceVersion;
    if (typeof rv === "string" && rv !== "") resourceVersion = rv;
    if (event.type !== "BOOKMARK") handlers.onEvent(event);
    return "more";
  }

  /** Reads the stream to its end: "ended", "reset" or "error". */
  async function read(res) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    while (true) {
      const { done, value } = await reader.read();
      if (done) return "ended";
      buffered += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const r = take(line);
        if (r !== "more") {
          void reader.cancel().catch(() => undefined);
          return r;
        }
      }
    }
  }

  function renewNearExpiry(mine) {
    const exp = tokenOf(current);
    if (exp === null) return;
    // Near the end of the token this connection was authorised with: go again with a fresh one.
    renew = later(() => {
      renew = null;
      mine.planned = true;
      mine.controller.abort();
    }, Math.max(0, (exp * 1000 - now()) * WATCH_RECONNECT_FRACTION));
  }

  function after(outcome) {
    if (outcome === "reset") {
      reset();
      return reconnect(0);
    }
    if (outcome === "error") return backoff();
    // The server ended the watch (its timeout), or it was renewed: go on from where it was.
    reconnect(0);
  }

  async function connect() {
    if (stopped) return;
    connections += 1;
    const mine = { controller: new AbortController(), planned: false };
    controller = mine.controller;
    try {
      const res = await kube(url(), { signal: mine.controller.signal });
      if (res.status === 410) return after("reset");
      if (!res.ok) {
        handlers.onError?.({ code: res.status });
        return backoff();
      }
      failures = 0;
      renewNearExpiry(mine);
      const outcome = await read(res);
      if (renew !== null) cancel(renew);
      after(outcome);
    } catch (err) {
      if (renew !== null) cancel(renew);
      if (stopped) return;
      if (mine.planned) return reconnect(0);
      if (err instanceof AuthFailedError) return handlers.onError?.({ code: 401, reason: err.reason });
      handlers.onError?.({ code: 0, message: String(err?.message ?? err) });
      backoff();
    }
  }

  void connect();
  return {
    /** The last resourceVersion seen. */
    get resourceVersion() {
      return resourceVersion;
    },
    /** How many connections were made so far. */
    get connections() {
      return connections;
    },
    stop() {
      stopped = true;
      if (timer !== null) cancel(timer);
      if (renew !== null) cancel(renew);
      controller?.abort();
    },
  };
}

function tokenOf(current) {
  const t = current();
  return t === null ? null : tokenExpiry(t);
}

let shared = null;

/** The page's one view connection (made on first use). */
export function view() {
  shared ??= createView();
  return shared;
}

/** The current PluginToken of the page's view. */
export function getToken() {
  return view().getToken();
}

/** `fetch` with the page's PluginToken, retried once on a 401. */
function fetchWithToken(input, init) {
  return view().fetch(input, init);
}
export { fetchWithToken as fetch };

/** `fetch` of a Kubernetes path through the gateway. */
export function kube(path, init) {
  return view().kube(path, init);
}

/** A Kubernetes watch through the gateway; see {@link createView}. */
export function watch(path, handlers) {
  return view().watch(path, handlers);
}
