/**
 * The browser SDK against a fake window, a fake parent, a fake fetch and a hand-driven clock (no
 * browser): the handshake, the origin and source checks on every message, getToken, the one
 * retry on a 401, and the watch helper's reconnects.
 */
import { describe, expect, it } from "vitest";
import { AuthFailedError, PROTOCOL_VERSION, SDK_VERSION, WATCH_RECONNECT_FRACTION, createView, tokenExpiry } from "./sdk.js";
import type { ViewOptions, WatchEvent } from "./sdk.js";

const CONSOLE = "http://127.0.0.1:4780";
const PROXY = "http://localhost:4781";
const GATEWAY = "http://localhost:4782";
const GATEWAY_URL = `${GATEWAY}/clusters/embedded`;

type Listener = (event: { data: unknown; origin: string; source: unknown }) => void;

/** A JWT-shaped string whose payload says `exp` (the SDK only reads it to schedule). */
function jwt(exp: number, tag = "a"): string {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
  return `${b64({ alg: "ES256" })}.${b64({ exp, tag })}.sig-${tag}`;
}

/** A clock and timers driven by the test. */
class Clock {
  now = 1_000_000;
  #timers: Array<{ at: number; f: () => void; id: number }> = [];
  #next = 1;
  setTimeout = (f: () => void, ms: number): number => {
    const id = this.#next++;
    this.#timers.push({ at: this.now + ms, f, id });
    return id;
  };
  clearTimeout = (id: unknown): void => {
    this.#timers = this.#timers.filter((t) => t.id !== id);
  };
  /** Moves time on, running each timer that comes due (and what it starts) in order. */
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    for (;;) {
      await settle();
      const due = this.#timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.now = Math.max(this.now, due.at);
      due.f();
    }
    this.now = end;
    await settle();
  }
  get pending(): number {
    return this.#timers.length;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

/** The iframe's window and its parent, recording what the SDK posts. */
function fakeWindow() {
  const listeners: Listener[] = [];
  const posted: Array<{ message: unknown; targetOrigin: string }> = [];
  const parent = { postMessage: (message: unknown, targetOrigin: string) => posted.push({ message, targetOrigin }) };
  const other = { postMessage: () => undefined };
  const win = {
    parent,
    location: { href: `${PROXY}/plugins/ledger-view/sha256:${"a".repeat(64)}/console/index.html` },
    addEventListener: (_t: "message", l: Listener) => listeners.push(l),
    removeEventListener: (_t: "message", l: Listener) => listeners.splice(listeners.indexOf(l), 1),
  };
  const deliver = (data: unknown, origin = CONSOLE, source: unknown = parent) => {
    for (const l of [...listeners]) l({ data, origin, source });
  };
  return { win, parent, other, posted, deliver, listeners };
}

interface Call {
  url: string;
  init: RequestInit;
  auth: string | null;
}

function setup(extra: Partial<ViewOptions> = {}, answer: (c: Call, n: number) => Response | Promise<Response> = () => new Response("{}", { status: 200 })) {
  const w = fakeWindow();
  const clock = new Clock();
  const calls: Call[] = [];
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const c = { url, init, auth: new Headers(init.headers).get("authorization") };
    calls.push(c);
    return answer(c, calls.length);
  };
  const view = createView({
    window: w.win, consoleOrigin: CONSOLE, pluginProxyOrigin: PROXY, gatewayOrigin: GATEWAY, fetch,
    setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout, now: () => clock.now, ...extra,
  });
  const init = (token: string, more: Record<string, unknown> = {}) => w.deliver({ type: "openfief:init", protocolVersion: 1, token, theme: "dark", gatewayUrl: GATEWAY_URL, installationId: "ledger-view.3", ...more });
  return { ...w, view, clock, calls, init };
}

/** Whether a promise has settled yet, without waiting for it. */
async function state<T>(p: Promise<T>): Promise<"pending" | "resolved" | "rejected"> {
  let s: "pending" | "resolved" | "rejected" = "pending";
  p.then(() => { s = "resolved"; }, () => { s = "rejected"; });
  await settle();
  return s;
}

