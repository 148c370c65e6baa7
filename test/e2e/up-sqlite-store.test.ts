/**
 * The control plane of `up --store sqlite:PATH`: the log in a SQLite file outside the data folder,
 * and the embedded egress proxy's writer thread committing its decisions to that file (the data
 * folder keeps settings and keys, no log).
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect as netConnect, createServer, Socket, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyDemoFolder, demoSettings } from "../../src/app/index.js";
import { startControlPlane } from "../../src/compose/index.js";
import type { ControlPlane } from "../../src/compose/index.js";
import { mintEgressToken } from "../../src/egress/index.js";
import { openStore } from "../../src/events/index.js";
import { startDnsServer, type TestDnsServer } from "../egress/support/dns-server.js";
import { connectHead, rawRequest } from "../egress/support/harness.js";

let dir: string;
let file: string;
let dns: TestDnsServer;
let echo: Server;
let cp: ControlPlane;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-up-sqlite-"));
  file = join(dir, "log.db");
  echo = createServer((s) => s.on("data", (d: Buffer) => s.write(d)).on("error", () => s.destroy()));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
  const echoPort = (echo.address() as AddressInfo).port;
  dns = await startDnsServer({ "www.ecb.europa.eu": { kind: "answer", addresses: ["8.8.4.4"] } });
  cp = await startControlPlane({
    dataDir: join(dir, "data"),
    store: { kind: "sqlite", file },
    logger: pino({ level: "silent" }),
    settings: demoSettings(),
    host: null,
    // The checked public address is mapped to the local echo server: nothing leaves the machine.
    egress: { port: 0, dnsServers: [dns.server], connect: (a) => (a.address === "8.8.4.4" ? netConnect({ host: "127.0.0.1", port: echoPort }) : new Socket()) },
  });
  await applyDemoFolder(cp.runtime.store, "plugins");
  await cp.pass();
}, 120_000);

afterAll(async () => {
  await cp?.stop();
  await dns?.close();
  echo?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("up with its log in a SQLite file elsewhere", () => {
  it("commits the egress proxy's decisions to that file, and keeps no log in the data folder", async () => {
    const { token } = await mintEgressToken(join(dir, "data"), "ecb-fx");
    const a = await rawRequest(cp.egress?.port ?? 0, connectHead("www.ecb.europa.eu:443", token));
    a.socket.destroy();
    expect(a.status).toBe(200);
    expect(cp.runtime.store.location).toBe(file);
    const other = await openStore({ file });
    try {
      expect((await other.read({ stream: "egress/ecb-fx" })).map((e) => [e.actor, e.data])).toEqual([["egress-proxy", expect.objectContaining({ host: "www.ecb.europa.eu", allowed: true })]]);
    } finally {
      await other.close();
    }
    expect(existsSync(join(dir, "data", "openfief.db"))).toBe(false);
  });
});
