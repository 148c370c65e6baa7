/**
 * Minting PluginTokens through real HTTP on 127.0.0.1: the JSON route and the Connect RPC, every
 * refusal with its status in FUN-17's order, and the lifecycle (a revoked grant, a deleted Plugin).
 */
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pluginStream } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import { TokenService } from "../../src/gen/openfief/auth/v1/token_pb.js";
import { LogInstallations, MINT_ERRORS, PLUGIN_AUDIENCE, PluginTokenValidator, USER_AUDIENCE, definitionHash, jwksHandler, mintJsonHandler, mintPluginToken, mintRoutes, signPluginToken } from "../../src/views/index.js";
import { parseManifest } from "../../src/plugins/index.js";
import { CONSOLE, IMAGE, MANIFEST, PLUGIN, call, capturedLogger, installView, mintDeps, serve, tempStore, tokens } from "./support.js";

let store: EventLog;
let cleanup: () => Promise<void>;
let t: Awaited<ReturnType<typeof tokens>>;
let deps: ReturnType<typeof mintDeps>;
let json: Awaited<ReturnType<typeof serve>>;
let connect: Awaited<ReturnType<typeof serve>>;
let id: string;
const log = capturedLogger();

beforeAll(async () => {
  ({ store, cleanup } = await tempStore());
  t = await tokens();
  await installView(store);
  await installView(store, "other");
  deps = { ...mintDeps(store, t), logger: log.logger };
  json = await serve(mintJsonHandler(deps));
  connect = await serve(connectNodeAdapter({ routes: mintRoutes(deps) }));
  id = (await new LogInstallations(store).byName(PLUGIN))?.id ?? "";
});

afterAll(async () => {
  await json.close();
  await connect.close();
  await cleanup();
});

async function mint(authorization: string | undefined, body: unknown = { installationId: id }): Promise<{ status: number; json: () => Record<string, unknown> }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (authorization !== undefined) headers["authorization"] = authorization;
  return call(json.url, "POST", "/api/v1/plugin-tokens", headers, JSON.stringify(body));
}