describe("the handshake", () => {
  it("posts plugin:ready to the parent with the console's origin as the target, once", () => {
    const t = setup();
    expect(t.posted).toEqual([{ message: { type: "plugin:ready", protocolVersion: PROTOCOL_VERSION, sdkVersion: SDK_VERSION }, targetOrigin: CONSOLE }]);
  });

  it("gives getToken the token of openfief:init, and the rest of the message as the context", async () => {
    const t = setup();
    const pending = t.view.getToken();
    expect(await state(pending)).toBe("pending");
    t.init("tok-1");
    await expect(pending).resolves.toBe("tok-1");
    expect(t.view.context).toEqual({ theme: "dark", gatewayUrl: GATEWAY_URL, installationId: "ledger-view.3" });
    expect(JSON.stringify(t.view.context)).not.toContain("tok-1");
    expect(t.view.theme).toBe("dark");
  });

  it("refuses to start without the console's origin (the shipped context.js names none)", () => {
    const w = fakeWindow();
    expect(() => createView({ window: w.win })).toThrow(/console's origin/);
    expect(w.posted).toEqual([]);
  });

  it("says it is not framed when it has no parent, and gives no token", async () => {
    const w = fakeWindow();
    const self = { ...w.win, parent: null };
    const view = createView({ window: self, consoleOrigin: CONSOLE, gatewayOrigin: GATEWAY, pluginProxyOrigin: PROXY });
    await expect(view.getToken()).rejects.toMatchObject({ name: "AuthFailedError", reason: "not_framed" });
  });
});

describe("every message is checked for its origin and its source", () => {
  const kinds = [
    ["openfief:init", (token: string) => ({ type: "openfief:init", protocolVersion: 1, token, gatewayUrl: GATEWAY_URL })],
    ["openfief:token-refreshed", (token: string) => ({ type: "openfief:token-refreshed", token })],
    ["openfief:auth-failed", () => ({ type: "openfief:auth-failed", reason: "forged" })],
  ] as const;
  const senders = [
    ["the parent at another origin", "http://evil.test", "parent"],
    ["the parent at the plugin proxy's origin", PROXY, "parent"],
    ["another window at the console's origin", CONSOLE, "other"],
    ["no window at the console's origin", CONSOLE, "none"],
    ["another window at another origin", "http://evil.test", "other"],
  ] as const;
  const cases = kinds.flatMap(([kind, make]) => senders.map(([who, origin, source]) => [kind, who, origin, source, make] as const));

  it.each(cases)("ignores %s from %s", async (kind, _who, origin, source, make) => {
    const t = setup();
    if (kind !== "openfief:init") t.init("real-token");
    const src = source === "parent" ? t.parent : source === "other" ? t.other : null;
    t.deliver(make("forged-token"), origin, src);
    expect(t.view.stats.ignored).toBe(1);
    if (kind === "openfief:init") expect(await state(t.view.getToken())).toBe("pending");
    else await expect(t.view.getToken()).resolves.toBe("real-token");
    expect(t.view.failure).toBeNull();
  });

  it.each([
    ["a string", "openfief:init"],
    ["null", null],
    ["an array", [{ type: "openfief:init", token: "x" }]],
    ["no type", { token: "x" }],
    ["an unknown type", { type: "openfief:grant-everything", token: "x" }],
    ["an init without a token", { type: "openfief:init", protocolVersion: 1 }],
    ["a refresh with an empty token", { type: "openfief:token-refreshed", token: "" }],
  ])("ignores %s from the console", async (_what, data) => {
    const t = setup();
    t.deliver(data);
    expect(t.view.stats).toEqual({ accepted: 0, ignored: 1 });
    expect(await state(t.view.getToken())).toBe("pending");
  });

  it("fails on an init of another protocol version rather than guessing", async () => {
    const t = setup();
    t.deliver({ type: "openfief:init", protocolVersion: 2, token: "x" });
    await expect(t.view.getToken()).rejects.toMatchObject({ reason: "protocol_version" });
  });
});

describe("refreshes and failures", () => {
  it("takes openfief:token-refreshed as the new token", async () => {
    const t = setup();
    t.init("tok-1");
    t.deliver({ type: "openfief:token-refreshed", token: "tok-2" });
    await expect(t.view.getToken()).resolves.toBe("tok-2");
  });

  it("rejects getToken with the reason of openfief:auth-failed, and recovers on a later token", async () => {
    const t = setup();
    const failed: string[] = [];
    t.view.on("authFailed", (r) => failed.push(r));
    t.init("tok-1");
    t.deliver({ type: "openfief:auth-failed", reason: "view_not_running" });
    const err = await t.view.getToken().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthFailedError);
    expect((err as AuthFailedError).reason).toBe("view_not_running");
    expect(failed).toEqual(["view_not_running"]);
    t.deliver({ type: "openfief:token-refreshed", token: "tok-3" });
    await expect(t.view.getToken()).resolves.toBe("tok-3");
  });

  it("rejects a getToken already waiting when the console says it failed", async () => {
    const t = setup();
    const waiting = t.view.getToken();
    t.deliver({ type: "openfief:auth-failed", reason: "permission_denied" });
    await expect(waiting).rejects.toMatchObject({ reason: "permission_denied" });
  });
});

