/**
 * ibkr-flex installed from the demo as an owner installs it, through the compiled bundle: its
 * Plugin and grant applied from examples/ibkr-flex/, its instance Secret the owner's file, and
 * `openfief call ibkr-flex sync` reaching a local fake of IBKR's Flex Web Service (SendRequest,
 * then GetStatement, over TLS with a test certificate the CLI trusts through NODE_EXTRA_CA_CERTS)
 * only through the control plane's egress proxy: the test's DNS answers a public address for
 * ndcdyn.interactivebrokers.com, which the proxy checks and its test dialer maps to the fake.
 * The statement's trades, cash and positions come back; the token is in no output, log, event or
 * file of the data folder but the Secret; a Flex error code is invalid_request (InvalidArgument)
 * and IBKR failing is http_failed (Unavailable); `openfief import` maps a saved statement.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import { connect as netConnect, Socket, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { applyDemoFolder, demoSettings } from "../../src/app/index.js";
import { startControlPlane } from "../../src/compose/index.js";
import type { ControlPlane } from "../../src/compose/index.js";
import { startDnsServer } from "../egress/support/dns-server.js";
import type { TestDnsServer } from "../egress/support/dns-server.js";
import { makeCert } from "../egress/support/tls.js";
import { freshBundle, ok, ROOT, spawnOpenfief } from "./support.js";

const FIXTURES = join(ROOT, "plugins", "ibkr-flex", "fixtures");
const fixture = (name: string): string => readFileSync(join(FIXTURES, name), "utf8");
const TOKEN = "804417259930116642870553";
const QUERY = "2097152";
/** The public address the test's DNS gives IBKR's host; the proxy's dialer maps it to the fake. */
const IBKR_ADDRESS = "8.8.4.4";
const cert = makeCert(["ndcdyn.interactivebrokers.com", "gdcdyn.interactivebrokers.com"]);

let dir: string;
let data: string;
let caFile: string;
let dns: TestDnsServer;
let fake: Server;
let cp: ControlPlane;
/** How the fake answers: the Flex service as documented, a refused token, or an HTTP failure. */
let mode: "ok" | "refuse" | "down" = "ok";
const asked: string[] = [];
/** Everything every command of this file printed, searched for the token at the end. */
const printed: string[] = [];

interface Delivery {
  batchId: string;
  watermark: string;
  institution: { id: string };
  transactions: { sourceId: string; date: string; postings: { amount: string; currency: string }[] }[];
  balanceAssertions: { date: string; amount: string; currency: string }[];
  prices: { date: string; price: string; currency: string }[];
}

beforeAll(freshBundle, 180_000);
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-ibkr-"));
  data = join(dir, "data");
  caFile = join(dir, "fake-ibkr-ca.pem");
  await writeFile(caFile, cert.cert);
  dns = await startDnsServer({ "ndcdyn.interactivebrokers.com": { kind: "answer", addresses: [IBKR_ADDRESS], ttl: 30 } });
  fake = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    const url = new URL(req.url ?? "/", "https://ndcdyn.interactivebrokers.com");
    asked.push(`${url.pathname.split("/").at(-1) ?? ""} t=${url.searchParams.get("t") === TOKEN ? "TOKEN" : "other"} q=${url.searchParams.get("q") ?? ""} ua=${req.headers["user-agent"] ?? ""}`);
    const xml = (body: string) => void res.writeHead(200, { "content-type": "text/xml" }).end(body);
    if (mode === "down") return void res.writeHead(503, { "content-type": "text/plain" }).end("Service Unavailable");
    if (mode === "refuse" || url.searchParams.get("t") !== TOKEN) return xml(fixture("send-request-token-invalid.xml"));
    if (url.pathname.endsWith("/SendRequest")) return xml(fixture("send-request-success.xml"));
    if (url.pathname.endsWith("/GetStatement")) return xml(fixture("statement.xml"));
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => fake.listen(0, "127.0.0.1", () => r()));
  const fakePort = (fake.address() as AddressInfo).port;
  cp = await startControlPlane({
    dataDir: data,
    logger: pino({ level: "silent" }),
    settings: demoSettings(),
    egress: { port: 0, dnsServers: [dns.server], connect: (a) => (a.address === IBKR_ADDRESS ? netConnect({ host: "127.0.0.1", port: fakePort }) : new Socket()) },
  });
  await applyDemoFolder(cp.runtime.store, "plugins");
  // The owner's steps (examples/ibkr-flex/README.md): the instance's Secret, then its Plugin and grant.
  await mkdir(join(data, "cluster", "secrets"), { recursive: true, mode: 0o700 });
  await writeFile(
    join(data, "cluster", "secrets", "ibkr-flex-flex.yaml"),
    `apiVersion: v1\nkind: Secret\nmetadata: {name: ibkr-flex-flex, namespace: openfief}\nstringData: {token: "${TOKEN}", query-id: "${QUERY}"}\n`,
    { mode: 0o600 },
  );
  await ok(["apply", "-f", join(ROOT, "examples", "ibkr-flex"), "--data", data]);
  await cp.pass();
}, 240_000);