describe("the mint's JSON route", () => {
  it("mints a PluginToken bound to the installation, carrying exactly FUN-17's claims and installation_name", async () => {
    const r = await mint(`Bearer ${await t.session("alice")}`);
    expect(r.status).toBe(200);
    const body = r.json();
    const v = await t.plugins.verify(String(body["token"]));
    const m = parseManifest(MANIFEST);
    if (!v.ok || !m.ok) throw new Error("verify");
    expect(v.claims).toEqual({
      sub: "alice", installation_id: id, cluster_id: "embedded", plugin_name: "ghcr.io/openfief/ledger-view", plugin_version: IMAGE.split("@")[1],
      definition_hash: definitionHash(m.value), installation_name: PLUGIN, iss: "openfief", aud: PLUGIN_AUDIENCE, iat: expect.any(Number), exp: expect.any(Number),
    });
    expect((v.claims as unknown as { exp: number; iat: number }).exp - (v.claims as unknown as { iat: number }).iat).toBe(900);
    expect(body["installationId"]).toBe(id);
  });

  it.each([
    { name: "no session", auth: async () => undefined, body: () => ({ installationId: id }), status: 401, code: "unauthenticated" },
    { name: "a session that does not verify", auth: async () => "Bearer abc.def.ghi", body: () => ({ installationId: id }), status: 401, code: "unauthenticated" },
    { name: "a PluginToken instead of a session", auth: async () => `Bearer ${(await signPluginToken(t.signer, { sub: "alice", installation_id: id, cluster_id: "embedded", plugin_name: "x", plugin_version: "y", definition_hash: "z", installation_name: PLUGIN })).token}`, body: () => ({ installationId: id }), status: 401, code: "unauthenticated" },
    {
      name: "a token for both audiences",
      auth: async () => {
        const { kid, key } = await t.ring.signingKey();
        const now = Math.floor(Date.now() / 1000);
        return `Bearer ${await new SignJWT({ sub: "alice" }).setProtectedHeader({ alg: "ES256", kid }).setIssuer("openfief").setAudience([USER_AUDIENCE, PLUGIN_AUDIENCE]).setIssuedAt(now).setExpirationTime(now + 60).sign(key)}`;
      },
      body: () => ({ installationId: id }), status: 401, code: "unauthenticated",
    },
    { name: "no installation ID", auth: async () => `Bearer ${await t.session("alice")}`, body: () => ({}), status: 400, code: "invalid_argument" },
    { name: "a user who may not view the plugin", auth: async () => `Bearer ${await t.session("bob")}`, body: () => ({ installationId: id }), status: 403, code: "permission_denied" },
    { name: "a user who may view only another plugin", auth: async () => `Bearer ${await t.session("carol")}`, body: () => ({ installationId: id }), status: 403, code: "permission_denied" },
    { name: "a missing installation, to a user who could view it", auth: async () => `Bearer ${await t.session("alice")}`, body: () => ({ installationId: "nothing.12" }), status: 404, code: "not_found" },
    { name: "a missing installation, to a user who could not view it (FUN-12)", auth: async () => `Bearer ${await t.session("carol")}`, body: () => ({ installationId: "nothing.12" }), status: 403, code: "permission_denied" },
    { name: "an ID of an earlier life of the Plugin", auth: async () => `Bearer ${await t.session("alice")}`, body: () => ({ installationId: `${PLUGIN}.999` }), status: 404, code: "not_found" },
  ])("refuses $name with $status", async ({ auth, body, status, code }) => {
    const r = await mint(await auth(), body());
    expect(r.status).toBe(status);
    expect((r.json()["error"] as Record<string, unknown>)["code"]).toBe(code);
    expect(JSON.stringify(r.json())).not.toMatch(/eyJ/);
  });

  it.each([
    ["a name without its number", PLUGIN],
    ["a number without a name", ".12"],
    ["a path", `../${PLUGIN}.1`],
    ["a name that is no plugin name", "Ledger_View.1"],
    ["a number that is not one", `${PLUGIN}.01`],
    ["a number", 12],
    ["an empty ID", ""],
    ["an ID past its cap", `${"a".repeat(80)}.1`],
  ])("refuses %s as an installation ID (400) before any lookup", async (_what, installationId) => {
    let lookups = 0;
    const real = new LogInstallations(store);
    const counted = { ...deps, installations: { get: (x: string) => { lookups++; return real.get(x); }, byName: (n: string) => { lookups++; return real.byName(n); } }, access: { canView: async (u: string, i: { id: string; name: string | null }) => { lookups++; return deps.access.canView(u, i); } } };
    const r = await mintPluginToken(counted, { caller: { authorization: `Bearer ${await t.session("alice")}`, cookie: undefined, origin: undefined, secFetchSite: undefined }, installationId });
    expect(r).toMatchObject({ ok: false, error: { code: "invalid_argument", reason: "installation_id" } });
    expect(lookups).toBe(0);
  });

  it.each([
    { name: "a GET", method: "GET", type: "application/json", status: 405 },
    { name: "a form post", method: "POST", type: "application/x-www-form-urlencoded", status: 415 },
  ])("refuses $name", async ({ method, type, status }) => {
    const r = await call(json.url, method, "/x", { "content-type": type, authorization: `Bearer ${await t.session("alice")}` }, method === "GET" ? undefined : "installationId=x");
    expect(r.status).toBe(status);
  });

  it("refuses a body over its cap before parsing it", async () => {
    const r = await call(json.url, "POST", "/x", { "content-type": "application/json", authorization: `Bearer ${await t.session("alice")}` }, JSON.stringify({ installationId: id, pad: "x".repeat(10_000) }));
    expect(r.status).toBe(413);
  });

  it("mints shorter tokens when configured to, never longer than 15 minutes", async () => {
    const short = await serve(mintJsonHandler({ ...deps, ttlSeconds: 30 }));
    const long = await serve(mintJsonHandler({ ...deps, ttlSeconds: 3600 }));
    const session = `Bearer ${await t.session("alice")}`;
    const body = JSON.stringify({ installationId: id });
    const a = await call(short.url, "POST", "/x", { "content-type": "application/json", authorization: session }, body);
    const b = await call(long.url, "POST", "/x", { "content-type": "application/json", authorization: session }, body);
    await short.close();
    await long.close();
    const life = async (r: typeof a): Promise<number> => {
      const v = await t.plugins.verify(String(r.json()["token"]));
      if (!v.ok) throw new Error(v.problem);
      return (v.claims as unknown as { exp: number; iat: number }).exp - (v.claims as unknown as { iat: number }).iat;
    };
    expect(await life(a)).toBe(30);
    expect(await life(b)).toBe(900);
  });

  it("never logs a token", async () => {
    await mint("Bearer abc.def.ghi");
    const text = JSON.stringify(log.lines());
    expect(text).toContain("plugin token mint refused");
    expect(text).not.toContain("abc.def.ghi");
  });

  it("counts mints by outcome", async () => {
    const text = await deps.registry.metrics();
    expect(text).toMatch(/openfief_plugin_token_mints_total\{outcome="ok"\} [1-9]/);
    expect(text).toMatch(/openfief_plugin_token_mints_total\{outcome="unauthenticated"\} [1-9]/);
  });
});

