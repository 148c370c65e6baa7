/**
 * The nbp-fx plugin end to end: the connector served with the SDK on 127.0.0.1 and synced by the
 * core-side client; it reaches a local HTTPS server standing in for api.nbp.pl through the real
 * egress proxy (src/egress), whose dialer maps NBP's "public" address to that server.
 */
import { readFileSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import https from "node:https";
import net, { type AddressInfo } from "node:net";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Code, ConnectError, JwksVerifier, createConnectorClient, createEgressClient, serveConnector, tokenFile, type ConnectorServer, type EgressClient } from "@openfief/sdk";
import { BatchingDecisionRecorder, MemoryAllowListSource, createEgressProxy, type EgressProxy } from "../../src/egress/index.js";
import { createNbpConnector } from "../../plugins/nbp-fx/src/connector.js";
import { CORE_SUBJECT, INSTANCE, jwksDir, makeKey, mint } from "./support/keys.js";
import { selfSignedCert } from "./support/tls.js";

const FIXTURES = join(import.meta.dirname, "../../plugins/nbp-fx/fixtures");
const TABLES = readFileSync(join(FIXTURES, "tables-A-2024-01-02-2024-01-04.json"), "utf8");
const NOT_FOUND = readFileSync(join(FIXTURES, "not-found.txt"), "utf8");
const NBP_PUBLIC_ADDRESS = "8.8.4.4"; // what the stand-in resolver answers; dialed only as a local port

const cert = selfSignedCert("api.nbp.pl");
let mode: "normal" | "down" | "garbage" = "normal";
const asked: string[] = [];
const proxyTokens: string[] = [];
const dialed: string[] = [];

let nbp: https.Server;
let proxy: EgressProxy;
let proxyUrl: string;
let dir: string;
let egress: EgressClient;
let server: ConnectorServer;
let coreToken: string;

beforeAll(async () => {
  nbp = https.createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    asked.push(req.url ?? "");
    if (mode === "down") return void res.writeHead(503).end("Service Unavailable");
    if (mode === "garbage") return void res.writeHead(200, { "content-type": "application/json" }).end('[{"table":"A","rates":');
    if (req.url === "/api/exchangerates/tables/A/2024-01-02/2024-01-05/?format=json") {
      return void res.writeHead(200, { "content-type": "application/json; charset=utf-8" }).end(TABLES);
    }
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end(NOT_FOUND);
  });
  await new Promise<void>((resolve) => nbp.listen(0, "127.0.0.1", resolve));
  const nbpPort = (nbp.address() as AddressInfo).port;

  const allowLists = new MemoryAllowListSource();
  allowLists.setData({ [INSTANCE]: "api.nbp.pl:443\n", other: "" });
  proxy = createEgressProxy({
    reviewer: {
      review: (token) => {
        proxyTokens.push(token);
        return Promise.resolve(token.startsWith("egress-token-") ? { ok: true, username: `system:serviceaccount:openfief:plugin-${INSTANCE}` } : { ok: false, code: "token_refused" });
      },
    },
    allowLists,
    resolver: { resolve: (host) => Promise.resolve(host === "api.nbp.pl" ? { ok: true, addresses: [NBP_PUBLIC_ADDRESS] } : { ok: false, code: "dns_nxdomain" }) },
    connect: (addr) => {
      dialed.push(`${addr.address}:${addr.port}`);
      return net.connect(nbpPort, "127.0.0.1");
    },
    recorder: new BatchingDecisionRecorder(() => undefined),
    logger: pino({ level: "silent" }),
    options: { host: "127.0.0.1", port: 0 },
    env: {},
  });
  const bound = await proxy.listen();
  proxyUrl = `http://127.0.0.1:${bound.port}`;

  const key = await makeKey("ES256", "core-key");
  dir = await jwksDir([key]);
  coreToken = await mint(key);
  await writeFile(join(dir, "egress-token"), "egress-token-1\n");
  egress = createEgressClient({ proxyUrl, token: tokenFile(join(dir, "egress-token")), requestTls: { ca: cert.cert } });
  const handler = createNbpConnector({ fetch: (url) => egress.fetch(url), now: () => new Date("2024-01-05T10:00:00Z"), startDate: "2024-01-02" });
  server = await serveConnector(handler, { port: 0, host: "127.0.0.1", verifier: new JwksVerifier({ jwksDir: dir, instance: INSTANCE, coreSubject: CORE_SUBJECT }) });
});

afterAll(async () => {
  await server?.close();
  await egress?.close();
  await proxy?.close();
  await new Promise<void>((resolve) => nbp.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  mode = "normal";
  asked.length = 0;
});

async function sync(watermark: string): Promise<ReturnType<ReturnType<typeof createConnectorClient>["sync"]>> {
  const client = createConnectorClient(server.url, () => coreToken, { maxAttempts: 1 });
  try {
    return await client.sync({ watermark });
  } finally {
    client.close();
  }
}

describe("nbp-fx through the egress proxy", () => {
  it("delivers every rate published since its start date as exact decimal strings", async () => {
    const delivery = await sync("");
    expect(asked).toEqual(["/api/exchangerates/tables/A/2024-01-02/2024-01-05/?format=json"]);
    expect(delivery.institution?.id).toBe("nbp");
    expect(delivery.fxRates).toHaveLength(24);
    expect(delivery.watermark).toBe("2024-01-04");
    const usd = delivery.fxRates.find((r) => r.date === "2024-01-02" && r.baseCurrency === "USD");
    expect(usd).toMatchObject({ quoteCurrency: "PLN", rate: "3.9432", source: "NBP table A 001/A/NBP/2024" });
    expect(delivery.fxRates.find((r) => r.date === "2024-01-03" && r.baseCurrency === "JPY")?.rate).toBe("0.027990");
    expect(delivery.fxRates.find((r) => r.date === "2024-01-02" && r.baseCurrency === "VND")?.rate).toBe("0.000162");
    expect(dialed.at(-1)).toBe(`${NBP_PUBLIC_ADDRESS}:443`);
  });

  it("asks only for the days after its watermark and keeps it when NBP has nothing new", async () => {
    const delivery = await sync("2024-01-04");
    expect(asked).toEqual(["/api/exchangerates/tables/A/2024-01-05/2024-01-05/?format=json"]);
    expect(delivery.fxRates).toHaveLength(0);
    expect(delivery.watermark).toBe("2024-01-04");
  });

  it("sends the current egress token to the proxy on every request", async () => {
    await sync("2024-01-04");
    expect(proxyTokens.at(-1)).toBe("egress-token-1");
    await writeFile(join(dir, "egress-token"), "egress-token-2\n");
    await sync("2024-01-04");
    expect(proxyTokens.at(-1)).toBe("egress-token-2");
  });

  it.each([
    ["NBP answers 503", "down", Code.Unavailable],
    ["NBP's answer is not JSON it can read", "garbage", Code.InvalidArgument],
  ] as const)("reports %s to the core as the right code", async (_name, m, code) => {
    mode = m;
    const error = await sync("2024-01-01").then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(code);
  });

  it("answers InvalidArgument to a watermark that is not a date, without asking NBP", async () => {
    const error = await sync("yesterday").then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(asked).toEqual([]);
  });
});
