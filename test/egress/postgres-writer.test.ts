/**
 * The egress proxy's writer thread on the cluster's one PostgreSQL log (a real server): two
 * proxies committing at once put every decision in the log once, in one chain, each naming the
 * replica that answered; a proxy whose PostgreSQL is stopped answers 503 (its decisions cannot be
 * recorded) and, once the server is started again, 200 — without a restart; a write lock held
 * past the decision's bound gives 503 too, and never an unbounded wait. No timed assertions.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect, createServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryAllowListSource } from "../../src/egress/allowlist-source.js";
import { mintEgressToken } from "../../src/egress/embedded-key.js";
import { startEmbeddedEgress } from "../../src/egress/embedded.js";
import type { EgressProxy } from "../../src/egress/proxy.js";
import { CommitError, WorkerDecisionRecorder } from "../../src/egress/writer.js";
import { openPostgresLog, type EventLog } from "../../src/events/index.js";
import { WRITE_LOCK_KEY } from "../../src/events/postgres/sql.js";
import pg from "pg";
import { startLogDatabases, type LogDatabases } from "../events/postgres-support.js";
import { connectHead, rawRequest } from "./support/harness.js";

let dbs: LogDatabases;
let dir: string;
let echo: Server;
let echoPort: number;
const logs: string[] = [];

beforeAll(async () => {
  dbs = await startLogDatabases();
  dir = mkdtempSync(join(tmpdir(), "egress-pg-"));
  echo = createServer((s) => s.on("data", (d: Buffer) => s.write(d)).on("error", () => s.destroy()));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
  echoPort = (echo.address() as AddressInfo).port;
}, 120_000);

afterAll(async () => {
  echo?.close();
  await dbs?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}, 60_000);

const HOSTS = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}.example.com`);

/** A proxy of its own (its own connections to the log, as another replica's), recording as `actor`. */
async function proxyOn(url: string, actor: string, hosts: readonly string[], commitTimeoutMs = 3000): Promise<{ proxy: EgressProxy; port: number; store: EventLog }> {
  const store = await openPostgresLog({ url, migrate: false });
  const allowLists = new MemoryAllowListSource();
  // The list's lines sorted and unique, as the ConfigMap holds them.
  expect(allowLists.setData({ alpha: [...new Set(hosts)].map((h) => `${h}:443\n`).sort().join("") })).toBe(true);
  const started = await startEmbeddedEgress({
    dataDir: dir, store, storeUrl: url, actor, allowLists, commitTimeoutMs,
    logger: pino({}, new Writable({ write: (c: Buffer, _e, cb) => { logs.push(c.toString()); cb(); } })),
    resolver: { resolve: async () => ({ ok: true, addresses: ["8.8.4.4"] }) },
    // The checked public address is mapped to the local echo server: nothing leaves the machine.
    connect: () => netConnect({ host: "127.0.0.1", port: echoPort }),
    options: { port: 0 },
    env: {},
  });
  return { proxy: started.proxy, port: started.port, store };
}

async function connectStatus(port: number, host: string, token: string): Promise<number> {
  const a = await rawRequest(port, connectHead(`${host}:443`, token));
  a.socket.destroy();
  return a.status;
}

