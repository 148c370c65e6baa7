/**
 * `openfief witness` killed outright (SIGKILL) at random points while clients push two logs'
 * checkpoints (and forks of them), restarted on the same folder each time, through the bundle as
 * users run it. Across every run: no two cosignatures for one log and size carry different roots,
 * the sizes cosigned never go backwards (a 409 never names a size below one already cosigned), no
 * fork is ever cosigned, and the state the last restart reads is the genuine log's at that size.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { formatHash, openNote, parseCheckpoint, parseVerifierKey } from "../../src/tlog/index.js";
import type { NoteVerifier } from "../../src/tlog/index.js";
import { originHash } from "../../src/witness/index.js";
import { FakeLog, must } from "../../src/witness/test-support.js";
import { startOpenfief } from "./support.js";

const RUNS = Number(process.env["WITNESS_KILL_RUNS"] ?? 10);
const SEED = Number(process.env["WITNESS_KILL_SEED"] ?? Date.now() % 2 ** 31);

/** A small seeded generator (mulberry32): a failing run can be replayed with its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What clients saw of one log, across all runs. */
interface Seen {
  readonly log: FakeLog;
  readonly fork: FakeLog;
  /** The witness's size as the client last learnt it (a 200 or a 409). */
  known: number;
  /** The largest size cosigned so far. */
  cosigned: number;
  /** Every 200: its size and root, in order. */
  readonly answers: { size: number; root: string }[];
  readonly problems: string[];
}

