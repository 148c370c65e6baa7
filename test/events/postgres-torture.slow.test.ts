/**
 * The PostgreSQL log under torture: 32 writers in four processes appending at once, each append
 * held inside its transaction for a random while and 5 % rolled back; one transaction held past
 * the server's idle deadline (its writer told `timeout`, writers waiting on it told `busy`); one
 * writer killed with SIGKILL while it holds the write lock. Readers follow throughout, by pages
 * and by subscription. Afterwards no seq is skipped, none was seen out of order, the chain
 * verifies, and every append a writer was told committed is in the log exactly once, while none
 * it was told failed is. The writers hold their transactions through the log's test hook
 * (`whileLocked`), so what is held is the adapter's own append transaction.
 */
import { fork } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KnownEvent } from "../../src/events/catalog.js";
import { openPostgresLog } from "../../src/events/postgres/index.js";
import type { EventLog } from "../../src/events/port.js";
import { until } from "../support/event-log-contract.js";
import { startLogDatabases } from "./postgres-support.js";
import type { LogDatabases } from "./postgres-support.js";

const WRITER = fileURLToPath(new URL("./support/torture-writer.ts", import.meta.url));
const PROCESSES = 4;
const WRITERS_EACH = 8;
const RUN_MS = 12_000;

type Message =
  | { kind: "ready" }
  | { kind: "attempt"; ids: string[] }
  | { kind: "holding" }
  | { kind: "done"; committed: string[]; refused: { ids: string[]; code: string }[] }
  | { kind: "crashed"; error: string };

interface Child {
  readonly proc: ChildProcess; readonly attempts: string[][]; readonly exited: Promise<number | null>; readonly ready: Promise<void>;
  done?: Extract<Message, { kind: "done" }>; crashed?: string;
}

function start(url: string, role: "writers" | "victim" | "staller", proc: number, writers: number, onMessage?: (m: Message, c: Child) => void): Child {
  const p = fork(WRITER, [JSON.stringify({ url, role, proc, writers })], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let ready = (): void => undefined;
  const child: Child = {
    proc: p, attempts: [], exited: new Promise((resolve) => p.once("exit", (code) => resolve(code))), ready: new Promise((resolve) => { ready = resolve; }),
  };
  p.on("message", (m: Message) => {
    if (m.kind === "ready") ready();
    else if (m.kind === "attempt") child.attempts.push(m.ids);
    else if (m.kind === "done") child.done = m;
    else if (m.kind === "crashed") child.crashed = m.error;
    onMessage?.(m, child);
  });
  return child;
}

/** The id an event of the torture carries. */
function idOf(e: KnownEvent): string | null {
  if (e.type === "egress.decision") return e.data.reason;
  if (e.type === "plugin.observed") return String((e.data.spec as { id?: unknown } | null)?.id);
  return null;
}

describe("the PostgreSQL log under concurrent writers, failures and readers", () => {
  let dbs: LogDatabases;
  beforeAll(async () => { dbs = await startLogDatabases({ fsync: "off", max_connections: "200" }); });
  afterAll(async () => { await dbs?.stop(); });

  it("keeps one gapless, verifiable order that every reader sees, with exactly the appends writers were told committed", async () => {
    const url = await dbs.fresh();
    const reader: EventLog = await openPostgresLog({ url });
    const heard: number[] = [];
    let heardOutOfOrder = 0;
    reader.subscribe((events) => {
      for (const e of events) { if (e.seq !== heard.length + 1) heardOutOfOrder++; heard.push(e.seq); }
    });
    // A reader walking pages from the last seq it saw, as a fold catching up does.
    let paged = 0;
    let pagedOutOfOrder = 0;
    let paging = true;
    const pager = (async () => {
      while (paging) {
        for await (const page of reader.pages({ afterSeq: paged, pageSize: 100, hashes: false })) {
          for (const e of page) { if (e.seq !== paged + 1) pagedOutOfOrder++; paged = e.seq; }
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const children: Child[] = [];
    for (let p = 0; p < PROCESSES; p++) children.push(start(url, "writers", p, WRITERS_EACH));
    // One writer killed with SIGKILL while it holds the write lock, two seconds in.
    let killedAt = 0;
    const victim = start(url, "victim", 90, 1, (m, c) => {
      if (m.kind === "holding" && killedAt === 0) { killedAt = Date.now(); c.proc.kill("SIGKILL"); }
    });
    // One transaction held past the server's idle deadline, four seconds in.
    const staller = start(url, "staller", 91, 1);
    await Promise.all([...children, victim, staller].map((c) => c.ready));
    for (const c of children) c.proc.send({ runMs: RUN_MS, delayMs: 0 });
    victim.proc.send({ runMs: RUN_MS, delayMs: 2_000 });
    staller.proc.send({ runMs: RUN_MS, delayMs: 4_000 });

    const codes = await Promise.all([...children, victim, staller].map((c) => c.exited));
    paging = false;
    await pager;
    expect(codes.slice(0, PROCESSES)).toEqual(Array(PROCESSES).fill(0));
    expect([victim.proc.signalCode, victim.attempts.length]).toEqual(["SIGKILL", 1]);
    for (const c of [...children, staller]) expect(c.crashed).toBeUndefined();

    const head = await reader.head();
    await until(() => heard.length >= head, 20_000);
    for await (const page of reader.pages({ afterSeq: paged })) for (const e of page) { if (e.seq !== paged + 1) pagedOutOfOrder++; paged = e.seq; }

    // One order, no gap, seen in order by both readers, and a chain that holds.
    const all = await reader.read();
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    expect([heardOutOfOrder, heard.length, pagedOutOfOrder, paged]).toEqual([0, head, 0, head]);
    expect(await reader.verify()).toEqual({ ok: true, count: head });

    // Exactly what writers were told committed; nothing they were told failed; nothing twice.
    const inLog = all.map(idOf).filter((id): id is string => id !== null);
    expect(new Set(inLog).size).toBe(inLog.length);
    const committed = [...children, staller].flatMap((c) => c.done?.committed ?? []);
    const refused = [...children, staller].flatMap((c) => c.done?.refused ?? []);
    expect([...inLog].sort()).toEqual([...committed].sort());
    const logged = new Set(inLog);
    expect(refused.filter((r) => r.ids.some((id) => logged.has(id)))).toEqual([]);
    expect(victim.attempts.at(-1)?.some((id) => logged.has(id))).toBe(false);

    // What the failures were told, by code: rollbacks, writers that waited too long, the stalled transaction's timeout.
    const byCode = new Map<string, number>();
    for (const r of refused) byCode.set(r.code, (byCode.get(r.code) ?? 0) + 1);
    expect([...byCode.keys()].filter((c) => !["rolled_back", "busy", "timeout"].includes(c))).toEqual([]);
    expect(byCode.get("rolled_back") ?? 0).toBeGreaterThan(0);
    expect(byCode.get("busy") ?? 0).toBeGreaterThan(0);
    expect(staller.done?.refused.map((r) => r.code)).toEqual(["timeout"]);
    expect(committed.length).toBeGreaterThan(300);
    console.log(`torture: ${head} events, ${committed.length} committed ids, refusals ${JSON.stringify(Object.fromEntries(byCode))}, victim killed ${killedAt > 0}`);
    await reader.close();
  }, 60_000);
});
