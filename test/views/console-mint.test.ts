/**
 * The console's side of the mint through real HTTP on 127.0.0.1, over the shipped demo with the
 * views running: `POST /api/v1/plugin-tokens` with the session cookie or a Bearer session, every
 * refusal with the API's code and the mint's reason, the Connect RPC mounted on the console's
 * origin, and the console's CSP framing the plugin proxy only when views run.
 */
import { Code, createClient } from "@connectrpc/connect";
import type { ConnectError } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteResource, OWNER_CLI } from "../../src/app/index.js";
import { TokenService } from "../../src/gen/openfief/auth/v1/token_pb.js";
import { CSP, consoleCsp } from "../../src/server/index.js";
import { startConsoleDemo } from "../support/console-demo.js";
import type { ConsoleDemo } from "../support/console-demo.js";
import { bearer, call, cookieOf } from "../server/support.js";

let demo: ConsoleDemo;
let plain: ConsoleDemo;
let installationId: string;
let cookie: string;
const MINT = "/api/v1/plugin-tokens";

const json = (body: unknown, headers: Record<string, string> = {}) => ({ method: "POST", headers: { "content-type": "application/json", origin: demo.url, ...headers }, body: JSON.stringify(body) });

beforeAll(async () => {
  demo = await startConsoleDemo({ history: false, views: true });
  plain = await startConsoleDemo({ history: false });
  const frame = await demo.cp.views?.frame("ledger-view");
  installationId = frame?.installationId ?? "";
  const link = new URL(await demo.signIn("carol", "viewer"));
  cookie = cookieOf(await call(demo.url, link.pathname + link.search));
}, 60_000);

afterAll(async () => {
  await demo?.stop();
  await plain?.stop();
});