const dir = mkdtempSync(join(tmpdir(), "witness-kill-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function post(url: string, body: string): Promise<{ status: number; body: string } | null> {
  try {
    const r = await fetch(`${url}/add-checkpoint`, { method: "POST", body, signal: AbortSignal.timeout(10_000) });
    return { status: r.status, body: await r.text() };
  } catch {
    return null; // killed: the loop ends
  }
}

/** The next request for one log: mostly the log grown, sometimes a fork of it (once the witness holds some of it). */
function attempt(s: Seen, next: () => number): { forked: boolean; size: number; from: FakeLog; body: string } {
  const roll = next();
  const forked = s.known > 0 && roll < 0.25;
  if (!forked) s.log.grow(1 + Math.floor(next() * 4));
  s.fork.grow(s.log.size - s.fork.size);
  const size = forked ? (roll < 0.12 ? s.known : s.log.size) : s.log.size;
  const from = forked ? s.fork : s.log;
  return { forked, size, from, body: `old ${s.known}\n${from.proof(s.known, size).map((p) => `${p}\n`).join("")}\n${from.checkpoint(size)}` };
}

/** Takes in a 200: it verifies, is no fork, does not go back; the client now knows its size. */
function cosigned(s: Seen, sent: ReturnType<typeof attempt>, lines: string, verifier: NoteVerifier): void {
  const { forked, size, from } = sent;
  const note = openNote(`${from.checkpoint(size)}${lines}`, [verifier]);
  if (!note.ok || note.value.verified.length !== 1) s.problems.push(`a cosignature for size ${size} does not verify`);
  if (forked) s.problems.push(`a fork was cosigned at size ${size} (old ${s.known})`);
  if (size < s.cosigned) s.problems.push(`size ${size} cosigned after ${s.cosigned}`);
  s.answers.push({ size, root: formatHash(from.root(size)) });
  s.known = s.cosigned = size;
}

/** Pushes one log until the witness is gone. */
async function push(url: string, s: Seen, verifierKey: string, next: () => number): Promise<void> {
  const verifier = must(parseVerifierKey(verifierKey));
  for (;;) {
    const sent = attempt(s, next);
    const a = await post(url, sent.body);
    if (a === null) return;
    if (a.status === 200) {
      cosigned(s, sent, a.body, verifier);
    } else if (a.status === 409) {
      const size = Number(a.body.trim());
      if (!(size >= s.cosigned)) s.problems.push(`a 409 named size ${a.body.trim()} after ${s.cosigned} was cosigned`);
      s.known = size;
    } else if (!(sent.forked && a.status === 422)) {
      s.problems.push(`${sent.forked ? "a fork" : "the log"} at ${sent.size} from ${s.known} got ${a.status}: ${a.body.trim()}`);
    }
  }
}

const LISTENING = /listening on (http:\/\/\S+)/;
const addressOf = (out: string) => ({ url: LISTENING.exec(out)?.[1] ?? "", key: /verifier key: (\S+)/.exec(out)?.[1] ?? "" });

/** One run: start the witness, let the clients push, kill it (sometimes while it starts); its key, if it printed one. */
async function killedRun(args: readonly string[], seen: readonly Seen[], next: () => number, early: boolean): Promise<string | null> {
  const w = await startOpenfief(args);
  if (early) {
    await new Promise((r) => setTimeout(r, next() * 150));
    w.child.kill("SIGKILL");
    await w.exited;
    return null;
  }
  const { url, key } = addressOf(await w.waitFor(LISTENING));
  const pushing = seen.map((s) => push(url, s, key, next));
  await new Promise((r) => setTimeout(r, 20 + next() * 400));
  w.child.kill("SIGKILL");
  const ended = await w.exited;
  expect(ended.signal, `the witness ended by itself (seed ${SEED}): ${ended.stderr}`).toBe("SIGKILL");
  await Promise.all(pushing);
  return key;
}

/** The last restart reads what every run left: each log's state is the genuine log's, at least as far as was cosigned. */
async function finalState(args: readonly string[], seen: readonly Seen[]): Promise<string> {
  const w = await startOpenfief(args);
  try {
    const { url, key } = addressOf(await w.waitFor(LISTENING));
    for (const s of seen) {
      const stored = await fetch(`${url}/${originHash(s.log.origin)}/checkpoint`);
      expect(stored.status, `${s.log.origin} (seed ${SEED})`).toBe(200);
      const text = await stored.text();
      const c = must(parseCheckpoint(text.slice(0, text.indexOf("\n\n") + 1)));
      expect(c.size).toBeGreaterThanOrEqual(s.cosigned);
      expect(formatHash(c.root), `${s.log.origin} at ${c.size} is the genuine log's root (seed ${SEED})`).toBe(formatHash(s.log.root(c.size)));
    }
    return key;
  } finally {
    await w.stop();
  }
}

function checkAnswers(s: Seen): void {
  expect(s.problems, `${s.log.origin} (seed ${SEED})`).toEqual([]);
  const roots = new Map<number, Set<string>>();
  for (const a of s.answers) roots.set(a.size, (roots.get(a.size) ?? new Set()).add(a.root));
  expect([...roots].filter(([, r]) => r.size > 1), `two roots for one size of ${s.log.origin} (seed ${SEED})`).toEqual([]);
  const sizes = s.answers.map((a) => a.size);
  expect(sizes, `sizes cosigned for ${s.log.origin} in order (seed ${SEED})`).toEqual([...sizes].sort((x, y) => x - y));
  // The test saw real work: cosignatures for the log over several runs.
  expect(s.answers.length).toBeGreaterThan(RUNS);
}

describe("openfief witness killed with SIGKILL", () => {
  it("never cosigns two roots for one size nor goes backwards, across restarts on one folder", { timeout: 180_000 }, async () => {
    const next = random(SEED);
    const seen: Seen[] = ["example.com/a", "example.com/b"].map((origin) => ({
      log: new FakeLog(origin),
      fork: new FakeLog(origin, { fork: "forked " }),
      known: 0,
      cosigned: 0,
      answers: [],
      problems: [],
    }));
    const args = ["witness", "--data", dir, "--name", "witness.test/w1", "--listen", "127.0.0.1:0", ...seen.flatMap((s) => ["--log", s.log.line])];
    const keys = new Set<string>();
    for (let run = 0; run < RUNS; run++) {
      // Most runs are killed while the clients push; every fourth while the witness starts.
      const key = await killedRun(args, seen, next, run % 4 === 3);
      if (key !== null) keys.add(key);
    }
    keys.add(await finalState(args, seen));
    expect(keys.size, "one witness key across restarts").toBe(1);
    for (const s of seen) checkAnswers(s);
  });
});