describe("the egress writer on PostgreSQL", () => {
  it("takes two proxies committing at once: every decision once, in one chain, each naming its replica", async () => {
    const url = await dbs.fresh();
    const hostsA = HOSTS("a", 30);
    const hostsB = HOSTS("b", 30);
    const all = [...hostsA, ...hostsB];
    const a = await proxyOn(url, "egress-proxy/a", all);
    const b = await proxyOn(url, "egress-proxy/b", all);
    const reader = await openPostgresLog({ url, migrate: false });
    try {
      const { token } = await mintEgressToken(dir, "alpha");
      // Two rounds, each every CONNECT of both proxies at once: their batches interleave in the log.
      for (const round of [0, 1]) {
        const half = (hosts: string[]): string[] => hosts.slice(round * 15, round * 15 + 15);
        const statuses = await Promise.all([
          ...half(hostsA).map((h) => connectStatus(a.port, h, token)),
          ...half(hostsB).map((h) => connectStatus(b.port, h, token)),
        ]);
        expect(statuses.every((s) => s === 200), String(statuses)).toBe(true);
      }
      const events = await reader.read({ stream: "egress/alpha" });
      expect(events).toHaveLength(60);
      // Every decision once, by the proxy that answered it.
      const byHost = new Map(events.map((e) => [(e.data as { host: string }).host, e.actor]));
      expect(byHost.size).toBe(60);
      for (const h of hostsA) expect(byHost.get(h)).toBe("egress-proxy/a");
      for (const h of hostsB) expect(byHost.get(h)).toBe("egress-proxy/b");
      // One stream, one chain: versions 1..60 in seq order, seqs without a gap, every hash holding.
      expect(events.map((e) => e.version)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
      expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 60 }, (_, i) => (events[0]?.seq ?? 0) + i));
      expect(new Set(events.map((e) => e.actor))).toEqual(new Set(["egress-proxy/a", "egress-proxy/b"]));
      expect(await reader.verify()).toMatchObject({ ok: true });
    } finally {
      await a.proxy.close();
      await b.proxy.close();
      await a.store.close();
      await b.store.close();
      await reader.close();
    }
  }, 60_000);

  it("answers 503 while PostgreSQL is stopped, and 200 again once it is back, without a restart", async () => {
    const url = await dbs.fresh();
    const hosts = ["before.example.com", "during.example.com", "after.example.com"];
    const p = await proxyOn(url, "egress-proxy/c", hosts, 2000);
    try {
      const { token } = await mintEgressToken(dir, "alpha");
      expect(await connectStatus(p.port, "before.example.com", token)).toBe(200);
      dbs.server.halt();
      let during: number;
      try {
        // Fail closed: the decision cannot be recorded, so no tunnel.
        during = await connectStatus(p.port, "during.example.com", token);
      } finally {
        dbs.server.resume();
      }
      expect(during).toBe(503);
      // The same proxy, the same writer thread: the pool finds the server again.
      let after = 0;
      for (let i = 0; i < 50 && after !== 200; i++) {
        after = await connectStatus(p.port, "after.example.com", token);
        if (after !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(after).toBe(200);
      const reader = await openPostgresLog({ url, migrate: false });
      try {
        const events = await reader.read({ stream: "egress/alpha" });
        const hostsSeen = events.map((e) => (e.data as { host: string }).host);
        expect(hostsSeen[0]).toBe("before.example.com");
        expect(hostsSeen.at(-1)).toBe("after.example.com");
        expect(hostsSeen).not.toContain("during.example.com");
        expect(await reader.verify()).toMatchObject({ ok: true });
      } finally {
        await reader.close();
      }
      // What was logged says why, without the URL's secrets (the superuser has none here) or a token.
      const text = logs.join("");
      expect(text).toMatch(/could not be recorded|commit/);
      expect(text).not.toContain(token);
    } finally {
      await p.proxy.close();
      await p.store.close();
    }
  }, 90_000);

  it("answers 503 within its bound while another session holds the log's write lock, and 200 once it lets go", async () => {
    const url = await dbs.fresh();
    const p = await proxyOn(url, "egress-proxy/d", ["held.example.com", "free.example.com"], 1000);
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      const { token } = await mintEgressToken(dir, "alpha");
      await holder.query(`BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK_KEY})`);
      let held: number;
      try {
        held = await connectStatus(p.port, "held.example.com", token);
      } finally {
        await holder.query("ROLLBACK");
      }
      expect(held).toBe(503);
      expect(await connectStatus(p.port, "free.example.com", token)).toBe(200);
      // PostgreSQL gave up the lock before the proxy gave up the batch: nothing of it was written
      // (on a machine loaded enough to delay the batch past that margin, it may be written after
      // its 503 — never a tunnel without its decision).
      const hosts = (await p.store.read({ stream: "egress/alpha" })).map((e) => (e.data as { host: string }).host);
      expect(hosts.at(-1)).toBe("free.example.com");
      expect(hosts.filter((h) => h === "free.example.com")).toHaveLength(1);
    } finally {
      await holder.end();
      await p.proxy.close();
      await p.store.close();
    }
  }, 60_000);

  it("refuses at once, past its bound of waiting decisions, rather than queueing without end", async () => {
    const url = await dbs.fresh();
    const w = await WorkerDecisionRecorder.open({ url, maxWaiting: 2, commitTimeoutMs: 5000 });
    try {
      const d = (host: string) => ({ plugin: "alpha", host, port: 443, allowed: false, reason: "not_listed" as const, rules: 1 });
      const first = [w.record(d("one.example.com")), w.record(d("two.example.com"))];
      await expect(w.record(d("three.example.com"))).rejects.toSatisfy((e: unknown) => e instanceof CommitError && e.code === "commit_timeout");
      await Promise.all(first);
    } finally {
      await w.close();
    }
  });

  it.each([
    ["a database that does not exist", (pw: string) => dbs.server.urlFor("no_such_db", "postgres", pw), /does not exist/],
    ["a database without the log's schema", (pw: string) => dbs.server.urlFor(dbs.server.createDatabase(), "postgres", pw), /lacks migrations .*openfief store init/],
  ])("refuses to start on %s, saying why without the URL's password", async (_what, urlOf, why) => {
    const err = await WorkerDecisionRecorder.open({ url: urlOf("hunter2-pw") }).then(() => null, (e: unknown) => e as Error);
    expect(err?.message).toMatch(why);
    expect(String(err?.message)).not.toContain("hunter2");
  });
});
