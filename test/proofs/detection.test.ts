/**
 * What an auditor's files catch, through the CLI as a user runs it (in this process): a proof and
 * an export verify offline with nothing but the file and the log's public key, and each change to
 * the log that its hash chain cannot show is caught by `verify-log --checkpoint/--previous` — a log
 * rewritten wholesale with its chain rebuilt, its newest events deleted, a fork (two checkpoints of
 * one size with different roots, same key). The fork is refused by a real witness too.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLogKey, openDataDir, openDataStore, parseWitnessTarget, storeFile, Witnesses, witnessStates } from "../../src/app/index.js";
import type { LogKey } from "../../src/app/index.js";
import { rowHash, writeCheckpoint } from "../../src/events/index.js";
import { cosignerFromSeed } from "../../src/tlog/index.js";
import type { EventLog, StoredCheckpoint } from "../../src/events/index.js";
import { pluginObserved, grantObserved } from "../events/helpers.js";
import { withFile } from "../support/sqlite-file.js";
import { openfief, startOpenfief } from "../e2e/support.js";

let root: string;
let a: string;
let key: LogKey;
let cp1: StoredCheckpoint;
let cp2: StoredCheckpoint;
let n = 0;
const file = (name: string, text: string) => {
  const p = join(root, name);
  writeFileSync(p, text);
  return p;
};
const copy = (from: string) => {
  const to = join(root, `copy${n++}`);
  cpSync(from, to, { recursive: true });
  return to;
};

async function grow(dir: string, names: readonly string[]): Promise<StoredCheckpoint> {
  const store: EventLog = await openDataStore(dir);
  try {
    for (const name of names) await store.append([pluginObserved(name), grantObserved(name)]);
    const c = await writeCheckpoint(store, loadLogKey({ dataDir: dir }).signer);
    if (c === null) throw new Error("no checkpoint");
    return c;
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "openfief-proofs-"));
  a = join(root, "a");
  openDataDir(a);
  key = loadLogKey({ dataDir: a });
  cp1 = await grow(a, ["p1", "p2", "p3", "p4", "p5"]);
  cp2 = await grow(a, ["p6", "p7", "p8"]);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("proofs and exports verify offline", () => {
  it("prove writes a tlog-proof that verify-proof accepts with the log's key alone", async () => {
    const out = join(root, "e3.tlog-proof");
    const made = await openfief(["prove", "3", "--out", out, "--data", a]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(new RegExp(`^wrote the proof of event 3 to .*: checkpoint of ${cp2.size} events of ${key.origin.replaceAll("/", "\\/")}, no witness cosignature yet\\n$`));
    expect(readFileSync(out, "utf8")).toMatch(/^c2sp\.org\/tlog-proof@v1\nextra \S+\nindex 2\n/);
    const v = await openfief(["verify-proof", out, "--key", key.verifierKey]);
    expect([v.code, v.stderr]).toEqual([0, ""]);
    expect(v.stdout).toMatch(/^the proof holds: event 3 \(plugin\.observed on plugin\/p2, .*\) is in openfief\/log\/[0-9a-f]{16}'s checkpoint of \d+ events, signed by its key\n$/);
  });

  it("a proof's failures are one line each, exit 1; a witness that did not cosign is named", async () => {
    const out = join(root, "e4.tlog-proof");
    expect((await openfief(["prove", "4", "--out", out, "--data", a])).code).toBe(0);
    const text = readFileSync(out, "utf8");
    const tampered = file("e4-bad.tlog-proof", text.replace(/^extra (\S+)$/m, (_l, b64: string) => `extra ${Buffer.from(Buffer.from(b64, "base64").toString().replace("p2", "p9")).toString("base64")}`));
    const r = await openfief(["verify-proof", tampered, "--key", key.verifierKey]);
    expect(r.code).toBe(1);
    expect(r.stdout.trimEnd().split("\n")).toEqual(["the entry is not proved at index 3 of the checkpoint: the proof leads to another root"]);
    const cosigner = cosignerFromSeed("w.example", new Uint8Array(32).fill(7));
    if (!cosigner.ok) throw new Error(cosigner.error.message);
    const missing = await openfief(["verify-proof", out, "--key", key.verifierKey, "--witness", file("w.vkey", `${cosigner.value.verifierKey}\n`)]);
    expect([missing.code, missing.stdout]).toEqual([1, `witness ${cosigner.value.verifierKey.split("+").slice(0, 2).join("+")} did not cosign the checkpoint\n`]);
  });

  it("export --since writes events with their proof; verify-export checks it in one pass and prints the events once it holds", async () => {
    const out = join(root, "since3.export");
    const made = await openfief(["export", "--since", "3", "--out", out, "--data", a]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toBe(`wrote events 3 to ${cp2.size} to ${out}, proved against the checkpoint of ${cp2.size} events\n`);
    const v = await openfief(["verify-export", out, "--key", key.verifierKey]);
    expect([v.code, v.stdout]).toEqual([0, `the export holds: events 3 to ${cp2.size} are the log's, proved against ${key.origin}'s checkpoint of ${cp2.size} events, signed by its key\n`]);
    const events = await openfief(["verify-export", out, "--key", key.verifierKey, "--events"]);
    const lines = events.stdout.trimEnd().split("\n").map((l) => JSON.parse(l) as { seq: number; type: string });
    expect(lines.map((e) => e.seq)).toEqual(Array.from({ length: cp2.size - 2 }, (_, i) => i + 3));
    const dropped = file("dropped.export", readFileSync(out, "utf8").split("\n").filter((l, i, all) => i !== all.findIndex((x) => x.startsWith("entry "))).join("\n"));
    const bad = await openfief(["verify-export", dropped, "--key", key.verifierKey]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^the entries are not the checkpoint's entries 2 to \d+: the proof/m);
  });

  it("verify-log --checkpoint --previous holds on the log that signed them", async () => {
    const r = await openfief(["verify-log", "--checkpoint", file("cp2", cp2.note), "--previous", file("cp1", cp1.note), "--data", a]);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toBe(`the log holds: ${cp2.seq} events, every hash verified\nthe log has the root of the checkpoint of ${cp2.size} events\nthe log has the root of the previous checkpoint of ${cp1.size} events: it extends it\n`);
  });
});

describe("verify-log --checkpoint catches what the hash chain cannot", () => {
  it("a log rewritten wholesale, its chain rebuilt", async () => {
    const b = copy(a);
    withFile(storeFile(b), (db) => {
      db.exec("DROP TRIGGER IF EXISTS events_no_update; DELETE FROM chain_checkpoint");
      const rows = db.prepare("SELECT seq, stream, version, type, schema_version AS schemaVersion, time, actor, caused_by AS causedBy, data, prev_hash AS prevHash FROM events ORDER BY seq").all() as { seq: number; stream: string; version: number; type: string; schemaVersion: number; time: string; actor: string; causedBy: number | null; data: string; prevHash: string }[];
      let prev = rows[0]?.prevHash as string;
      const update = db.prepare("UPDATE events SET data = ?, prev_hash = ?, hash = ? WHERE seq = ?");
      for (const r of rows) {
        const data = r.seq === 3 ? r.data.replace("\"p2\"", "\"p9\"") : r.data;
        const hash = rowHash({ ...r, data, prevHash: prev });
        update.run(data, prev, hash, r.seq);
        prev = hash;
      }
    });
    // The rebuilt chain holds and the guards are put back: the chain alone cannot tell.
    const chainOnly = await openfief(["verify-log", "--restore-guards", "--data", b]);
    expect(chainOnly.code, chainOnly.stdout + chainOnly.stderr).toBe(0);
    const r = await openfief(["verify-log", "--checkpoint", file("cp2-b", cp2.note), "--data", b]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`--checkpoint: the log's first ${cp2.size} events do not have the checkpoint's root: the log was rewritten`);
  });

  it("the newest events deleted", async () => {
    const b = copy(a);
    withFile(storeFile(b), (db) => db.exec(`PRAGMA foreign_keys = OFF; DROP TRIGGER IF EXISTS events_no_delete; DELETE FROM chain_checkpoint; DELETE FROM events WHERE seq > ${cp1.size}`));
    expect((await openfief(["verify-log", "--restore-guards", "--data", b])).code).toBe(0);
    const r = await openfief(["verify-log", "--checkpoint", file("cp2-c", cp2.note), "--data", b]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`--checkpoint: the checkpoint covers ${cp2.size} events but the log holds ${cp1.size}: the newest ${cp2.size - cp1.size} were deleted`);
  });

  it("bad inputs are one line on stderr and exit 2", async () => {
    for (const [args, message] of [
      [["--checkpoint", join(root, "none")], /--checkpoint: no such file/],
      [["--checkpoint", file("garbage", "hello\n")], /is not a signed checkpoint/],
      [["--checkpoint", file("cp1-d", cp1.note), "--key", "nonsense"], /--key is neither a verifier key/],
      [["--previous", file("cp1-e", cp1.note)], /--previous goes with --checkpoint/],
    ] as const) {
      const r = await openfief(["verify-log", ...args, "--data", a]);
      expect([r.code, r.stdout], args.join(" ")).toEqual([2, ""]);
      expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
  });
});

describe("a fork: two checkpoints of one size with different roots, signed by one key", () => {
  let forkA: StoredCheckpoint;
  let forkB: StoredCheckpoint;
  let b: string;
  beforeAll(async () => {
    b = copy(a);
    forkA = await grow(a, ["q1", "q2"]);
    forkB = await grow(b, ["r1", "r2"]);
    expect(forkB.size).toBe(forkA.size);
    expect(forkB.root).not.toBe(forkA.root);
  });

  it("is reported by verify-log --previous", async () => {
    const r = await openfief(["verify-log", "--checkpoint", file("fa", forkA.note), "--previous", file("fb", forkB.note), "--data", a]);
    expect(r.code).toBe(1);
    expect(r.stdout.split("\n")[1]).toMatch(new RegExp(`^fork: two checkpoints of size ${forkA.size} signed by .* with different roots`));
    expect(r.stdout).toContain("--previous: the log's first");
  });

  it("is refused by a witness, which cosigns the one it saw first and answers 422 to the other", async () => {
    const wdir = join(root, "witness");
    const w = await startOpenfief(["witness", "--data", wdir, "--listen", "127.0.0.1:0", "--name", "witness.test/w1", "--log", `${key.origin} ${key.verifierKey}`]);
    try {
      const out = await w.waitFor(/listening on http:\/\/\S+/);
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? "";
      const wkey = /^verifier key: (\S+)$/m.exec(out)?.[1] ?? "";
      const logger = pino({ level: "silent" });
      for (const [dir, c, status] of [[a, forkA, "cosigned"], [b, forkB, "refused"]] as const) {
        const store = await openDataStore(dir);
        try {
          const witnesses = await Witnesses.start(store, [parseWitnessTarget(`${url} ${wkey}`)], { logger });
          witnesses.submit(c);
          await witnesses.settled();
          const [state] = await witnessStates(store);
          expect(state?.status, state?.detail).toBe(status);
          if (status === "refused") {
            // Folder b never heard of the witness: its 409 names the size it cosigned, the fork's.
            expect(state?.detail).toMatch(/inconsistent/);
          }
        } finally {
          await store.close();
        }
      }
      // The cosigned one is carried by a proof; verify-proof requires the witness by its key.
      const proofOut = join(root, "fork-a.tlog-proof");
      expect((await openfief(["prove", String(forkA.size), "--out", proofOut, "--data", a])).code).toBe(0);
      const v = await openfief(["verify-proof", proofOut, "--key", key.verifierKey, "--witness", wkey]);
      expect(v.code, v.stdout).toBe(0);
      expect(v.stdout).toMatch(/\n {2}cosigned by witness\.test\/w1\+[0-9a-f]{8} at /);
    } finally {
      await w.stop();
    }
  });
});