describe("the published keys", () => {
  it("let a verifier that holds only the JWKS (fetched over HTTP) check a minted token", async () => {
    const keys = await serve(jwksHandler(t.ring));
    const r = await call(keys.url, "GET", "/.well-known/jwks.json");
    await keys.close();
    expect(r.headers["content-type"]).toBe("application/jwk-set+json");
    const jwks = r.json() as unknown as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys.every((k) => k["d"] === undefined)).toBe(true);
    const minted = await mint(`Bearer ${await t.session("alice")}`);
    const remote = new PluginTokenValidator({ jwks: () => jwks as never });
    expect((await remote.verify(String(minted.json()["token"]))).ok).toBe(true);
  });
});

describe("the mint's status table", () => {
  it("pins each code's HTTP status and Connect code", () => {
    expect(Object.fromEntries(Object.entries(MINT_ERRORS).map(([k, v]) => [k, [v.status, Code[v.connect]]]))).toEqual({
      unauthenticated: [401, "Unauthenticated"], invalid_argument: [400, "InvalidArgument"], permission_denied: [403, "PermissionDenied"],
      not_found: [404, "NotFound"], failed_precondition: [409, "FailedPrecondition"], unavailable: [503, "Unavailable"],
    });
  });

  it("answers 503, failing closed, when the installations cannot be read", async () => {
    const broken = serve(mintJsonHandler({ ...deps, installations: { get: () => Promise.reject(new Error("disk")), byName: () => Promise.reject(new Error("disk")) } }));
    const s = await broken;
    const r = await call(s.url, "POST", "/x", { "content-type": "application/json", authorization: `Bearer ${await t.session("alice")}` }, JSON.stringify({ installationId: id }));
    await s.close();
    expect(r.status).toBe(503);
  });
});