afterAll(async () => {
  await cp?.stop();
  await new Promise<void>((r) => (fake === undefined ? r() : fake.close(() => r())));
  await dns?.close();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

beforeEach(() => {
  mode = "ok";
  asked.length = 0;
});

/** A command through the bundle, trusting the fake's certificate as a system CA; what it printed is kept. */
async function run(args: readonly string[]) {
  const r = await spawnOpenfief([...args, "--data", data], { NODE_EXTRA_CA_CERTS: caFile });
  printed.push(r.stdout, r.stderr);
  return r;
}

/** `openfief call ibkr-flex sync`. */
const callSync = (extra: readonly string[] = []) => run(["call", "ibkr-flex", "sync", ...extra]);

/** Every file of the data folder but the Secret itself, as text. */
function dataFolderText(): string {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (!p.endsWith(join("secrets", "ibkr-flex-flex.yaml"))) out.push(readFileSync(p).toString("latin1"));
    }
  };
  walk(data);
  return out.join("\n");
}

describe("ibkr-flex through the bundle", () => {
  it("is installed from examples/ibkr-flex/ and shown verified: the catalog pins it and the release key signed it", async () => {
    const rows = JSON.parse((await run(["get", "plugins", "--json"])).stdout) as { name: string; status: string; runtime: string | null; signature: { outcome: string } | null }[];
    expect(rows.find((r) => r.name === "ibkr-flex")).toMatchObject({ status: "running", runtime: "wasm", signature: { outcome: "verified" } });
    const why = (await run(["why", "ibkr-flex"])).stdout;
    expect(why).toMatch(/^The catalog pins ibkr-flex at sha256:[0-9a-f]{64} by openfief-release, who signed it: verified since /m);
  }, 60_000);

  it("syncs the statement through the egress proxy: trades, cash and positions, the watermark as given", async () => {
    const r = await callSync(["--params", JSON.stringify({ batchId: "b-e2e-1", watermark: "2026-11-30" })]);
    expect(r.code, r.stderr).toBe(0);
    const { delivery } = JSON.parse(r.stdout) as { delivery: Delivery };
    expect(delivery.batchId).toBe("b-e2e-1");
    expect(delivery.watermark).toBe("2026-11-30");
    expect(delivery.institution.id).toBe("ibkr");
    // Two executions, a dividend, its withholding tax and a deposit; two open positions, each a balance and a price.
    expect(delivery.transactions.map((t) => t.sourceId.split(":")[0]).sort()).toEqual(["cash", "cash", "cash", "trade", "trade"]);
    expect(delivery.balanceAssertions).toHaveLength(2);
    expect(delivery.prices).toHaveLength(2);
    for (const t of delivery.transactions) {
      expect(t.date).toMatch(/^\d{4}-\d\d-\d\d$/);
      for (const p of t.postings) {
        expect(p.amount).toMatch(/^-?\d+(\.\d+)?$/);
        expect(p.currency).toMatch(/^[A-Z]{3}$/);
      }
    }
    expect(asked).toEqual([`SendRequest t=TOKEN q=${QUERY} ua=OpenFief-ibkr-flex/1.0`, "GetStatement t=TOKEN q=7382915066 ua=OpenFief-ibkr-flex/1.0"]);
    // Only through the proxy, which recorded its decision for IBKR's host.
    const decisions = (await run(["log", "--plugin", "ibkr-flex", "--type", "egress.decision", "--json"])).stdout.trim().split("\n").map((l) => JSON.parse(l) as { data: Record<string, unknown> });
    expect(decisions.at(-1)?.data).toMatchObject({ plugin: "ibkr-flex", host: "ndcdyn.interactivebrokers.com", port: 443, allowed: true });
    expect(dns.queries.get("ndcdyn.interactivebrokers.com") ?? 0).toBeGreaterThan(0);
  }, 60_000);

  it("answers invalid_request (InvalidArgument) for a token IBKR refuses, naming its error code", async () => {
    mode = "refuse";
    const r = await callSync(["--json"]);
    expect(r.code).toBe(1);
    const { error } = JSON.parse(r.stdout) as { error: { code: string; source: string; message: string } };
    expect(error).toMatchObject({ code: "invalid_request", source: "plugin" });
    expect(error.message).toMatch(/^SendRequest: the Flex Web Service refused it: 1015 /);
  }, 60_000);

  it("answers http_failed (Unavailable) when IBKR fails", async () => {
    mode = "down";
    const r = await callSync();
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^ibkr-flex sync: http_failed \(reported by the plugin\): SendRequest: IBKR answered HTTP 503$/m);
  }, 60_000);

  it("imports a saved Flex statement as one batch", async () => {
    const r = await run(["import", "ibkr-flex", join(FIXTURES, "statement.xml"), "--media-type", "application/xml"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/as batch import-[0-9a-f-]+/);
    const listed = JSON.parse((await run(["deliveries", "ibkr-flex", "--json"])).stdout) as { deliveries: { plugin: string; kind: string; counts: Record<string, number> }[] };
    expect(listed.deliveries).toEqual([expect.objectContaining({ plugin: "ibkr-flex", kind: "import", counts: expect.objectContaining({ transactions: 5 }) })]);
  }, 60_000);

  it("never shows the token: not in any output, log or event, nor in any file of the data folder but its Secret", async () => {
    // Every command above (calls that succeeded, were refused and failed, get, why, log, import),
    // and the whole log with every event's data.
    await run(["log", "--json"]);
    await run(["log", "--plugin", "ibkr-flex"]);
    const all = printed.join("\n");
    expect(all).toContain("ibkr-flex");
    expect(all).toContain("http_failed");
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain(TOKEN.slice(0, 12));
    expect(dataFolderText()).not.toContain(TOKEN);
  }, 60_000);
});