describe("POST /api/v1/plugin-tokens", () => {
  it("mints for the session cookie, as the session's user", async () => {
    const r = await call(demo.url, MINT, json({ installationId }, { cookie }));
    expect(r.status, r.text).toBe(200);
    const body = r.json<{ token: string; expiresAt: string; installationId: string }>();
    expect(body.installationId).toBe(installationId);
    const claims = JSON.parse(Buffer.from(body.token.split(".")[1] ?? "", "base64url").toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({ sub: "carol", aud: "openfief-plugin", installation_name: "ledger-view" });
    expect(Date.parse(body.expiresAt)).toBe((claims["exp"] as number) * 1000);
    expect(r.headers["cache-control"]).toMatch(/no-store/);
  });

  it("mints for a Bearer session too", async () => {
    const r = await call(demo.url, MINT, json({ installationId }, bearer(await demo.token("dave", "owner"))));
    expect(r.status).toBe(200);
  });

  it.each<[string, () => Promise<{ headers?: Record<string, string>; body?: string; type?: string }>, number, string, string | undefined]>([
    ["no session", async () => ({}), 401, "unauthorized", undefined],
    ["a PluginToken instead of a session", async () => {
      const t = (await call(demo.url, MINT, json({ installationId }, { cookie }))).json<{ token: string }>().token;
      return { headers: bearer(t) };
    }, 401, "unauthorized", undefined],
    ["a body that is not JSON", async () => ({ headers: { cookie }, body: "{nope" }), 400, "usage", undefined],
    ["no installation ID", async () => ({ headers: { cookie }, body: "{}" }), 400, "usage", "installation_id"],
    ["an installation that does not exist", async () => ({ headers: { cookie }, body: JSON.stringify({ installationId: "nosuch.1" }) }), 404, "not_found", "no_installation"],
    ["another media type", async () => ({ headers: { cookie }, type: "text/plain" }), 415, "unsupported_media_type", undefined],
  ])("refuses %s with %i", async (_what, make, status, code, reason) => {
    const m = await make();
    const r = await call(demo.url, MINT, {
      method: "POST",
      headers: { "content-type": m.type ?? "application/json", origin: demo.url, ...(m.headers ?? {}) },
      body: m.body ?? JSON.stringify({ installationId }),
    });
    expect([r.status, r.json().code]).toEqual([status, code]);
    if (reason !== undefined) expect(r.json().reason).toBe(reason);
    expect(r.text).not.toMatch(/eyJ/);
  });

  it("answers 404 on a console that runs no views", async () => {
    const r = await call(plain.url, MINT, { method: "POST", headers: { "content-type": "application/json", origin: plain.url, ...bearer(await plain.token()) }, body: JSON.stringify({ installationId }) });
    expect([r.status, r.json().code]).toEqual([404, "not_found"]);
  });
});

describe("MintPluginToken on the console's origin", () => {
  it("mints for a session in Authorization", async () => {
    const r = await rpc().mintPluginToken({ installationId }, { headers: bearer(await demo.token("erin", "viewer")) });
    expect(r.installationId).toBe(installationId);
  });
});

/** What a caller sends, to either face. */
interface Caller {
  readonly headers: Record<string, string>;
  readonly installationId?: string;
}

const rpc = () => createClient(TokenService, createConnectTransport({ baseUrl: demo.url, httpVersion: "1.1" }));

/** One mint through the JSON route: the API's status and code. */
async function viaJson(c: Caller): Promise<[number, string]> {
  const r = await call(demo.url, MINT, { method: "POST", headers: { "content-type": "application/json", ...c.headers }, body: JSON.stringify({ installationId: c.installationId ?? installationId }) });
  if (r.status !== 200) expect(r.text).not.toMatch(/eyJ/);
  return [r.status, r.status === 200 ? "ok" : String(r.json().code)];
}

/** One mint through the Connect RPC: its code, or "ok". */
async function viaConnect(c: Caller): Promise<string> {
  const err = await rpc().mintPluginToken({ installationId: c.installationId ?? installationId }, { headers: c.headers }).then(() => null, (e: unknown) => e);
  if (err === null) return "ok";
  expect(String((err as ConnectError).rawMessage)).not.toMatch(/eyJ/);
  return Code[(err as ConnectError).code];
}

describe("both faces of the mint", () => {
  const other = () => `http://localhost:${new URL(demo.url).port}`;
  it.each<[string, number, string, string, () => Promise<Caller>]>([
    ["the cookie, from the console's page", 200, "ok", "ok", async () => ({ headers: { cookie, origin: demo.url } })],
    ["the cookie with Origin: null, same-origin by Fetch Metadata", 200, "ok", "ok", async () => ({ headers: { cookie, origin: "null", "sec-fetch-site": "same-origin" } })],
    ["a Bearer session from a script (no Origin)", 200, "ok", "ok", async () => ({ headers: bearer(await demo.token("erin", "viewer")) })],
    ["no session", 401, "unauthorized", "Unauthenticated", async () => ({ headers: { origin: demo.url } })],
    ["an Authorization that is not Bearer", 401, "unauthorized", "Unauthenticated", async () => ({ headers: { authorization: "Basic YTpi", origin: demo.url } })],
    ["a PluginToken instead of a session", 401, "unauthorized", "Unauthenticated", async () => ({ headers: { ...bearer((await rpc().mintPluginToken({ installationId }, { headers: bearer(await demo.token()) })).token) } })],
    ["the cookie without an Origin", 403, "forbidden", "PermissionDenied", async () => ({ headers: { cookie } })],
    ["the cookie from another site", 403, "forbidden", "PermissionDenied", async () => ({ headers: { cookie, origin: "https://evil.example" } })],
    ["the cookie from the console's other loopback name", 403, "forbidden", "PermissionDenied", async () => ({ headers: { cookie, origin: other() } })],
    ["the cookie with Origin: null from another site", 403, "forbidden", "PermissionDenied", async () => ({ headers: { cookie, origin: "null", "sec-fetch-site": "cross-site" } })],
    ["a Bearer session from another site", 403, "forbidden", "PermissionDenied", async () => ({ headers: { ...bearer(await demo.token()), origin: "https://evil.example" } })],
    ["no installation ID", 400, "usage", "InvalidArgument", async () => ({ headers: { cookie, origin: demo.url }, installationId: "" })],
    ["an installation that does not exist", 404, "not_found", "NotFound", async () => ({ headers: { cookie, origin: demo.url }, installationId: "nosuch.1" })],
    ["a request over the mint's cap", 413, "too_large", "ResourceExhausted", async () => ({ headers: { cookie, origin: demo.url }, installationId: "x".repeat(5000) })],
  ])("%s: %i %s as JSON, %s through Connect", async (_what, status, code, connect, make) => {
    const c = await make();
    expect(await viaJson(c)).toEqual([status, code]);
    expect(await viaConnect(c)).toBe(connect);
  });
});

describe("the console's CSP", () => {
  it.each([["runs views", () => demo, true], ["runs none", () => plain, false]])("frames the plugin proxy only when it %s", async (_what, which, framed) => {
    const d = which();
    const r = await call(d.url, "/healthz");
    expect(r.headers["content-security-policy"]).toBe(framed ? consoleCsp(d.cp.views?.pluginProxyOrigin ?? "") : CSP);
    expect(r.headers["x-frame-options"]).toBe("DENY");
  });
});

describe("revoking the grant", () => {
  it("makes the console's next mint answer 409 with the mint's reason", async () => {
    await deleteResource(demo.cp.runtime.store, "grant", "ledger-view", OWNER_CLI);
    await demo.cp.pass();
    const r = await call(demo.url, MINT, json({ installationId }, { cookie }));
    expect([r.status, r.json().code, r.json().reason]).toEqual([409, "conflict", "view_not_running"]);
  });
});
