/**
 * The JSON API through real HTTP on 127.0.0.1, over the shipped demo: every route, every error,
 * the concurrency rule of approve (If-Match), CSRF, sessions that expired or name two audiences,
 * and the bounds on sizes and time. At the end, every API route was reached and every status seen
 * is one its route declares.
 */
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXAMPLES, Sessions } from "../../src/app/index.js";
import type { Face } from "../../src/app/index.js";
import { routeTable, startServer } from "../../src/server/index.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";
import { makeCert } from "../egress/support/tls.js";
import { bearer, call, cookieOf, faceContext, seen } from "./support.js";

let demo: ConsoleDemo;
let owner: string;
let viewer: string;
let base: string;

const V2 = readFileSync(join(EXAMPLES, "upgrade", "nbp-fx-v2.yaml"), "utf8");
const GRANT = readFileSync(join(EXAMPLES, "plugins", "nbp-fx-grant.yaml"), "utf8");
/** A copy of nbp-fx v2 under another name, with v1's grant: something to approve that is not the demo's. */
const renamed = (name: string) => `${V2.replace(/name: nbp-fx/, `name: ${name}`)}---\n${GRANT.replace(/name: nbp-fx/, `name: ${name}`)}`;

const asOwner = () => bearer(owner);
const write = (extra: Record<string, string> = {}) => ({ ...asOwner(), origin: base, ...extra });

/** Applies documents as the owner and waits for the reconciler to settle on them. */
async function applyAndSettle(yaml: string): Promise<void> {
  const r = await call(base, "/api/v1/apply", { method: "POST", headers: write({ "content-type": "application/yaml" }), body: yaml });
  expect(r.status).toBe(200);
  await demo.cp.pass();
}

beforeAll(async () => {
  demo = await startConsoleDemo({ history: false });
  base = demo.url;
  owner = await demo.token("alice", "owner");
  viewer = await demo.token("bob", "viewer");
}, 60_000);

afterAll(async () => {
  await demo.stop();
});

