/**
 * The HTTP capability end to end: a relay guest hands its call's request to `host_call`, the host
 * checks it and sends it through the real egress proxy (on 127.0.0.1, with a real DNS server and
 * a connect function that maps "public" addresses to a local TLS server), with the plugin's own
 * token. Nothing dials anything but 127.0.0.1.
 */
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { effective, parseManifest } from "../../src/plugins/index.js";
import { originsOf, proxyHttp, type HttpCapability } from "../../src/host/index.js";
import { startDnsServer, type TestDnsServer } from "../egress/support/dns-server.js";
import { startHarness, TOKENS, type Harness } from "../egress/support/harness.js";
import { makeCert } from "../egress/support/tls.js";
import { startHost, type TestHost } from "./support/host.js";
import { BODY, guest } from "./support/wat.js";

const API = "https://api.example.com";
const OTHER = "https://other.example.com";
const DECLARED = { capabilities: ["connector"], egress: [{ host: "api.example.com" }, { host: "other.example.com" }, { host: "unlisted.example.com" }], secrets: [], dataTiers: [] };

let dns: TestDnsServer;
let origin: Server;
let originPort: number;
let proxy: Harness;
let http: HttpCapability;
let t: TestHost;
let relay: string;
const cert = makeCert(["api.example.com", "other.example.com", "unlisted.example.com"]);
const seen: string[] = [];

beforeAll(async () => {
  dns = await startDnsServer({
    "api.example.com": { kind: "answer", addresses: ["8.8.4.4"], ttl: 30 },
    "other.example.com": { kind: "answer", addresses: ["8.8.8.8"], ttl: 30 },
    "unlisted.example.com": { kind: "answer", addresses: ["9.9.9.9"], ttl: 30 },
  });
  origin = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    seen.push(`${req.method ?? ""} ${req.headers.host ?? ""}${req.url ?? ""}`);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/redirect") return void res.writeHead(302, { location: "https://evil.example.com/next" }).end();
      if (req.url === "/binary") return void res.writeHead(200, { "content-type": "application/octet-stream" }).end(Buffer.from([0xff, 0xfe, 0x00, 0x01]));
      if (req.url === "/big") return void res.writeHead(200).end("x".repeat(64 * 1024));
      if (req.url === "/echo") return void res.writeHead(200, { "x-seen-auth": String(req.headers["proxy-authorization"] !== undefined) }).end(Buffer.concat(chunks));
      res.writeHead(200, { "content-type": "text/plain", "x-rates": "1" }).end(`hello from ${req.headers.host ?? "?"}${req.url ?? ""}`);
    });
  });
  await new Promise<void>((r) => origin.listen(0, "127.0.0.1", () => r()));
  originPort = (origin.address() as AddressInfo).port;
  proxy = await startHarness({ dnsServer: dns.server, allowLists: { alpha: "api.example.com:443\nother.example.com:443\n", beta: "" } });
  proxy.routes.set("8.8.4.4", originPort);
  proxy.routes.set("8.8.8.8", originPort);
  proxy.routes.set("9.9.9.9", originPort);
  http = proxyHttp({ proxyUrl: `http://127.0.0.1:${proxy.port}`, ca: cert.cert });
  t = await startHost({ http, caps: { httpResponseBytes: 32 * 1024 }, limits: { time: 5000 } });
  const r = await t.host.install(await guest({ body: BODY.relay, manifestResponse: JSON.stringify({ result: DECLARED }) }));
  if (!r.ok) throw new Error(r.error.message);
  relay = r.value.digest;
});

afterAll(async () => {
  await t.close();
  await http.close();
  await proxy.close();
  await new Promise<void>((r) => origin.close(() => r()));
  await dns.close();
});

beforeEach(() => {
  proxy.dials.length = 0;
  proxy.records.length = 0;
  seen.length = 0;
});

function get(url: string, origins: readonly string[] = [API, OTHER], token: string = TOKENS.alpha, extra: Record<string, unknown> = {}) {
  return t.host.call("alpha", relay, { method: "http", params: { method: "GET", url, headers: {}, ...extra }, origins, egressToken: token });
}

