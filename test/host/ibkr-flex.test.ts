/**
 * The committed ibkr-flex module in the real plugin host, its HTTP through the real egress proxy
 * to a local fake of IBKR's Flex Web Service (TLS, named ndcdyn.interactivebrokers.com; the test's
 * DNS answers a public address the proxy's connect maps to 127.0.0.1): the token and query id
 * handed by the host's `secret` call, the service's two steps, a real `wait` between tries, and
 * the token nowhere in the host's log, its events or the proxy's decisions.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { proxyHttp, type HttpCapability } from "../../src/host/index.js";
import { startDnsServer, type TestDnsServer } from "../egress/support/dns-server.js";
import { startHarness, TOKENS, type Harness } from "../egress/support/harness.js";
import { makeCert } from "../egress/support/tls.js";
import { startHost, type TestHost } from "./support/host.js";

const DIR = join(import.meta.dirname, "../../plugins/ibkr-flex");
const MODULE = readFileSync(join(DIR, "build/ibkr-flex.wasm"));
const fixture = (name: string): string => readFileSync(join(DIR, "fixtures", name), "utf8");
const ORIGIN = "https://ndcdyn.interactivebrokers.com";
const TOKEN = "557201948836104729355018";
const QUERY = "1048576";
const cert = makeCert(["ndcdyn.interactivebrokers.com", "gdcdyn.interactivebrokers.com"]);

let dns: TestDnsServer;
let fake: Server;
let proxy: Harness;
let http: HttpCapability;
let t: TestHost;
let digest: string;
/** What the fake answers GetStatement, in turn (the last repeats); and what it was asked. */
let statements: string[] = [];
const asked: string[] = [];

beforeAll(async () => {
  dns = await startDnsServer({ "ndcdyn.interactivebrokers.com": { kind: "answer", addresses: ["8.8.4.4"], ttl: 30 } });
  fake = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    const url = new URL(req.url ?? "/", ORIGIN);
    asked.push(`${url.pathname} t=${url.searchParams.get("t") === TOKEN ? "TOKEN" : "other"} q=${url.searchParams.get("q") ?? ""} v=${url.searchParams.get("v") ?? ""} ua=${req.headers["user-agent"] ?? ""}`);
    if (url.searchParams.get("t") !== TOKEN) return void res.writeHead(200, { "content-type": "text/xml" }).end(fixture("send-request-token-invalid.xml"));
    if (url.pathname.endsWith("/SendRequest")) return void res.writeHead(200, { "content-type": "text/xml" }).end(fixture("send-request-success.xml"));
    if (url.pathname.endsWith("/GetStatement")) {
      const body = statements.length > 1 ? (statements.shift() as string) : (statements[0] as string);
      return void res.writeHead(200, { "content-type": "text/xml" }).end(body);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => fake.listen(0, "127.0.0.1", () => r()));
  proxy = await startHarness({ dnsServer: dns.server, allowLists: { alpha: "ndcdyn.interactivebrokers.com:443\n" } });
  proxy.routes.set("8.8.4.4", (fake.address() as AddressInfo).port);
  http = proxyHttp({ proxyUrl: `http://127.0.0.1:${proxy.port}`, ca: cert.cert });
  // The module is compiled before the first call, so a call's time is the plugin's own.
  t = await startHost({ http, limits: { time: 4000 } });
  const r = await t.host.install(MODULE);
  if (!r.ok) throw new Error(r.error.message);
  digest = r.value.digest;
  await t.host.prepare(digest);
  // One call first, so the HTTP client is loaded and a tunnel is open before any timed call.
  statements = [fixture("statement.xml")];
  await sync();
}, 60_000);

afterAll(async () => {
  await t.close();
  await http.close();
  await proxy.close();
  await new Promise<void>((r) => fake.close(() => r()));
  await dns.close();
});

beforeEach(() => {
  asked.length = 0;
  statements = [fixture("statement.xml")];
});

const secretValues = (values: Record<string, string>) => new Map([["flex", new Map(Object.entries(values))]]);

function sync(values: Record<string, string> = { token: TOKEN, "query-id": QUERY }) {
  return t.host.call("alpha", digest, { method: "sync", params: { batchId: "b-1", watermark: "2026-11-30" }, origins: [ORIGIN], egressToken: TOKENS.alpha, secretValues: secretValues(values) });
}

describe("ibkr-flex in the plugin host", () => {
  it("fetches the statement through the egress proxy with the Secret's token and query id, and maps it", async () => {
    const r = await sync();
    expect(r.ok).toBe(true);
    const delivery = (r.ok ? r.result : null) as { delivery: { watermark: string; transactions: unknown[]; balanceAssertions: unknown[]; prices: unknown[] } };
    expect(delivery.delivery.watermark).toBe("2026-11-30");
    expect([delivery.delivery.transactions.length, delivery.delivery.balanceAssertions.length, delivery.delivery.prices.length]).toEqual([5, 2, 2]);
    expect(asked).toEqual([
      `/AccountManagement/FlexWebService/SendRequest t=TOKEN q=${QUERY} v=3 ua=OpenFief-ibkr-flex/1.0`,
      "/AccountManagement/FlexWebService/GetStatement t=TOKEN q=7382915066 v=3 ua=OpenFief-ibkr-flex/1.0",
    ]);
    expect(proxy.records.at(-1)).toMatchObject({ plugin: "alpha", host: "ndcdyn.interactivebrokers.com", port: 443, allowed: true });
  });

  it("waits between tries while IBKR generates the statement, within the call's time", async () => {
    statements = [fixture("get-statement-in-progress.xml"), fixture("statement.xml")];
    const started = performance.now();
    const r = await sync();
    expect(r.ok).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(480);
    expect(asked.filter((a) => a.includes("GetStatement"))).toHaveLength(2);
  });

  it("answers http_failed (Unavailable) when the statement is never ready in time", async () => {
    statements = [fixture("get-statement-in-progress.xml")];
    const r = await sync();
    expect(r.ok === false && r.error).toMatchObject({ source: "plugin", code: "http_failed" });
  });

  it("reads the Secret on every call: a rotated token is used at once, and a refused one is invalid_request", async () => {
    const r = await sync({ token: "999999999999", "query-id": QUERY });
    expect(r.ok === false && r.error).toMatchObject({ source: "plugin", code: "invalid_request" });
    expect(asked).toEqual([`/AccountManagement/FlexWebService/SendRequest t=other q=${QUERY} v=3 ua=OpenFief-ibkr-flex/1.0`]);
    const missing = await t.host.call("alpha", digest, { method: "sync", params: { batchId: "b-2" }, origins: [ORIGIN], egressToken: TOKENS.alpha });
    expect(missing.ok === false && missing.error).toEqual({ source: "plugin", code: "invalid_request", message: "no Secret is granted to this instance for the role flex, or it does not exist" });
  });

  it("never lets the token reach the host's log, its events or the proxy's decisions", async () => {
    await sync();
    const events = JSON.stringify(await t.store.read({}));
    expect(events).not.toContain(TOKEN);
    expect(t.raw.join("\n")).not.toContain(TOKEN);
    expect(JSON.stringify(proxy.records)).not.toContain(TOKEN);
  });
});
