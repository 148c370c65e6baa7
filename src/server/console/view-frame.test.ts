/**
 * The console's half of a view against a fake window, a fake iframe, a fake mint and a
 * hand-driven clock (the browser test in test/console/ runs it in Chromium): a mint in parallel
 * with the frame's load, the init on plugin:ready, a refresh before 80 % of the token's life,
 * auth-failed on a refusal, a pinned target on every message, both checks on every message.
 */
import { describe, expect, it } from "vitest";
import { describe as sayStatus, issuedAtOf, PROTOCOL_VERSION, REFRESH_FRACTION, mountView } from "./view-frame.js";

const PROXY = "http://localhost:4781";
const SRC = `${PROXY}/plugins/ledger-view/sha256:${"a".repeat(64)}/console/index.html`;
const CONTEXT = { theme: "dark", gatewayUrl: "http://localhost:4782/clusters/embedded", installationId: "ledger-view.3", installationName: "ledger-view", clusterId: "embedded", user: "alice" };

type Listener = (e: { data: unknown; origin: string; source: unknown }) => void | Promise<void>;

class Clock {
  now = 1_000_000;
  #timers: Array<{ at: number; f: () => void; id: number }> = [];
  #id = 1;
  setTimeout = (f: () => void, ms: number) => {
    const id = this.#id++;
    this.#timers.push({ at: this.now + ms, f, id });
    return id;
  };
  clearTimeout = (id: unknown) => {
    this.#timers = this.#timers.filter((t) => t.id !== id);
  };
  async advance(ms: number) {
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
}

async function settle() {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

type Answer = { status: number; body: unknown } | "network";

function setup(answers: Answer[], ttlMs = 100_000) {
  const clock = new Clock();
  const listeners: Listener[] = [];
  const storage: string[] = [];
  const trap = new Proxy({}, { get: (_t, k) => { storage.push(String(k)); return () => undefined; } });
  const win = {
    location: { origin: "http://127.0.0.1:4780" },
    localStorage: trap,
    sessionStorage: trap,
    addEventListener: (_t: string, l: Listener) => listeners.push(l),
    removeEventListener: (_t: string, l: Listener) => listeners.splice(listeners.indexOf(l), 1),
  };
  const posted: Array<{ message: Record<string, unknown>; target: string }> = [];
  const child = { postMessage: (message: Record<string, unknown>, target: string) => posted.push({ message, target }) };
  const frame = { src: SRC, contentWindow: child };
  const mints: Array<{ url: string; init: RequestInit }> = [];
  let n = 0;
  const fetch = async (url: string, init: RequestInit) => {
    mints.push({ url, init });
    const a = answers[Math.min(n++, answers.length - 1)] as Answer;
    if (a === "network") throw new TypeError("failed to fetch");
    return new Response(JSON.stringify(a.body), { status: a.status, headers: { "content-type": "application/json" } });
  };
  const statuses: unknown[] = [];
  const view = mountView({
    window: win, frame, mintUrl: "/api/v1/plugin-tokens", installationId: "ledger-view.3", context: CONTEXT, fetch,
    setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout, now: () => clock.now, onStatus: (s: unknown) => statuses.push(s),
  });
  const send = async (data: unknown, origin = PROXY, source: unknown = child) => {
    for (const l of [...listeners]) await l({ data, origin, source });
    await settle();
  };
  const token = (tag: string) => ({ status: 200, body: { token: `tok-${tag}`, expiresAt: new Date(clock.now + ttlMs).toISOString(), installationId: "ledger-view.3" } });
  return { clock, view, posted, mints, send, statuses, storage, child, token, ttlMs };
}

const ok = (tag: string, at: number, ttl = 100_000) => ({ status: 200, body: { token: `tok-${tag}`, expiresAt: new Date(at + ttl).toISOString(), installationId: "ledger-view.3" } });

describe("the console's side of a view", () => {
  it("mints at once, before the view says it is ready (in parallel with the frame's load)", async () => {
    const t = setup([ok("1", 1_000_000)]);
    expect(t.mints).toHaveLength(1);
    expect(t.mints[0]).toMatchObject({ url: "/api/v1/plugin-tokens", init: { method: "POST", credentials: "same-origin", body: JSON.stringify({ installationId: "ledger-view.3" }) } });
    expect(t.posted).toEqual([]);
  });

  it("answers plugin:ready with openfief:init, the token and the context, to the plugin proxy's origin only", async () => {
    const t = setup([ok("1", 1_000_000)]);
    await t.send({ type: "plugin:ready", protocolVersion: 1 });
    expect(t.posted).toEqual([{ message: { type: "openfief:init", protocolVersion: PROTOCOL_VERSION, token: "tok-1", ...CONTEXT }, target: PROXY }]);
  });

  it.each([
    ["another origin", "http://evil.test", "child"],
    ["the console's own origin", "http://127.0.0.1:4780", "child"],
    ["another window at the proxy's origin", PROXY, "other"],
    ["no window", PROXY, null],
  ])("ignores plugin:ready from %s", async (_what, origin, source) => {
    const t = setup([ok("1", 1_000_000)]);
    await t.send({ type: "plugin:ready" }, origin, source === "child" ? t.child : source === "other" ? {} : null);
    expect(t.posted).toEqual([]);
  });

  it.each([["a string", "plugin:ready"], ["null", null], ["another type", { type: "openfief:init", token: "x" }]])("ignores %s from the view", async (_what, data) => {
    const t = setup([ok("1", 1_000_000)]);
    await t.send(data);
    expect(t.posted).toEqual([]);
  });

  it("mints again before 80 % of the token's life and pushes openfief:token-refreshed", async () => {
    const t = setup([ok("1", 1_000_000), ok("2", 1_075_000)]);
    await t.send({ type: "plugin:ready" });
    await t.clock.advance(100_000 * REFRESH_FRACTION - 1);
    expect(t.mints).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.mints).toHaveLength(2);
    expect(t.clock.now - 1_000_000).toBeLessThan(80_000);
    expect(t.posted.at(-1)).toEqual({ message: { type: "openfief:token-refreshed", token: "tok-2" }, target: PROXY });
    // And again before 80 % of the second one's.
    await t.clock.advance(75_000);
    expect(t.mints).toHaveLength(3);
  });

  it("counts the token's life from its own iat, not from when the answer arrived", async () => {
    // Issued at 999 s (a whole second, before the answer came at 1000 s), for 100 s.
    const jwt = (iat: number) => `e30.${Buffer.from(JSON.stringify({ iat, exp: iat + 100 })).toString("base64url")}.sig`;
    const t = setup([{ status: 200, body: { token: jwt(999), expiresAt: new Date(1_099_000).toISOString(), installationId: "ledger-view.3" } }, ok("2", 1_074_000)]);
    expect(issuedAtOf(jwt(999))).toBe(999_000);
    await t.send({ type: "plugin:ready" });
    // Counted from 999 s: the refresh is due 1 s earlier than when counted from the answer.
    const due = Math.ceil(999_000 + 100_000 * REFRESH_FRACTION) - 1_000_000;
    await t.clock.advance(due - 1);
    expect(t.mints).toHaveLength(1);
    await t.clock.advance(1);
    expect(t.mints).toHaveLength(2);
  });

  it.each([["not a JWT", "tok"], ["a payload that is no JSON", "a.b.c"], ["no iat", `e30.${Buffer.from("{}").toString("base64url")}.s`]])("reads no issue time from %s", (_what, token) => {
    expect(issuedAtOf(token)).toBeNull();
  });

  it.each([
    [401, "unauthenticated"],
    [403, "can_view"],
    [404, "no_installation"],
    [409, "view_not_running"],
  ])("sends openfief:auth-failed when a refresh is refused with %i, and mints no more", async (status, reason) => {
    const t = setup([ok("1", 1_000_000), { status, body: { code: "x", reason, message: "no" } }]);
    await t.send({ type: "plugin:ready" });
    await t.clock.advance(75_000);
    expect(t.posted.at(-1)).toEqual({ message: { type: "openfief:auth-failed", reason }, target: PROXY });
    await t.clock.advance(1_000_000);
    expect(t.mints).toHaveLength(2);
  });

  it("answers plugin:ready with openfief:auth-failed when the first mint is refused", async () => {
    const t = setup([{ status: 403, body: { code: "forbidden", reason: "can_view", message: "no" } }]);
    await t.send({ type: "plugin:ready" });
    expect(t.posted).toEqual([{ message: { type: "openfief:auth-failed", reason: "can_view" }, target: PROXY }]);
  });

  it("tries a failing refresh again while the token in hand lasts, then says it failed", async () => {
    const t = setup([ok("1", 1_000_000), { status: 503, body: {} }, "network", { status: 503, body: {} }, { status: 503, body: {} }, { status: 503, body: {} }, { status: 503, body: {} }]);
    await t.send({ type: "plugin:ready" });
    await t.clock.advance(75_000);
    expect(t.posted.map((p) => p.message["type"])).toEqual(["openfief:init"]);
    await t.clock.advance(24_000);
    expect(t.mints.length).toBeGreaterThan(3);
    expect(t.posted.at(-1)).toEqual({ message: { type: "openfief:auth-failed", reason: "unavailable" }, target: PROXY });
  });

  it("recovers from a failing refresh when the next try mints", async () => {
    const t = setup([ok("1", 1_000_000), { status: 503, body: {} }, ok("2", 1_076_000)]);
    await t.send({ type: "plugin:ready" });
    await t.clock.advance(76_000);
    expect(t.posted.map((p) => p.message["type"])).toEqual(["openfief:init", "openfief:token-refreshed"]);
  });

  it("sends the init again to a view that loads again", async () => {
    const t = setup([ok("1", 1_000_000)]);
    await t.send({ type: "plugin:ready" });
    await t.send({ type: "plugin:ready" });
    expect(t.posted.map((p) => p.message["type"])).toEqual(["openfief:init", "openfief:init"]);
  });

  it("never names any target but the plugin proxy's origin, and never touches storage", async () => {
    const t = setup([ok("1", 1_000_000), ok("2", 1_075_000), { status: 409, body: { code: "conflict", reason: "deleting", message: "no" } }]);
    await t.send({ type: "plugin:ready" });
    await t.clock.advance(200_000);
    expect(t.posted.length).toBeGreaterThanOrEqual(3);
    expect(new Set(t.posted.map((p) => p.target))).toEqual(new Set([PROXY]));
    expect(t.storage).toEqual([]);
  });

  it("stops minting once stopped", async () => {
    const t = setup([ok("1", 1_000_000)]);
    await settle();
    t.view.stop();
    await t.clock.advance(1_000_000);
    expect(t.mints).toHaveLength(1);
  });

  it("refuses to frame a view from the console's own origin", () => {
    expect(() => mountView({ window: { location: { origin: "http://127.0.0.1:4780" }, addEventListener: () => undefined }, frame: { src: "http://127.0.0.1:4780/x", contentWindow: null }, mintUrl: "/m", installationId: "x" })).toThrow(/plugin proxy's own origin/);
  });

  it.each([
    [{ state: "failed", reason: "view_not_running", status: 409 }, /does not give it the view capability.*\(view_not_running\)/],
    [{ state: "failed", reason: "bad_signature", status: 401 }, /sign in again \(bad_signature\)/],
    [{ state: "failed", reason: "can_view", status: 403 }, /you may not view this plugin/],
    [{ state: "failed", reason: "unavailable", status: null }, /could not be reached/],
    [{ state: "failed", reason: "something_new", status: 400 }, /refused its token \(something_new\)/],
  ])("says why a view cannot act in words: %o", (status, words) => {
    expect(sayStatus(status)).toMatch(words);
  });

  it("passes the refusal's status with a failure", async () => {
    const t = setup([{ status: 409, body: { code: "conflict", reason: "deleting", message: "no" } }]);
    await settle();
    expect(t.statuses).toEqual([{ state: "failed", reason: "deleting", status: 409 }]);
  });
});