describe("a plugin's HTTP", () => {
  it("reaches an approved origin through the egress proxy with the plugin's own identity", async () => {
    const r = await get(`${API}/rates?day=2026-12-01`);
    expect(r).toEqual({ ok: true, result: { status: 200, headers: expect.objectContaining({ "content-type": "text/plain", "x-rates": "1" }), body: "hello from api.example.com/rates?day=2026-12-01" } });
    expect(proxy.dials).toEqual([{ address: "8.8.4.4", family: 4, port: 443 }]);
    expect(proxy.records).toEqual([expect.objectContaining({ plugin: "alpha", host: "api.example.com", port: 443, allowed: true })]);
  });

  it("refuses an origin that is not approved before anything is dialed", async () => {
    const r = await get("https://evil.example.com/steal");
    expect(r).toEqual({ ok: false, error: { source: "plugin", code: "origin_not_approved", message: "origin https://evil.example.com is not approved for this plugin" } });
    expect(proxy.dials).toEqual([]);
    expect(proxy.records).toEqual([]);
    expect((await t.store.read({ type: "plugin.call", stream: "plugin/alpha" })).at(-1)?.data).toMatchObject({ source: "plugin", code: "origin_not_approved" });
  });

  it("returns a redirect to the plugin instead of following it, so a guest that follows it is checked again", async () => {
    const r = await get(`${API}/redirect`);
    expect(r.ok && r.result).toMatchObject({ status: 302, headers: { location: "https://evil.example.com/next" } });
    // One request reached the origin (over a new or a kept-alive tunnel), and nothing else.
    expect(seen).toEqual(["GET api.example.com/redirect"]);
    const dials = proxy.dials.length;
    const follow = await get("https://evil.example.com/next");
    expect(follow.ok === false && follow.error.code).toBe("origin_not_approved");
    expect(proxy.dials).toHaveLength(dials);
    expect(seen).toEqual(["GET api.example.com/redirect"]);
  });

  it("grants no HTTP to a call without origins", async () => {
    const r = await get(`${API}/x`, []);
    expect(r.ok === false && r.error).toMatchObject({ code: "origin_not_approved", message: "this call is not granted HTTP" });
    expect(proxy.dials).toEqual([]);
  });

  it("runs the intersection of the declared origins and the grant (OpenFief's rule)", async () => {
    const manifest = parseManifest(DECLARED);
    if (!manifest.ok) throw new Error("manifest");
    const perms = effective(manifest.value, { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [], dataTiers: [] });
    if (!perms.ok) throw new Error("grant");
    const origins = originsOf(perms.value.egress);
    expect(origins).toEqual([API]);
    // The module declares two more origins than the grant approves, and still runs.
    expect((await get(`${API}/ok`, origins)).ok).toBe(true);
    const pending = await get(`${OTHER}/later`, origins);
    expect(pending.ok === false && pending.error.code).toBe("origin_not_approved");
  });

  it("leaves the proxy's allow-list in force: an approved origin the proxy does not list fails", async () => {
    const r = await get("https://unlisted.example.com/x", ["https://unlisted.example.com"]);
    expect(r).toEqual({ ok: false, error: { source: "plugin", code: "http_failed", message: "the egress proxy refused the connection (407)" } });
    expect(proxy.records).toEqual([expect.objectContaining({ plugin: "alpha", host: "unlisted.example.com", allowed: false })]);
  });

  it("says a granted origin that does not resolve could not be reached, not that it was refused", async () => {
    proxy.allowLists.setData({ alpha: "api.example.com:443\nnowhere.example.com:443\nother.example.com:443\n", beta: "" });
    try {
      const r = await get("https://nowhere.example.com/x", ["https://nowhere.example.com"]);
      expect(r).toEqual({ ok: false, error: { source: "plugin", code: "http_failed", message: "the egress proxy could not reach the origin, or refused its address (502)" } });
      expect(proxy.records.at(-1)).toMatchObject({ plugin: "alpha", host: "nowhere.example.com", allowed: false, reason: "dns_nxdomain" });
    } finally {
      proxy.allowLists.setData({ alpha: "api.example.com:443\nother.example.com:443\n", beta: "" });
    }
  });

  it("is identified by the token it is handed: another plugin's token gets another plugin's allow-list", async () => {
    const r = await get(`${API}/x`, [API], TOKENS.beta);
    expect(r.ok === false && r.error.code).toBe("http_failed");
    expect(proxy.records).toEqual([expect.objectContaining({ plugin: "beta", allowed: false })]);
  });

  it.each([
    ["an http URL", { url: "http://api.example.com/" }, "invalid_request", /only https/],
    ["credentials in the URL", { url: "https://u:p@api.example.com/" }, "invalid_request", /credentials/],
    ["a forbidden header", { url: `${API}/`, headers: { "proxy-authorization": "Basic eA==" } }, "invalid_request", /set by the host/],
    ["a header with a line break", { url: `${API}/`, headers: { "x-a": "1\r\nx-b: 2" } }, "invalid_request", /CR, LF/],
    ["an unknown method", { url: `${API}/`, method: "TRACE" }, "invalid_request", /params\.method/],
    ["a body on a GET", { url: `${API}/`, body: "x" }, "invalid_request", /no body/],
    ["a body over the cap", { url: `${API}/`, method: "POST", body: "x".repeat(2 * 1024 * 1024) }, "invalid_request", /larger than/],
    ["bad base64", { url: `${API}/`, method: "POST", bodyBase64: "a!b=" }, "invalid_request", /base64/],
    ["a response over the cap", { url: `${API}/big` }, "http_failed", /larger than the cap/],
  ])("refuses %s", async (_name, params, code, message) => {
    const r = await t.host.call("alpha", relay, { method: "http", params: { method: "GET", ...params }, origins: [API], egressToken: TOKENS.alpha });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe(code);
    expect(r.error.message).toMatch(message);
  });

  it("sends a body and returns a binary answer as base64", async () => {
    const posted = await t.host.call("alpha", relay, { method: "http", params: { method: "POST", url: `${API}/echo`, bodyBase64: Buffer.from("päyload").toString("base64") }, origins: [API], egressToken: TOKENS.alpha });
    expect(posted.ok && posted.result).toMatchObject({ status: 200, body: "päyload", headers: { "x-seen-auth": "false" } });
    const binary = await get(`${API}/binary`, [API]);
    expect(binary.ok && binary.result).toMatchObject({ status: 200, bodyBase64: Buffer.from([0xff, 0xfe, 0x00, 0x01]).toString("base64") });
  });

  it("answers a host_call method other than http with unknown_method", async () => {
    const r = await t.host.call("alpha", relay, { method: "dns", params: {}, origins: [API], egressToken: TOKENS.alpha });
    expect(r.ok === false && r.error).toMatchObject({ source: "plugin", code: "unknown_method" });
  });

  it("never shows the egress token in a log line or an event", async () => {
    await get(`${API}/x`);
    await get("https://unlisted.example.com/x", ["https://unlisted.example.com"]);
    for (const line of t.raw) expect(line).not.toContain(TOKENS.alpha);
    expect(JSON.stringify(await t.store.read())).not.toContain(TOKENS.alpha);
  });
});
