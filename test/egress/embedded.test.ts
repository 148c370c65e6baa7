/**
 * The embedded mode end to end: a real event store file, the data folder's key, a token minted
 * like `openfief token`, the JWKS reviewer, and decisions committed in `egress/<plugin>`.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect as netConnect, createServer, Socket, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore, type EventLog } from "../../src/events/index.js";
import { MemoryAllowListSource } from "../../src/egress/allowlist-source.js";
import { startEmbeddedEgress } from "../../src/egress/embedded.js";
import { mintEgressToken } from "../../src/egress/embedded-key.js";
import type { DialAddress, EgressProxy } from "../../src/egress/proxy.js";
import { connectHead, rawRequest } from "./support/harness.js";

const dir = mkdtempSync(join(tmpdir(), "egress-embedded-"));
let store: EventLog;
let proxy: EgressProxy;
let port: number;
let upstreamPort: number;
const dials: DialAddress[] = [];
const logs: string[] = [];
const upstream = createServer((s) => s.on("data", (d: Buffer) => s.write(d)));

beforeAll(async () => {
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
  upstreamPort = (upstream.address() as AddressInfo).port;
  store = await openStore({ file: join(dir, "events.db") });
  const allowLists = new MemoryAllowListSource();
  allowLists.setData({ alpha: "api.example.com:443\n", beta: "" });
  const started = await startEmbeddedEgress({
    dataDir: dir,
    store,
    allowLists,
    logger: pino({}, new Writable({ write: (c: Buffer, _e, cb) => { logs.push(c.toString()); cb(); } })),
    resolver: { resolve: async (host) => (host === "api.example.com" ? { ok: true, addresses: ["8.8.4.4"] } : { ok: false, code: "dns_nxdomain" }) },
    connect: (addr) => {
      dials.push(addr);
      if (addr.address !== "8.8.4.4") return new Socket();
      return netConnect({ host: "127.0.0.1", port: upstreamPort });
    },
    options: { port: 0 },
    env: {},
  });
  proxy = started.proxy;
  port = started.port;
  expect(started.host).toBe("127.0.0.1");
});

afterAll(async () => {
  await proxy.close();
  await store.close();
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the embedded egress proxy", () => {
  it("lets a minted token through to a granted host, refuses an unlisted one, and commits both decisions", async () => {
    const { token } = await mintEgressToken(dir, "alpha");
    const ok = await rawRequest(port, connectHead("api.example.com:443", token), Buffer.from("ping"));
    expect(ok.status).toBe(200);
    const echoed = await new Promise<string>((r) => ok.socket.once("data", (d: Buffer) => r(d.toString())));
    expect(echoed).toBe("ping");
    ok.socket.destroy();
    const refused = await rawRequest(port, connectHead("unlisted.example.com:443", token));
    expect(refused.status).toBe(407);
    const events = await store.read({ stream: "egress/alpha" });
    expect(events.map((e) => [e.type, e.actor, e.data])).toEqual([
      ["egress.decision", "egress-proxy", { plugin: "alpha", host: "api.example.com", port: 443, allowed: true, reason: "listed", rules: 1, address: "8.8.4.4", addresses: ["8.8.4.4"] }],
      ["egress.decision", "egress-proxy", { plugin: "alpha", host: "unlisted.example.com", port: 443, allowed: false, reason: "not_listed", rules: 1 }],
    ]);
    expect((await store.verify()).ok).toBe(true);
    expect(dials.map((d) => d.address)).toEqual(["8.8.4.4"]);
    const everything = [readFileSync(join(dir, "events.db")).toString("latin1"), ...logs].join("\n");
    expect(everything).not.toContain(token);
  });

  it("refuses a token minted for one plugin from reaching another plugin's host", async () => {
    const { token } = await mintEgressToken(dir, "beta");
    const a = await rawRequest(port, connectHead("api.example.com:443", token));
    expect(a.status).toBe(407);
    expect((await store.read({ stream: "egress/beta" })).map((e) => (e.data as { reason: string }).reason)).toEqual(["not_listed"]);
  });

  it("records many concurrent decisions, batched, each committed before its 200", async () => {
    const { token } = await mintEgressToken(dir, "alpha");
    const before = (await store.read({ stream: "egress/alpha" })).length;
    const answers = await Promise.all(Array.from({ length: 20 }, () => rawRequest(port, connectHead("api.example.com:443", token))));
    for (const a of answers) {
      expect(a.status).toBe(200);
      a.socket.destroy();
    }
    expect((await store.read({ stream: "egress/alpha" })).length - before).toBe(20);
  });
});
