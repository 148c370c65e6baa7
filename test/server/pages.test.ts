/**
 * The console's pages through real HTTP: every page for a viewer, the approval form's refusals
 * (a stale version changes nothing), a version that cannot run shown blockers first and offered
 * no approval, the error pages, signing out, the assets — and no page ever holds a session token
 * or a sign-in code.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyResources, EXAMPLES, OWNER_CLI, parseResources } from "../../src/app/index.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";
import { call, cookieOf } from "./support.js";

let demo: ConsoleDemo;
let base: string;
let ownerCookie: string;
let viewerCookie: string;
let codes: string[];

async function signIn(user: string, role: "owner" | "viewer"): Promise<string> {
  const link = new URL(await demo.signIn(user, role));
  codes.push(link.searchParams.get("code") ?? "");
  return cookieOf(await call(base, link.pathname + link.search));
}

beforeAll(async () => {
  demo = await startConsoleDemo({ history: false });
  base = demo.url;
  codes = [];
  ownerCookie = await signIn("alice", "owner");
  viewerCookie = await signIn("bob", "viewer");
}, 60_000);

afterAll(async () => {
  await demo.stop();
});

const form = (cookie: string, body: string, origin = base) => ({
  method: "POST", body, headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
});

describe("the pages", () => {
  it.each<[string, RegExp]>([
    ["/", /<h1>Plugins<\/h1>/],
    ["/plugins", /<h1>Plugins<\/h1>[\s\S]*href="\/plugins\/nbp-fx"/],
    ["/plugins/nbp-fx", /Waiting for your approval/],
    ["/log", /<h1>Log<\/h1>/],
    ["/log?plugin=nbp-fx&type=rollout.decided&limit=5", /rollout\.decided/],
    ["/log?before=5", /events before 5/],
    ["/log/rows?after=1", /id="log-poll"/],
    ["/egress?window=7d", /the last 7 days/],
    ["/integrity", /Hash chain/],
    ["/integrity", /<h2>Signed checkpoints<\/h2>[\s\S]*<dt>Verifier key<\/dt><dd><code>openfief\/log\/[0-9a-f]{16}\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}<\/code>[\s\S]*<dt>Newest checkpoint<\/dt><dd>(events 1 to \d+|<span class="muted">none recorded yet)/], // the first one is signed within a second of the demo's appends
    ["/replay?at=3", /The state after event 3 of/],
  ])("GET %s shows a viewer the page", async (path, content) => {
    const r = await call(base, path, { headers: { cookie: viewerCookie } });
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(r.text).toMatch(content);
  });

  it("shows a viewer what is pending, with the Approve button off", async () => {
    const r = await call(base, "/plugins/nbp-fx", { headers: { cookie: viewerCookie } });
    expect(r.text).toMatch(/<button type="submit" class="primary" disabled>Approve: add egress static\.nbp\.pl:443<\/button>/);
    expect(r.text).toMatch(/Only an owner may approve/);
  });

  it("holds no session token and no sign-in code, on any page", async () => {
    const token = /openfief_session=([^;]+)/.exec(ownerCookie)?.[1] ?? "";
    for (const path of ["/", "/plugins/nbp-fx", "/log?limit=500", "/egress", "/integrity", "/replay"]) {
      const r = await call(base, path, { headers: { cookie: ownerCookie } });
      for (const secret of [token, ...codes]) expect(r.text.includes(secret.slice(-24))).toBe(false);
    }
  });

  it.each<[string, string, number, RegExp]>([
    ["a plugin the log does not know", "/plugins/nosuch", 404, /no plugin nosuch/],
    ["a page nothing serves", "/nothing", 404, /nothing at \/nothing/],
    ["a window it does not offer", "/egress?window=1y", 400, /window must be one of/],
  ])("answers %s with an error page", async (_what, path, status, message) => {
    const r = await call(base, path, { headers: { cookie: viewerCookie } });
    expect(r.status).toBe(status);
    expect(r.headers["content-type"]).toMatch(/^text\/html/);
    expect(r.text).toMatch(message);
  });

  it("asks someone signed out to sign in, saying how", async () => {
    const r = await call(base, "/plugins/nbp-fx");
    expect(r.status).toBe(401);
    expect(r.text).toMatch(/openfief login --link/);
    expect((await call(base, "/signin")).text).toMatch(/A link works once, for ten minutes/);
  });

  it("serves its assets for good, and nothing else under /assets", async () => {
    const page = (await call(base, "/", { headers: { cookie: viewerCookie } })).text;
    const js = /src="(\/assets\/htmx-[0-9a-f]{12}\.js)"/.exec(page)?.[1] ?? "";
    const r = await call(base, js);
    expect([r.status, r.headers["cache-control"], r.headers["content-type"]]).toEqual([200, "public, max-age=31536000, immutable", "text/javascript; charset=utf-8"]);
    expect(r.text).toMatch(/htmx/);
    expect((await call(base, "/assets/../package.json")).status).toBe(404);
  });

  it("keeps htmx from evaluating code and from injecting styles", async () => {
    const page = (await call(base, "/", { headers: { cookie: viewerCookie } })).text;
    expect(page).toContain(`<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false}'>`);
    expect(page).not.toMatch(/\sstyle=|<style|<script>|\son[a-z]+=/i);
  });
});

describe("the approval form", () => {
  it.each<[string, () => ReturnType<typeof form>, number, RegExp]>([
    ["from a viewer", () => form(viewerCookie, "version=1"), 403, /a viewer may not do this/],
    ["from another site", () => form(ownerCookie, "version=1", "http://evil.example"), 403, /another site/],
    ["without the version it was shown", () => form(ownerCookie, ""), 428, /must name the version/],
    ["sent as something other than a form", () => ({ ...form(ownerCookie, "{}"), headers: { ...form(ownerCookie, "").headers, "content-type": "application/json" } }), 415, /send the approval from the console/],
  ])("refuses an approval %s, changing nothing", async (_what, ask, status, message) => {
    const before = await demo.cp.runtime.store.head();
    const r = await call(base, "/plugins/nbp-fx/approve", ask());
    expect(r.status).toBe(status);
    expect(r.text).toMatch(message);
    expect(await demo.cp.runtime.store.head()).toBe(before);
  });

  it("refuses a stale version with the page as it is now, and approves nothing", async () => {
    const before = await demo.cp.runtime.store.head();
    const r = await call(base, "/plugins/nbp-fx/approve", form(ownerCookie, "version=2"));
    expect(r.status).toBe(412);
    expect(r.text).toMatch(/Nothing was approved\.<\/strong> nbp-fx changed since you looked at it \(version 2\)/);
    expect(r.text).toMatch(/Approve: add egress static\.nbp\.pl:443/);
    expect(await demo.cp.runtime.store.head()).toBe(before);
  });

  it("approves the version shown, then sends the owner back to the plugin (POST, redirect, GET)", async () => {
    const page = (await call(base, "/plugins/nbp-fx", { headers: { cookie: ownerCookie } })).text;
    const version = /name="version" value="(\d+)"/.exec(page)?.[1] ?? "";
    const r = await call(base, "/plugins/nbp-fx/approve", form(ownerCookie, `version=${version}`));
    expect(r.status).toBe(303);
    expect(r.headers.location).toMatch(/^\/plugins\/nbp-fx\?approved=\d+$/);
    const seq = Number(/approved=(\d+)/.exec(r.headers.location ?? "")?.[1]);
    expect(await demo.cp.runtime.store.get(seq)).toMatchObject({ type: "grant.observed", actor: "owner:web:alice" });
  });
});

describe("a version that cannot run whatever is approved", () => {
  const V1_IMAGE = "localhost/openfief-demo/nbp-fx@sha256:32a155bf13262adffa93e0d7023b17306472f1dcb8d93c686bfe850e9dc594cb";
  const doc = (name: string, extra: string, config = "") => `apiVersion: openfief.io/v1alpha1
kind: Plugin
metadata: {name: ${name}}
spec:
  image: ${V1_IMAGE}
${config === "" ? "" : `  config: ${config}\n`}  manifest: {capabilities: [connector], egress: [{host: api.nbp.pl}], secrets: [], dataTiers: []${extra}}
---
apiVersion: openfief.io/v1alpha1
kind: PluginGrant
metadata: {name: ${name}}
spec: {capabilities: [connector]}
`;
  beforeAll(async () => {
    const store = demo.cp.runtime.store;
    // nbp-fx v1 under another name, its config failing its (signed) schema; a twin declaring another manifest than its image was signed with.
    const v1 = readFileSync(join(EXAMPLES, "plugins", "nbp-fx.yaml"), "utf8").replace(/name: nbp-fx/, "name: conf").replace(/startDate: .*/, "startDate: 7");
    await applyResources(store, parseResources(`${v1}---\n${doc("conf", "").split("---\n")[1] ?? ""}`, "conf"), OWNER_CLI);
    await applyResources(store, parseResources(doc("twin", ", configSchema: {type: object}"), "twin"), OWNER_CLI);
    await demo.cp.pass();
  }, 60_000);

  it.each<[string, string, RegExp]>([
    ["its config", "conf", /its config does not match its schema: spec\.config\.startDate: must be string\./],
    ["its signature", "twin", /its signature was refused: the Plugin&#39;s manifest is not the one its image was signed with \(manifest_mismatch\)\./],
  ])("shows what blocks it (%s) before the approval, whose button is off and names the blocker", async (subject, name, blocker) => {
    const page = (await call(base, `/plugins/${name}`, { headers: { cookie: ownerCookie } })).text;
    const blockers = page.indexOf('id="blockers"');
    const approval = page.indexOf('id="pending"');
    expect(blockers).toBeGreaterThan(0);
    expect(blockers).toBeLessThan(approval);
    expect(page.slice(blockers, approval)).toMatch(/<h2 id="blockers-h">Cannot run as asked<\/h2>/);
    expect(page.slice(blockers, approval)).toMatch(blocker);
    expect(page).toContain(`<button type="button" disabled>Approve: blocked by ${subject}</button>`);
    // No form an owner could send: the approval is not offered.
    expect(page).not.toMatch(/action="\/plugins\/[a-z-]+\/approve"/);
    expect(page).toMatch(/Approval \(not offered\)/);
  });

  it("lists it under what cannot run as asked, not under what waits for approval", async () => {
    const page = (await call(base, "/", { headers: { cookie: viewerCookie } })).text;
    const cannot = /<section class="card callout bad" aria-labelledby="blocked-h" id="blocked">([\s\S]*?)<\/section>/.exec(page)?.[1] ?? "";
    const waiting = /<section class="card callout" aria-labelledby="waiting-h">([\s\S]*?)<\/section>/.exec(page)?.[1] ?? "";
    expect(cannot).toMatch(/<strong>conf<\/strong><\/a>: its config does not match its schema/);
    expect(cannot).toMatch(/<strong>twin<\/strong><\/a>: its signature was refused/);
    expect(waiting).not.toMatch(/conf|twin/);
    expect(page).toMatch(/<a href="\/plugins\/conf#blockers"><span class="badge bad">blocked<\/span><\/a> <span class="small">by its config<\/span>/);
  });

  it("refuses an approval sent all the same, naming the blocker, and records nothing", async () => {
    const before = await demo.cp.runtime.store.head();
    const version = await demo.cp.runtime.store.version("plugin/conf");
    const r = await call(base, "/plugins/conf/approve", form(ownerCookie, `version=${version}`));
    expect(r.status).toBe(409);
    expect(r.text).toMatch(/nothing approved \(config_refused\)/);
    expect(await demo.cp.runtime.store.head()).toBe(before);
  });

  it("says who signed a version, since when the catalog makes it verified, and that in the embedded mode its objects are only written out", async () => {
    const page = (await call(base, "/plugins/ledger-view", { headers: { cookie: viewerCookie } })).text;
    expect(page).toMatch(/<span class="badge good" title="A catalog entry pins this image and its publisher signed it: it may run\.">verified<\/span>/);
    expect(page).toMatch(/<\/span> signed by demo-owner, a signer you trust and openfief-release, the catalog(?:'|&#39;|&#x27;)s publisher; in the catalog as ledger-view, verified since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.<br>/);
    expect(page).toMatch(/objects written to \S+\/cluster \(no container runtime in the embedded mode\)/);
    expect(page).not.toMatch(/as a container|>unverified</);
    const plugins = (await call(base, "/", { headers: { cookie: viewerCookie } })).text;
    expect(plugins).toMatch(/<p class="small signature-legend">Signature: <strong>verified<\/strong>: A catalog entry pins [^;]*; <strong>trusted<\/strong>: Signed by a signer you trust[^;]*; [^;]*; <strong>refused<\/strong>: It does not run, whatever the grant approves\.<\/p>/);
  });
});

describe("signing out", () => {
  it("clears the cookie and goes to the sign-in page", async () => {
    const r = await call(base, "/signout", { method: "POST", headers: { cookie: ownerCookie, origin: base } });
    expect([r.status, r.headers.location]).toEqual([303, "/signin"]);
    expect(r.headers["set-cookie"]?.[0]).toMatch(/^openfief_session=; Path=\/; HttpOnly; SameSite=Strict; Max-Age=0$/);
  });

  it("refuses a sign-out from another site", async () => {
    const r = await call(base, "/signout", { method: "POST", headers: { cookie: ownerCookie, origin: "http://evil.example" } });
    expect(r.status).toBe(403);
  });
});
