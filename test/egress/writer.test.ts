/**
 * Decisions committed by the writer thread (issue 17): group commit, in-process subscribers, and
 * the held write lock — open tunnels keep echoing while another connection holds it; a CONNECT
 * meanwhile waits and gets its 200 once the lock is released, or a 503 after the bounded wait.
 * No timed assertions: only the order of what happens.
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MemoryAllowListSource } from "../../src/egress/allowlist-source.js";
import { mintEgressToken } from "../../src/egress/embedded-key.js";
import { startEmbeddedEgress } from "../../src/egress/embedded.js";
import type { EgressProxy } from "../../src/egress/proxy.js";
import { CommitError, WorkerDecisionRecorder } from "../../src/egress/writer.js";
import { openStore, type EventLog, type KnownEvent } from "../../src/events/index.js";
import { connectHead, rawRequest } from "./support/harness.js";

let dir: string;
let store: EventLog;
let echo: Server;
let echoPort: number;
beforeAll(async () => {
  echo = createServer((s) => s.on("data", (d: Buffer) => s.write(d)).on("error", () => s.destroy()));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
  echoPort = (echo.address() as AddressInfo).port;
});
afterAll(() => echo.close());

let proxy: EgressProxy | undefined;
let holder: Database.Database | undefined;
afterEach(async () => {
  if (holder?.inTransaction === true) holder.exec("ROLLBACK");
  holder?.close();
  holder = undefined;
  await proxy?.close();
  proxy = undefined;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function freshStore(): Promise<EventLog> {
  dir = mkdtempSync(join(tmpdir(), "egress-writer-"));
  store = await openStore({ file: join(dir, "events.db") });
  return store;
}

const decision = (host: string) => ({ plugin: "alpha", host, port: 443, allowed: false, reason: "not_listed", rules: 1 });

describe("WorkerDecisionRecorder", () => {
  it("commits the decisions of one turn in one transaction, and every caller hears only after it", async () => {
    const s = await freshStore();
    const announced: KnownEvent[][] = [];
    s.subscribe((events) => announced.push([...events]));
    const w = await WorkerDecisionRecorder.open({ file: s.location, onCommitted: (events) => s.announce(events) });
    try {
      await Promise.all(Array.from({ length: 50 }, (_, i) => w.record(decision(`h${i}.example.com`))));
      expect(await s.read({ stream: "egress/alpha" })).toHaveLength(50);
      expect(w.committed).toEqual({ batches: 1, decisions: 50 });
      expect(announced.map((b) => b.length)).toEqual([50]);
      // Subscribers hear exactly what the log holds: the same events, seq, hashes and data.
      expect(announced.flat()).toEqual(await s.read({ stream: "egress/alpha" }));
      expect((await s.verify()).ok).toBe(true);
    } finally {
      await w.close();
    }
  });

  it.each([false, true])("commits with each batch synced to disk or not (durable: %s), the chain the same", async (durable) => {
    const s = await freshStore();
    const w = await WorkerDecisionRecorder.open({ file: s.location, durable });
    try {
      await Promise.all(Array.from({ length: 5 }, (_, i) => w.record(decision(`h${i}.example.com`))));
      await w.record(decision("later.example.com"));
      expect((await s.read({ stream: "egress/alpha" })).map((e) => (e.data as { host: string }).host)).toEqual(["h0.example.com", "h1.example.com", "h2.example.com", "h3.example.com", "h4.example.com", "later.example.com"]);
      expect((await s.verify()).ok).toBe(true);
    } finally {
      await w.close();
    }
  });

  it("refuses a decision the store's schema refuses, without writing any of its batch", async () => {
    const s = await freshStore();
    const w = await WorkerDecisionRecorder.open({ file: s.location });
    try {
      const results = await Promise.allSettled([w.record(decision("ok.example.com")), w.record({ ...decision("bad"), plugin: "Not A Plugin" })]);
      expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
      expect(results[1]?.status === "rejected" && results[1].reason instanceof CommitError && results[1].reason.code).toBe("record_failed");
      expect(await s.head()).toBe(0);
    } finally {
      await w.close();
    }
  });

  it("gives up on a commit that cannot take the write lock within its bound", async () => {
    const s = await freshStore();
    holder = new Database(s.location);
    holder.exec("BEGIN IMMEDIATE");
    const w = await WorkerDecisionRecorder.open({ file: s.location, commitTimeoutMs: 200 });
    try {
      const r = await w.record(decision("late.example.com")).catch((err: unknown) => err);
      expect(r).toBeInstanceOf(CommitError);
      expect((r as CommitError).code).toBe("commit_timeout");
      holder.exec("ROLLBACK");
      await w.record(decision("after.example.com"));
      expect((await s.read({ stream: "egress/alpha", type: "egress.decision" })).map((e) => e.data.host)).toEqual(["after.example.com"]);
    } finally {
      await w.close();
    }
  });
});

/** An open tunnel to the echo server through the proxy. */
async function tunnel(port: number, token: string): Promise<Socket> {
  const a = await rawRequest(port, connectHead("api.example.com:443", token));
  if (a.status !== 200) throw new Error(`status ${a.status}`);
  return a.socket;
}