describe("fetch", () => {
  it("attaches the token as a Bearer header, without credentials or a referrer", async () => {
    const t = setup();
    t.init("tok-1");
    const res = await t.view.fetch(`${GATEWAY_URL}/apis/openfief.io/v1alpha1/plugins`);
    expect(res.status).toBe(200);
    expect(t.calls).toHaveLength(1);
    expect(t.calls[0]?.auth).toBe("Bearer tok-1");
    expect(t.calls[0]?.init).toMatchObject({ credentials: "omit", referrerPolicy: "no-referrer" });
  });

  it.each([
    ["another site", "http://evil.test/exfil"],
    ["the console", `${CONSOLE}/api/v1/plugins`],
    ["the gateway's host on another port", "http://localhost:9999/x"],
  ])("refuses to send the token to %s", async (_what, url) => {
    const t = setup();
    t.init("tok-1");
    await expect(t.view.fetch(url)).rejects.toThrow(/only to the gateway/);
    expect(t.calls).toEqual([]);
  });

  it("resolves a relative URL against the plugin proxy's page", async () => {
    const t = setup();
    t.init("tok-1");
    await t.view.fetch("/installations/ledger-view.3/controller/status");
    expect(t.calls[0]?.url).toBe(`${PROXY}/installations/ledger-view.3/controller/status`);
  });

  it("retries once on a 401 with the token refreshed meanwhile", async () => {
    const t = setup({}, (c) => new Response("", { status: c.auth === "Bearer tok-2" ? 200 : 401 }));
    t.init("tok-1");
    const done = t.view.kube("/api/v1/namespaces");
    await settle();
    expect(t.calls).toHaveLength(1);
    t.deliver({ type: "openfief:token-refreshed", token: "tok-2" });
    expect((await done).status).toBe(200);
    expect(t.calls.map((c) => c.auth)).toEqual(["Bearer tok-1", "Bearer tok-2"]);
    expect(t.calls[1]?.url).toBe(`${GATEWAY_URL}/api/v1/namespaces`);
  });

  it("retries once with the same token when no new one comes in time, and returns that answer", async () => {
    const t = setup({ refreshWaitMs: 2000 }, () => new Response("", { status: 401 }));
    t.init("tok-1");
    const done = t.view.kube("/api/v1/namespaces");
    await settle();
    await t.clock.advance(1999);
    expect(t.calls).toHaveLength(1);
    await t.clock.advance(1);
    expect((await done).status).toBe(401);
    expect(t.calls.map((c) => c.auth)).toEqual(["Bearer tok-1", "Bearer tok-1"]);
  });

  it("uses a token that arrived while the first call was under way at once", async () => {
    let release: (r: Response) => void = () => undefined;
    const t = setup({}, (c, n) => (n === 1 ? new Promise<Response>((r) => { release = r; }) : new Response("", { status: c.auth === "Bearer tok-2" ? 200 : 401 })));
    t.init("tok-1");
    const done = t.view.kube("/api/v1/pods");
    await settle();
    t.deliver({ type: "openfief:token-refreshed", token: "tok-2" });
    release(new Response("", { status: 401 }));
    expect((await done).status).toBe(200);
    expect(t.clock.pending).toBe(0);
  });

  it.each([403, 404, 500])("does not retry a %i", async (status) => {
    const t = setup({}, () => new Response("", { status }));
    t.init("tok-1");
    expect((await t.view.kube("/api/v1/pods")).status).toBe(status);
    expect(t.calls).toHaveLength(1);
  });

  it("returns the 401 without a retry when the console says it failed meanwhile", async () => {
    const t = setup({}, () => new Response("", { status: 401 }));
    t.init("tok-1");
    const done = t.view.kube("/api/v1/pods");
    await settle();
    t.deliver({ type: "openfief:auth-failed", reason: "unauthenticated" });
    expect((await done).status).toBe(401);
    expect(t.calls).toHaveLength(1);
  });

  it("refuses a gateway URL the console named on another origin", async () => {
    const t = setup();
    t.init("tok-1", { gatewayUrl: "http://evil.test/clusters/embedded" });
    await expect(t.view.kube("/api/v1/pods")).rejects.toThrow(/no gateway/);
    expect(t.calls).toEqual([]);
  });
});

/** A watch stream the test writes lines into; aborting the request errors it, as a browser does. */
function stream(signal: AbortSignal | null | undefined) {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => { ctl = c; } });
  signal?.addEventListener("abort", () => {
    try {
      ctl.error(new DOMException("aborted", "AbortError"));
    } catch {
      // Already closed.
    }
  });
  return {
    response: new Response(body, { status: 200 }),
    send: (e: unknown) => ctl.enqueue(new TextEncoder().encode(`${JSON.stringify(e)}\n`)),
    end: () => ctl.close(),
  };
}