describe("reading", () => {
  it.each<[string, (b: Record<string, unknown>) => void]>([
    ["/api/v1/plugins", (b) => expect((b.plugins as { name: string }[]).map((p) => p.name)).toEqual(["ecb-fx", "ledger-view", "nbp-fx"])],
    ["/api/v1/plugins/nbp-fx", (b) => expect(b).toMatchObject({ name: "nbp-fx", row: { status: "held_back" }, pending: { text: "egress static.nbp.pl:443" } })],
    ["/api/v1/plugins/nbp-fx/timeline?limit=2", (b) => expect(b).toMatchObject({ entries: [{ event: { type: "grant.observed" } }, { event: { type: "plugin.observed" } }] })],
    ["/api/v1/plugins/nbp-fx/timeline?egress=true&after=0&limit=500", (b) => expect((b.entries as unknown[]).length).toBeGreaterThan(3)],
    ["/api/v1/plugins/nbp-fx/why", (b) => expect((b.sentences as string[]).join("\n")).toMatch(/Pending approval: egress static\.nbp\.pl:443\. POST \/api\/v1\/plugins\/nbp-fx\/approve/)],
    ["/api/v1/pending", (b) => expect(b.pending).toMatchObject([{ name: "nbp-fx", text: "egress static.nbp.pl:443" }])],
    ["/api/v1/events?limit=2", (b) => expect(b).toMatchObject({ events: [{ seq: 1 }, { seq: 2 }], next: 2 })],
    ["/api/v1/events?plugin=ledger-view&type=grant.observed", (b) => expect((b.events as { type: string; stream: string }[]).every((e) => e.type === "grant.observed" && e.stream === "plugin/ledger-view")).toBe(true)],
    ["/api/v1/replay?at=0", (b) => expect(b).toMatchObject({ seq: 0, time: null, plugins: [] })],
    [`/api/v1/replay?at=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, (b) => expect((b.plugins as unknown[]).length).toBe(3)],
    ["/api/v1/verify-log", (b) => expect(b).toMatchObject({ ok: true, chain: { ok: true } })],
    ["/api/v1/check-decisions", (b) => expect(b).toMatchObject({ divergences: [], diverged: 0 })],
    ["/api/v1/egress/decisions?plugin=nbp-fx&outcome=allowed&limit=5", (b) => expect(b).toMatchObject({ decisions: [], next: null })],
    ["/api/v1/egress/summary?buckets=4", (b) => expect((b.buckets as unknown[]).length).toBe(4)],
    ["/api/v1/session", (b) => expect(b).toMatchObject({ user: "alice", role: "owner" })],
  ])("GET %s answers 200", async (path, check) => {
    const r = await call(base, path, { headers: asOwner() });
    expect(r.status, r.text).toBe(200);
    expect(r.headers["content-type"]).toMatch(/^application\/json/);
    check(r.json());
  });

  it("pages the whole log by next, each event once", async () => {
    const all: number[] = [];
    for (let after = 0; ;) {
      const page = (await call(base, `/api/v1/events?after=${after}&limit=7`, { headers: asOwner() })).json<{ events: { seq: number }[]; next: number | null; head: number }>();
      all.push(...page.events.map((e) => e.seq));
      if (page.next === null) break;
      after = page.next;
    }
    expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
    expect(all.length).toBeGreaterThan(10);
  });

  it("gives a plugin's version as its ETag, to HEAD as to GET", async () => {
    const r = await call(base, "/api/v1/plugins/nbp-fx", { headers: asOwner() });
    expect(r.headers.etag).toBe(`"${r.json<{ version: number }>().version}"`);
    const head = await call(base, "/api/v1/plugins/nbp-fx", { method: "HEAD", headers: asOwner() });
    expect([head.status, head.headers.etag, head.text]).toEqual([200, r.headers.etag, ""]);
  });

  it("serves its OpenAPI document without a session", async () => {
    const r = await call(base, "/api/v1/openapi.json");
    expect(r.json()).toMatchObject({ openapi: "3.1.0" });
  });

  it.each<[string, string, number, string]>([
    ["an unknown plugin", "/api/v1/plugins/nosuch", 404, "not_found"],
    ["why of an unknown plugin", "/api/v1/plugins/nosuch/why", 404, "not_found"],
    ["the timeline of an unknown plugin", "/api/v1/plugins/nosuch/timeline", 404, "not_found"],
    ["a name no plugin can have", "/api/v1/plugins/Not_A_Name", 400, "usage"],
    ["an unknown query parameter", "/api/v1/plugins?verbose=1", 400, "usage"],
    ["an unknown event type", "/api/v1/events?type=no.such", 400, "usage"],
    ["a page larger than the cap", "/api/v1/events?limit=501", 400, "usage"],
    ["a page of nothing", "/api/v1/events?limit=0", 400, "usage"],
    ["a time that is not one", "/api/v1/events?since=yesterday", 400, "usage"],
    ["replay without a point", "/api/v1/replay", 400, "usage"],
    ["an outcome that is not one", "/api/v1/egress/decisions?outcome=maybe", 400, "usage"],
    ["a window that ends before it starts", "/api/v1/egress/summary?since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z", 400, "usage"],
    ["egress that is not a boolean", "/api/v1/plugins/nbp-fx/timeline?egress=yes", 400, "usage"],
    ["a query value over its length", `/api/v1/events?plugin=${"a".repeat(600)}`, 413, "too_large"],
    ["a path nothing serves", "/api/v1/nothing", 404, "not_found"],
  ])("refuses %s", async (_what, path, status, code) => {
    const r = await call(base, path, { headers: asOwner() });
    expect(r.status).toBe(status);
    expect(r.json()).toMatchObject({ code });
  });

  it("refuses a request target over its length before reading anything", async () => {
    const r = await call(base, `/api/v1/plugins?x=${"a".repeat(5000)}`, { headers: asOwner() });
    expect([r.status, r.json().code]).toEqual([413, "too_large"]);
  });

  it("answers with the security headers, on data, pages, errors and assets alike", async () => {
    const page = await call(base, "/", { headers: asOwner() });
    const css = /href="(\/assets\/console-[0-9a-f]+\.css)"/.exec(page.text)?.[1] ?? "";
    for (const path of ["/api/v1/plugins", "/api/v1/nothing", "/", css]) {
      const r = await call(base, path, { headers: asOwner() });
      expect(r.headers["content-security-policy"]).toBe("default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'; form-action 'self'");
      expect([r.headers["x-content-type-options"], r.headers["referrer-policy"]]).toEqual(["nosniff", "no-referrer"]);
    }
  });
});

describe("sessions", () => {
  it.each<[string, () => Record<string, string>]>([
    ["no session", () => ({})],
    ["a token that is not one", () => bearer("garbage")],
    ["an Authorization that is not Bearer", () => ({ authorization: "Basic YWxpY2U6eA==" })],
  ])("refuses %s with 401", async (_what, headers) => {
    const r = await call(base, "/api/v1/plugins", { headers: headers() });
    expect([r.status, r.json().code]).toEqual([401, "unauthorized"]);
  });

  it("refuses every route but the public ones without a session", async () => {
    const guarded = routeTable().filter((r) => (r.kind === "api" || r.kind === "ops") && r.access !== "public");
    for (const r of guarded) {
      const a = await call(base, r.path.replace("{name}", "nbp-fx"), { method: r.method, headers: { origin: base } });
      expect([r.path, a.status]).toEqual([r.path, 401]);
    }
    expect(guarded.length).toBeGreaterThan(15);
  });

  it("refuses an expired session, saying so", async () => {
    const past = await Sessions.open(demo.dir, () => new Date(Date.now() - 3_600_000));
    const old = await past.mintSession("alice", "owner", 60);
    const r = await call(base, "/api/v1/plugins", { headers: bearer(old.token) });
    expect(r.status).toBe(401);
    expect(r.json().message).toMatch(/expired/);
  });

  it("refuses a sign-in link's code as a session", async () => {
    const code = new URL(await demo.signIn()).searchParams.get("code") ?? "";
    const r = await call(base, "/api/v1/plugins", { headers: bearer(code) });
    expect([r.status, r.json().message]).toEqual([401, "this token is not a console session"]);
  });

  it("signs in once with a link, setting an HttpOnly, SameSite=Strict cookie and sending the user to the console", async () => {
    const link = new URL(await demo.signIn("carol", "viewer"));
    const r = await call(base, link.pathname + link.search);
    expect([r.status, r.headers.location]).toEqual([303, "/"]);
    expect(r.headers["set-cookie"]?.[0]).toMatch(/^openfief_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    const me = await call(base, "/api/v1/session", { headers: { cookie: cookieOf(r) } });
    expect(me.json()).toMatchObject({ user: "carol", role: "viewer" });
    const again = await call(base, link.pathname + link.search);
    expect(again.status).toBe(401);
    expect(again.text).toMatch(/used already/);
  });

  it("refuses a sign-in link followed from another site", async () => {
    const link = new URL(await demo.signIn());
    const r = await call(base, link.pathname + link.search, { headers: { "sec-fetch-site": "cross-site" } });
    expect(r.status).toBe(403);
    expect(r.headers["set-cookie"]).toBeUndefined();
  });

  it("refuses a Host it was not told it has (DNS rebinding)", async () => {
    const r = await call(base, "/api/v1/plugins", { headers: { ...asOwner(), host: "evil.example:4780" } });
    expect([r.status, r.json().field]).toEqual([400, "Host"]);
  });
});

describe("writing", () => {
  it("lets a viewer read and not write", async () => {
    expect((await call(base, "/api/v1/pending", { headers: bearer(viewer) })).status).toBe(200);
    const r = await call(base, "/api/v1/plugins/nbp-fx/approve", { method: "POST", headers: { ...bearer(viewer), origin: base, "if-match": '"1"' } });
    expect([r.status, r.json().code]).toEqual([403, "forbidden"]);
  });

  it.each<[string, () => Promise<Record<string, string>>, number]>([
    ["a cookie write without Origin", async () => ({ cookie: await signedInCookie() }), 403],
    ["a cookie write from another site", async () => ({ cookie: await signedInCookie(), origin: "http://evil.example" }), 403],
    ["a Bearer write from another site", async () => ({ ...asOwner(), origin: "http://localhost.evil.example" }), 403],
    ["a Bearer write with no Origin (a script)", async () => asOwner(), 428],
    ["a cookie write from the console itself", async () => ({ cookie: await signedInCookie(), origin: base }), 428],
  ])("answers %s with %i", async (_what, headers, status) => {
    const r = await call(base, "/api/v1/plugins/nbp-fx/approve", { method: "POST", headers: await headers() });
    expect(r.status).toBe(status);
  });

  it.each<[string, string | undefined, number, string]>([
    ["without If-Match", undefined, 428, "precondition_required"],
    ["with an If-Match that is not a version", '"abc"', 400, "usage"],
    ["with a stale version", '"1"', 412, "precondition_failed"],
  ])("refuses an approval %s, and changes nothing", async (_what, ifMatch, status, code) => {
    const before = await demo.cp.runtime.store.head();
    const r = await call(base, "/api/v1/plugins/nbp-fx/approve", { method: "POST", headers: write(ifMatch === undefined ? {} : { "if-match": ifMatch }) });
    expect([r.status, r.json().code]).toEqual([status, code]);
    expect(await demo.cp.runtime.store.head()).toBe(before);
  });

  it("lets one of two approvals with the same If-Match win; the other is 412 and adds nothing", async () => {
    await applyAndSettle(renamed("echo"));
    const seen1 = await call(base, "/api/v1/plugins/echo", { headers: asOwner() });
    const etag = seen1.headers.etag ?? "";
    const version = seen1.json<{ version: number }>().version;
    expect(seen1.json()).toMatchObject({ pending: { text: "egress static.nbp.pl:443" } });
    const [a, b] = await Promise.all([1, 2].map(() => call(base, "/api/v1/plugins/echo/approve", { method: "POST", headers: write({ "if-match": etag }) })));
    expect([a?.status, b?.status].sort()).toEqual([200, 412]);
    const won = [a, b].find((x) => x?.status === 200);
    expect(won?.json()).toMatchObject({ name: "echo", approved: { egress: [{ host: "static.nbp.pl", port: 443 }] } });
    const edits = (await demo.cp.runtime.store.read({ stream: "plugin/echo", type: "grant.observed" })).filter((e) => e.version > version);
    expect(edits).toHaveLength(1);
  });

  it("applies YAML and JSON documents as the owner's observations", async () => {
    const json = JSON.stringify({ apiVersion: "openfief.io/v1alpha1", kind: "PluginGrant", metadata: { name: "jsonly" }, spec: { capabilities: ["connector"] } });
    const r = await call(base, "/api/v1/apply", { method: "POST", headers: write({ "content-type": "application/json" }), body: json });
    expect(r.json()).toMatchObject({ applied: [{ kind: "PluginGrant", name: "jsonly", changed: true }] });
    const e = await demo.cp.runtime.store.last("plugin/jsonly", "grant.observed");
    expect(e?.actor).toBe("owner:web:alice");
    const again = await call(base, "/api/v1/apply", { method: "POST", headers: write({ "content-type": "application/json" }), body: json });
    expect(again.json()).toMatchObject({ applied: [{ changed: false }] });
  });

  it.each<[string, string, string, number, Record<string, unknown>]>([
    ["a document that does not validate, naming the field", "application/yaml", V2.replace("host: static.nbp.pl", "host: 'not a host'"), 422, { code: "invalid_resource", field: "spec.manifest.egress[1].host" }],
    ["YAML that does not parse", "application/yaml", "kind: [", 422, { code: "invalid_resource" }],
    ["a body with no documents", "application/yaml", "", 422, { code: "invalid_resource" }],
    ["a form, which a cross-site page could post", "application/x-www-form-urlencoded", "a=b", 415, { code: "unsupported_media_type" }],
    ["no media type", "", "kind: Plugin", 415, { code: "unsupported_media_type" }],
  ])("refuses %s", async (_what, type, body, status, error) => {
    const r = await call(base, "/api/v1/apply", { method: "POST", headers: write(type === "" ? {} : { "content-type": type }), body });
    expect(r.status).toBe(status);
    expect(r.json()).toMatchObject(error);
  });

  it("refuses a body over its cap by its Content-Length, before reading it", async () => {
    const r = await call(base, "/api/v1/apply", { method: "POST", headers: write({ "content-type": "application/yaml", "content-length": String(2 << 20) }) });
    expect([r.status, r.json().code]).toEqual([413, "too_large"]);
    // The body is not read on, so the connection cannot be used again.
    expect(r.headers.connection).toBe("close");
  });

  it("refuses a body over its cap as it arrives, when it names no length", async () => {
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(new URL("/api/v1/apply", base), { method: "POST", headers: write({ "content-type": "application/yaml", "transfer-encoding": "chunked" }) }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      const chunk = Buffer.alloc(64 * 1024, "#");
      let sent = 0;
      const pump = () => {
        while (sent < 4 << 20 && !req.destroyed) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once("drain", pump);
        }
        req.end();
      };
      pump();
    });
    expect([r.status, JSON.parse(r.body).code]).toEqual([413, "too_large"]);
  });

  it("deletes a grant and a plugin, and refuses what is gone or changed since", async () => {
    await applyAndSettle(renamed("gone"));
    const stale = await call(base, "/api/v1/grants/gone", { method: "DELETE", headers: write({ "if-match": '"1"' }) });
    expect([stale.status, stale.json().code]).toEqual([412, "precondition_failed"]);
    const g = await call(base, "/api/v1/grants/gone", { method: "DELETE", headers: write() });
    expect(g.json()).toMatchObject({ kind: "grant", name: "gone" });
    const p = await call(base, "/api/v1/plugins/gone", { method: "DELETE", headers: write() });
    expect(p.json()).toMatchObject({ kind: "plugin", name: "gone" });
    const again = await call(base, "/api/v1/plugins/gone", { method: "DELETE", headers: write() });
    expect([again.status, again.json().code]).toEqual([404, "not_found"]);
  });

  it("uninstalls with purge as the owner (the CLI's events), owner only, and refuses what is gone, changed or pinned", async () => {
    await applyAndSettle(renamed("purged"));
    const store = demo.cp.runtime.store;
    const viewerTry = await call(base, "/api/v1/plugins/purged/uninstall", { method: "POST", headers: { ...bearer(viewer), origin: base } });
    expect([viewerTry.status, viewerTry.json().code]).toEqual([403, "forbidden"]);
    const crossSite = await call(base, "/api/v1/plugins/purged/uninstall", { method: "POST", headers: { cookie: await signedInCookie(), origin: "http://evil.example" } });
    expect(crossSite.status).toBe(403);
    const stale = await call(base, "/api/v1/plugins/purged/uninstall", { method: "POST", headers: write({ "if-match": '"1"' }) });
    expect([stale.status, stale.json().code]).toEqual([412, "precondition_failed"]);
    expect((await store.read({ stream: "plugin/purged", type: ["plugin.uninstall.requested"] }))).toEqual([]);
    const version = (await call(base, "/api/v1/plugins/purged", { headers: asOwner() })).headers.etag ?? "";
    const r = await call(base, "/api/v1/plugins/purged/uninstall", { method: "POST", headers: write({ "if-match": version }) });
    expect(r.status, r.text).toBe(202);
    expect(r.json()).toMatchObject({ name: "purged", grant: true, secrets: [], module: null, resumed: false });
    const recorded = (await store.read({ stream: "plugin/purged" })).filter((e) => e.seq >= r.json<{ seq: number }>().seq);
    expect(recorded.slice(0, 3).map((e) => [e.type, e.actor])).toEqual([
      ["plugin.uninstall.requested", "owner:web:alice"], ["plugin.deleted", "owner:web:alice"], ["grant.deleted", "owner:web:alice"],
    ]);
    await demo.cp.pass();
    const done = await store.read({ stream: "plugin/purged", type: ["plugin.uninstalled"] });
    expect(done.map((e) => e.data)).toEqual([expect.objectContaining({ request: r.json<{ seq: number }>().seq, grant: true, secrets: [] })]);
    const again = await call(base, "/api/v1/plugins/purged/uninstall", { method: "POST", headers: write() });
    expect([again.status, again.json().code]).toEqual([404, "not_found"]);
    // A second instance of the WebAssembly ecb-fx runs its module: neither can leave nothing behind.
    const ecb = readFileSync(join(EXAMPLES, "plugins", "ecb-fx.yaml"), "utf8").replace(/name: ecb-fx/, "name: ecb-two");
    const ecbGrant = readFileSync(join(EXAMPLES, "plugins", "ecb-fx-grant.yaml"), "utf8").replace(/name: ecb-fx/, "name: ecb-two");
    await applyAndSettle(`${ecb}---\n${ecbGrant}`);
    const before = await store.head();
    const pinned = await call(base, "/api/v1/plugins/ecb-two/uninstall", { method: "POST", headers: write() });
    expect([pinned.status, pinned.json().code]).toEqual([409, "plugin_pinned"]);
    expect(await store.head()).toBe(before);
  });
});

describe("the live log", () => {
  it("streams the events after Last-Event-ID, each with its seq as id, and then new ones", async () => {
    const head = await demo.cp.runtime.store.head();
    const got: { id: string; seq: number }[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = request(new URL("/api/v1/events/stream", base), { headers: { ...asOwner(), "last-event-id": String(head - 2) } }, (res) => {
        expect(res.headers["content-type"]).toMatch(/^text\/event-stream/);
        let buf = "";
        res.on("data", (c: Buffer) => {
          buf += c.toString();
          for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const id = /^id: (\d+)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (id === undefined || data === undefined) continue;
            got.push({ id, seq: (JSON.parse(data) as { seq: number }).seq });
            if (got.length === 2) void demo.cp.runtime.store.append([{ stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host: "api.nbp.pl", port: 443, allowed: true, reason: "listed", rules: 1 } }]);
            if (got.length === 3) {
              req.destroy();
              resolve();
            }
          }
        });
      });
      req.on("error", (err) => (got.length >= 3 ? undefined : reject(err)));
      req.end();
    });
    expect(got.map((g) => Number(g.id))).toEqual([head - 1, head, head + 1]);
    expect(got.every((g) => Number(g.id) === g.seq)).toBe(true);
  });
});

describe("bounds", () => {
  let face: Face;
  let slow: string;

  beforeAll(async () => {
    face = await startServer(faceContext(demo.cp), { host: "127.0.0.1", port: 0, deadlineMs: 300, streams: { max: 1, maxDurationMs: 60_000, heartbeatMs: 60_000, maxBuffered: 1 << 20 } });
    slow = face.url;
  });

  afterAll(async () => {
    await face.close();
  });

  it("answers a request that outlives its deadline with 503, even while its body is still coming", async () => {
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(new URL("/api/v1/apply", slow), { method: "POST", headers: { ...asOwner(), origin: slow, "content-type": "application/yaml", "content-length": "1000" } }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      req.write("kind: Plugin\n");
    });
    expect([r.status, JSON.parse(r.body).code]).toEqual([503, "unavailable"]);
  });

  it("refuses an event stream beyond the most it keeps open", async () => {
    const first = request(new URL("/api/v1/events/stream", slow), { headers: asOwner() });
    const opened = new Promise<void>((resolve) => first.once("response", () => resolve()));
    first.end();
    await opened;
    const second = await call(slow, "/api/v1/events/stream", { headers: asOwner() });
    first.destroy();
    expect([second.status, second.json().code]).toEqual([503, "unavailable"]);
  });

  it("says so when its address is taken", async () => {
    const port = Number(new URL(base).port);
    await expect(startServer(faceContext(demo.cp), { host: "127.0.0.1", port })).rejects.toMatchObject({ code: "conflict", message: expect.stringMatching(/127\.0\.0\.1:\d+ is in use by another program: pass another --listen/) });
  });

  it("refuses to listen beyond loopback without TLS", async () => {
    await expect(startServer(faceContext(demo.cp), { host: "0.0.0.0", port: 0 })).rejects.toMatchObject({ code: "usage", message: expect.stringMatching(/--tls-cert and --tls-key/) });
  });

  it("over TLS sets the session cookie Secure and bound to its origin (__Host-)", async () => {
    const cert = makeCert(["localhost"]);
    const tls = await startServer(faceContext(demo.cp), { host: "127.0.0.1", port: 0, tls: cert });
    try {
      const link = new URL(await demo.signIn());
      const r = await call(tls.url, link.pathname + link.search, { ca: cert.cert });
      expect(r.headers["set-cookie"]?.[0]).toMatch(/^__Host-openfief_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/);
      const me = await call(tls.url, "/api/v1/session", { ca: cert.cert, headers: { cookie: cookieOf(r) } });
      expect(me.status).toBe(200);
    } finally {
      await tls.close();
    }
  });
});

describe("the operator's routes", () => {
  it("says it is alive and ready", async () => {
    expect((await call(base, "/healthz")).json()).toEqual({ ok: true });
    expect((await call(base, "/readyz")).json()).toEqual({ ready: true, reasons: [] });
  });

  it("serves the control plane's metrics in Prometheus text format", async () => {
    const r = await call(base, "/metrics");
    expect(r.headers["content-type"]).toMatch(/^text\/plain/);
    for (const m of ["openfief_events_appended_total{type=\"rollout.decided\"}", "openfief_reconcile_passes_total{result=\"ok\"}", "openfief_reconcile_seconds_count", "openfief_append_seconds_count{kind=\"append\"}", "openfief_rollouts_total{outcome=\"previous\"}", "openfief_signature_verdicts_total{outcome=\"unverified\"}"]) {
      expect(r.text).toContain(m);
    }
    expect(r.text).not.toMatch(/nbp-fx|alice|Bearer/);
  });
});

describe("the verifiable log", () => {
  it("publishes the log's verifier key and origin to anyone, with no session", async () => {
    const r = await call(base, "/api/v1/log/key");
    expect(r.status, r.text).toBe(200);
    const { origin, key } = r.json<{ origin: string; key: string }>();
    expect(origin).toMatch(/^openfief\/log\/[0-9a-f]{16}$/);
    expect(key.startsWith(`${origin}+`)).toBe(true);
    expect(key).toMatch(/^[^+]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    expect(r.text).not.toContain("PRIVATE");
  });
});

describe("this file", () => {
  // Last in the file, so it sees every request before it (skipped when tests are picked with -t).
  it("reached every API and operator route, and saw only statuses each declares", () => {
    const routes = routeTable().filter((r) => r.kind === "api" || r.kind === "ops");
    const unreached = routes.filter((r) => !seen.has(`${r.method} ${r.path}`)).map((r) => `${r.method} ${r.path}`);
    expect(unreached).toEqual([]);
    const undeclared = routes.flatMap((r) => [...(seen.get(`${r.method} ${r.path}`) ?? [])].filter((s) => !r.statuses.includes(s)).map((s) => `${r.method} ${r.path} ${s}`));
    expect(undeclared).toEqual([]);
  });
});

async function signedInCookie(): Promise<string> {
  const link = new URL(await demo.signIn());
  return cookieOf(await call(base, link.pathname + link.search));
}
