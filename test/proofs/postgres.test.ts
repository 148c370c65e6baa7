/**
 * Proofs, exports, verify-log against a kept checkpoint and the witnesses' kept cosignatures on the
 * cluster's store, PostgreSQL (a real server): the same port, the same files, the same verdicts as
 * on SQLite — and the newest rows deleted by someone with the database's superuser are caught.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExportCheck, exportLog, parseWitnessTarget, proveEvent, verifyLogAgainst, verifyProofFile, Witnesses, witnessStates } from "../../src/app/index.js";
import { openPostgresLog, writeCheckpoint } from "../../src/events/index.js";
import type { EventLog, StoredCheckpoint } from "../../src/events/index.js";
import { cosignerFromSeed, noteSignerFromSeed } from "../../src/tlog/index.js";
import { grantObserved, pluginObserved } from "../events/helpers.js";
import { startLogDatabases } from "../events/postgres-support.js";
import type { LogDatabases } from "../events/postgres-support.js";

let dbs: LogDatabases;
let url: string;
let log: EventLog;
let root: string;
let c1: StoredCheckpoint;
let c2: StoredCheckpoint;
const signer = noteSignerFromSeed("example.test/pg-log", new Uint8Array(32).fill(5));
if (!signer.ok) throw new Error(signer.error.message);
const key = signer.value;

async function grow(names: readonly string[]): Promise<StoredCheckpoint> {
  for (const name of names) await log.append([pluginObserved(name), grantObserved(name)]);
  const c = await writeCheckpoint(log, key);
  if (c === null) throw new Error("no checkpoint");
  return c;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "openfief-proofs-pg-"));
  dbs = await startLogDatabases();
  url = await dbs.fresh();
  log = await openPostgresLog({ url });
  c1 = await grow(["a", "b", "c"]);
  c2 = await grow(["d", "e"]);
}, 120_000);
afterAll(async () => {
  await log?.close();
  await dbs?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("on PostgreSQL", () => {
  it("a proof of an event verifies offline", async () => {
    const proof = await proveEvent(log, 4, key.verifier);
    expect(proof.size).toBe(c2.size);
    const v = verifyProofFile(Buffer.from(proof.text), key.verifier, []);
    expect(v.lines).toEqual([]);
    expect(v.event).toMatchObject({ seq: 4, type: "grant.observed", stream: "plugin/b" });
  });

  it("an export verifies in one pass", async () => {
    const lines: string[] = [];
    const done = await exportLog(log, 2, null, (l) => { lines.push(l); });
    expect(done).toMatchObject({ from: 2, to: c2.size, size: c2.size });
    const check = new ExportCheck(key.verifier, []);
    for (const l of lines) check.line(l);
    expect(check.finish()).toMatchObject({ ok: true, start: 1, end: c2.size });
  });

  it("keeps the witnesses' cosignatures beside the log", async () => {
    const cosigner = cosignerFromSeed("witness.test/pg", new Uint8Array(32).fill(6));
    if (!cosigner.ok) throw new Error(cosigner.error.message);
    const server: Server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const line = cosigner.value.sign(body.slice(body.indexOf("\n\n") + 2, body.lastIndexOf("\n\n") + 1), 1_700_000_000);
        res.writeHead(line.ok ? 200 : 400).end(line.ok ? `— ${line.value.name} ${line.value.base64}\n` : "");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    try {
      const w = await Witnesses.start(log, [parseWitnessTarget(`http://127.0.0.1:${(server.address() as { port: number }).port} ${cosigner.value.verifierKey}`)], { logger: pino({ level: "silent" }) });
      w.submit(c2);
      await w.settled();
      await w.stop();
      expect(await witnessStates(log)).toMatchObject([{ size: c2.size, status: "cosigned" }]);
      const proof = await proveEvent(log, 1, key.verifier);
      expect(verifyProofFile(Buffer.from(proof.text), key.verifier, [cosigner.value.verifier]).ok).toBe(true);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("verify-log --checkpoint holds, then catches the newest rows deleted", async () => {
    const files = [{ which: "checkpoint" as const, path: join(root, "c2") }, { which: "previous" as const, path: join(root, "c1") }];
    writeFileSync(files[0]?.path ?? "", c2.note);
    writeFileSync(files[1]?.path ?? "", c1.note);
    expect((await verifyLogAgainst(log, files, key.verifier)).lines).toEqual([]);
    await dbs.run(url, `ALTER TABLE events DISABLE TRIGGER ALL; DELETE FROM events WHERE seq > ${c1.size}; ALTER TABLE events ENABLE TRIGGER ALL`);
    const r = await verifyLogAgainst(log, files, key.verifier);
    expect(r.ok).toBe(false);
    expect(r.lines).toEqual([`--checkpoint: the checkpoint covers ${c2.size} events but the log holds ${c1.size}: the newest ${c2.size - c1.size} were deleted (or this is another log)`]);
  });
});