const ev = (type: string, name: string, rv: string): WatchEvent => ({ type: type as WatchEvent["type"], object: { metadata: { name, resourceVersion: rv } } });

describe("watch", () => {
  function watching(ttlSeconds = 100) {
    const streams: Array<ReturnType<typeof stream>> = [];
    const t = setup({}, (c) => {
      const s = stream(c.init.signal);
      streams.push(s);
      return s.response;
    });
    const exp = Math.floor(t.clock.now / 1000) + ttlSeconds;
    t.init(jwt(exp, "first"));
    const events: WatchEvent[] = [];
    const resets: number[] = [];
    const w = t.view.watch("/apis/openfief.io/v1alpha1/namespaces/openfief/plugins", { onEvent: (e) => events.push(e), onReset: () => resets.push(1) });
    return { t, w, streams, events, resets, exp };
  }

  it("asks the gateway for a watch with bookmarks, with the token", async () => {
    const { t } = watching();
    await settle();
    expect(t.calls).toHaveLength(1);
    expect(t.calls[0]?.url).toBe(`${GATEWAY_URL}/apis/openfief.io/v1alpha1/namespaces/openfief/plugins?watch=1&allowWatchBookmarks=true`);
    expect(t.calls[0]?.auth).toMatch(/^Bearer /);
  });

  it("reconnects near its token's end, with the fresh token and the last resourceVersion", async () => {
    const { t, w, streams, events } = watching(100);
    await settle();
    streams[0]?.send(ev("ADDED", "nbp-fx", "11"));
    streams[0]?.send(ev("MODIFIED", "nbp-fx", "12"));
    streams[0]?.send({ type: "BOOKMARK", object: { metadata: { resourceVersion: "15" } } });
    await settle();
    expect(events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED"]);
    t.deliver({ type: "openfief:token-refreshed", token: jwt(Math.floor(t.clock.now / 1000) + 200, "second") });
    // 90 % of the first token's 100 s: not yet at 89 s, reconnected at 90 s.
    await t.clock.advance(100_000 * WATCH_RECONNECT_FRACTION - 1000);
    expect(t.calls).toHaveLength(1);
    await t.clock.advance(1000);
    expect(t.calls).toHaveLength(2);
    expect(t.calls[1]?.url).toContain("&resourceVersion=15");
    expect(t.calls[1]?.auth).toContain("sig-second");
    expect(w.connections).toBe(2);
    streams[1]?.send(ev("DELETED", "nbp-fx", "16"));
    await settle();
    expect(events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "DELETED"]);
    w.stop();
  });

  it("goes on from the last resourceVersion when the server ends the watch", async () => {
    const { t, w, streams } = watching();
    await settle();
    streams[0]?.send(ev("ADDED", "a", "7"));
    streams[0]?.end();
    await t.clock.advance(0);
    expect(t.calls).toHaveLength(2);
    expect(t.calls[1]?.url).toContain("&resourceVersion=7");
    expect(w.resourceVersion).toBe("7");
    w.stop();
  });

  it("starts over from the current state after a 410 Gone", async () => {
    const { t, w, streams, resets } = watching();
    await settle();
    streams[0]?.send(ev("ADDED", "a", "7"));
    streams[0]?.send({ type: "ERROR", object: { kind: "Status", code: 410 } });
    await t.clock.advance(0);
    expect(resets).toHaveLength(1);
    expect(t.calls).toHaveLength(2);
    expect(t.calls[1]?.url).not.toContain("resourceVersion");
    w.stop();
  });

  it("stops for good when stopped: no reconnect at the token's end", async () => {
    const { t, w } = watching(100);
    await settle();
    w.stop();
    await t.clock.advance(200_000);
    expect(t.calls).toHaveLength(1);
    expect(t.clock.pending).toBe(0);
  });

  it("backs off after a refused watch and tells the handler", async () => {
    const errors: unknown[] = [];
    const t = setup({}, () => new Response("", { status: 403 }));
    t.init(jwt(Math.floor(t.clock.now / 1000) + 100));
    const w = t.view.watch("/api/v1/pods", { onEvent: () => undefined, onError: (e) => errors.push(e) });
    await settle();
    expect(errors).toEqual([{ code: 403 }]);
    await t.clock.advance(999);
    expect(t.calls).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.calls).toHaveLength(2);
    w.stop();
  });
});

describe("tokenExpiry", () => {
  it.each([
    ["a JWT", jwt(1234), 1234],
    ["not a JWT", "nope", null],
    ["a payload that is not JSON", "a.b.c", null],
  ])("reads %s", (_what, token, exp) => {
    expect(tokenExpiry(token)).toBe(exp);
  });
});