/** One echo round trip. */
function roundTrip(s: Socket, text: string): Promise<string> {
  return new Promise((resolve) => {
    s.once("data", (d: Buffer) => resolve(d.toString()));
    s.write(text);
  });
}

/** The registry of the last embedded proxy's counters. */
let registry = new Registry();

async function embedded(commitTimeoutMs: number): Promise<{ port: number; token: string }> {
  registry = new Registry();
  const s = await freshStore();
  const allowLists = new MemoryAllowListSource();
  allowLists.setData({ alpha: "api.example.com:443\n" });
  const started = await startEmbeddedEgress({
    dataDir: dir, store: s, allowLists, commitTimeoutMs, env: {}, registry,
    logger: pino({}, new Writable({ write: (_c, _e, cb) => cb() })),
    resolver: { resolve: () => ({ ok: true, addresses: ["8.8.4.4"] }) },
    connect: () => netConnect({ host: "127.0.0.1", port: echoPort }),
    options: { port: 0 },
  });
  proxy = started.proxy;
  return { port: started.port, token: (await mintEgressToken(dir, "alpha")).token };
}

describe("while another connection holds the store's write lock", () => {
  it("open tunnels keep echoing; a new CONNECT waits, then gets its 200 once the lock is released", async () => {
    const { port, token } = await embedded(10_000);
    const open = await tunnel(port, token);
    holder = new Database(store.location);
    holder.exec("BEGIN IMMEDIATE");
    let answered = false;
    const waiting = rawRequest(port, connectHead("api.example.com:443", token)).then((a) => {
      answered = true;
      return a;
    });
    const echoes: string[] = [];
    for (let i = 0; i < 20; i++) echoes.push(await roundTrip(open, `ping-${i}`));
    expect(echoes).toEqual(Array.from({ length: 20 }, (_, i) => `ping-${i}`));
    expect(holder.inTransaction).toBe(true);
    expect(answered).toBe(false);
    expect((await registry.getSingleMetric("openfief_egress_commits_waiting")?.get())?.values[0]?.value).toBe(1);
    holder.exec("COMMIT");
    const a = await waiting;
    expect((await registry.getSingleMetric("openfief_egress_commits_waiting")?.get())?.values[0]?.value).toBe(0);
    expect(a.status).toBe(200);
    expect(await roundTrip(a.socket, "after")).toBe("after");
    a.socket.destroy();
    open.destroy();
    expect(await store.read({ stream: "egress/alpha" })).toHaveLength(2);
  });

  it("refuses a CONNECT with 503 when the lock is not released within the bounded wait, and tunnels it never opened", async () => {
    const { port, token } = await embedded(300);
    const open = await tunnel(port, token);
    holder = new Database(store.location);
    holder.exec("BEGIN IMMEDIATE");
    const a = await rawRequest(port, connectHead("api.example.com:443", token));
    expect(a.status).toBe(503);
    expect(a.body.startsWith("commit_timeout:")).toBe(true);
    expect(await roundTrip(open, "still")).toBe("still");
    holder.exec("ROLLBACK");
    open.destroy();
    expect(await store.read({ stream: "egress/alpha" })).toHaveLength(1);
  });
});