describe("the MintPluginToken RPC", () => {
  const client = () => createClient(TokenService, createConnectTransport({ baseUrl: connect.url, httpVersion: "1.1" }));

  it("mints for a session in the Authorization header", async () => {
    const r = await client().mintPluginToken({ installationId: id }, { headers: { authorization: `Bearer ${await t.session("alice")}` } });
    expect((await t.plugins.verify(r.token)).ok).toBe(true);
    expect(r.installationId).toBe(id);
    expect(Number(r.expireTime?.seconds) * 1000 - Date.now()).toBeGreaterThan(800_000);
  });

  it.each([
    { name: "no session", auth: async () => ({}), code: Code.Unauthenticated },
    { name: "a PluginToken", auth: async () => ({ authorization: `Bearer ${(await client().mintPluginToken({ installationId: id }, { headers: { authorization: `Bearer ${await t.session("alice")}` } })).token}` }), code: Code.Unauthenticated },
    { name: "a user who may not view it", auth: async () => ({ authorization: `Bearer ${await t.session("bob")}` }), code: Code.PermissionDenied },
    { name: "a missing installation", auth: async () => ({ authorization: `Bearer ${await t.session("alice")}` }), code: Code.NotFound, installationId: "gone.3" },
  ])("refuses $name with its Connect code", async ({ auth, code, installationId }) => {
    const err = await client().mintPluginToken({ installationId: installationId ?? id }, { headers: await auth() }).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(code);
  });

  it("maps FailedPrecondition through Connect for an in-process client too", async () => {
    const stream = pluginStream("other");
    await store.append([{ stream, type: "plugin.deleted", actor: "owner:cli", data: { name: "other" } }]);
    const otherId = (await new LogInstallations(store).byName("other"))?.id ?? "";
    const transport = createRouterTransport(mintRoutes(deps));
    const err = await createClient(TokenService, transport).mintPluginToken({ installationId: otherId }, { headers: { authorization: `Bearer ${await t.session("alice")}` } }).then(() => null, (e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
  });
});

describe("the console's rule on both faces", () => {
  const client = () => createClient(TokenService, createConnectTransport({ baseUrl: connect.url, httpVersion: "1.1" }));
  const cookie = async () => `openfief_session=${await t.session("alice")}`;
  it.each<[string, number, Code | null, () => Promise<Record<string, string>>]>([
    ["the console's cookie from the console's page", 200, null, async () => ({ cookie: await cookie(), origin: CONSOLE })],
    ["a Bearer session without an Origin (a script)", 200, null, async () => ({ authorization: `Bearer ${await t.session("alice")}` })],
    ["the console's cookie without an Origin", 403, Code.PermissionDenied, async () => ({ cookie: await cookie() })],
    ["the console's cookie from a view's origin", 403, Code.PermissionDenied, async () => ({ cookie: await cookie(), origin: "http://localhost:47001" })],
    ["a Bearer session from another site", 403, Code.PermissionDenied, async () => ({ authorization: `Bearer ${await t.session("alice")}`, origin: "https://evil.example" })],
    ["another cookie's name", 401, Code.Unauthenticated, async () => ({ cookie: `session=${await t.session("alice")}`, origin: CONSOLE })],
  ])("%s: %i as JSON, the same through Connect", async (_what, status, code, headers) => {
    const h = await headers();
    const r = await call(json.url, "POST", "/x", { "content-type": "application/json", ...h }, JSON.stringify({ installationId: id }));
    expect(r.status).toBe(status);
    if (status !== 200) expect((r.json()["error"] as Record<string, unknown>)["reason"]).toBe(status === 403 ? "origin" : "missing");
    const err = await client().mintPluginToken({ installationId: id }, { headers: h }).then(() => null, (e: unknown) => e);
    expect(err === null ? null : (err as ConnectError).code).toBe(code);
  });
});

describe("the lifecycle", () => {
  it("makes the next mint fail once the grant is revoked, and work again once it is back", async () => {
    const session = `Bearer ${await t.session("alice")}`;
    expect((await mint(session)).status).toBe(200);
    const stream = pluginStream(PLUGIN);
    await store.append([{ stream, type: "grant.deleted", actor: "owner:cli", data: { name: PLUGIN } }]);
    const refused = await mint(session);
    expect(refused.status).toBe(409);
    expect(refused.json()["error"]).toMatchObject({ code: "failed_precondition", reason: "view_not_running" });
    await store.append([{ stream, type: "grant.observed", actor: "owner:cli", data: { name: PLUGIN, spec: { capabilities: ["view"] } } }]);
    expect((await mint(session)).status).toBe(200);
  });

  it("answers 409 while a deleted Plugin's workload is torn down, then 404", async () => {
    await installView(store, "doomed");
    const doomed = (await new LogInstallations(store).byName("doomed"))?.id ?? "";
    const stream = pluginStream("doomed");
    await store.append([{ stream, type: "plugin.deleted", actor: "owner:cli", data: { name: "doomed" } }]);
    const session = `Bearer ${await t.session("alice")}`;
    const during = await mint(session, { installationId: doomed });
    expect(during.status).toBe(409);
    expect(during.json()["error"]).toMatchObject({ code: "failed_precondition", reason: "deleting" });
    const [desired] = await store.append([{ stream, type: "workload.desired", actor: "reconciler", data: { name: "doomed", running: false, objects: [], allowList: [] } }]);
    await store.append([{ stream, type: "workload.applied", actor: "reconciler", causedBy: desired?.seq ?? null, data: { name: "doomed", target: "directory", ok: true } }]);
    expect((await mint(session, { installationId: doomed })).status).toBe(404);
  });

  it("gives a Plugin made again a new installation ID, so the old one is not found", async () => {
    await installView(store, "reborn");
    const before = (await new LogInstallations(store).byName("reborn"))?.id ?? "";
    const stream = pluginStream("reborn");
    await store.append([{ stream, type: "plugin.deleted", actor: "owner:cli", data: { name: "reborn" } }]);
    await store.append([{ stream, type: "workload.desired", actor: "reconciler", data: { name: "reborn", running: false, objects: [], allowList: [] } }]);
    await installView(store, "reborn");
    const after = (await new LogInstallations(store).byName("reborn"))?.id ?? "";
    expect(after).not.toBe(before);
    const session = `Bearer ${await t.session("alice")}`;
    expect((await mint(session, { installationId: before })).status).toBe(404);
    expect((await mint(session, { installationId: after })).status).toBe(200);
  });
});
