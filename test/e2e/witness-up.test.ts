/**
 * `up --witness` as users run it (the bundle, as processes): `openfief witness` follows the log,
 * `up` submits each checkpoint it signs, the published /tlog/checkpoint carries the witness's
 * cosignature, and a proof made after `up` stops carries it too and verifies with the witness's key;
 * an export counts it.
 * A bad --witness is one line and exit 2.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLogKey, openDataDir } from "../../src/app/index.js";
import { openCheckpoint, parseVerifierKey } from "../../src/tlog/index.js";
import { spawnOpenfief, startOpenfief } from "./support.js";
import type { Started } from "./support.js";

let root: string;
let data: string;
let witness: Started;
let wurl: string;
let wkey: string;
let logKey: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "openfief-witness-up-"));
  data = join(root, "data");
  openDataDir(data);
  // The log's key first, so the witness can be told it (as an operator would copy it).
  const key = loadLogKey({ dataDir: data });
  logKey = key.verifierKey;
  witness = await startOpenfief(["witness", "--data", join(root, "w"), "--listen", "127.0.0.1:0", "--name", "witness.test/up", "--log", `${key.origin} ${key.verifierKey}`]);
  const out = await witness.waitFor(/listening on http:\/\/\S+/);
  wurl = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? "";
  wkey = /^verifier key: (\S+)$/m.exec(out)?.[1] ?? "";
}, 180_000);
afterAll(async () => {
  await witness.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("up --witness", () => {
  it("publishes checkpoints the witness cosigned, and proofs carry the cosignature", async () => {
    const up = await startOpenfief(["up", "--demo", "--data", data, "--no-egress", "--no-views", "--listen", "127.0.0.1:0", "--witness", `${wurl} ${wkey}`]);
    try {
      const out = await up.waitFor(/console on (http:\/\/\S+?)[;\s]/, 150_000);
      const consoleUrl = /console on (http:\/\/\S+?)[;\s]/.exec(out)?.[1] ?? "";
      const verifier = parseVerifierKey(wkey);
      if (!verifier.ok) throw new Error(verifier.error.message);
      let note = "";
      for (let i = 0; i < 100; i++) {
        const r = await fetch(`${consoleUrl}/tlog/checkpoint`);
        note = await r.text();
        if (r.status === 200 && openCheckpoint(note, [verifier.value]).ok) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(openCheckpoint(note, [verifier.value]).ok, note).toBe(true);
    } finally {
      const r = await up.stop();
      expect(r.code, r.stderr).toBe(0);
    }
    const proof = await spawnOpenfief(["prove", "1", "--data", data, "--out", join(root, "e1.tlog-proof")]);
    expect([proof.code, proof.stderr]).toEqual([0, ""]);
    expect(proof.stdout).toMatch(/cosigned by witness\.test\/up\+[0-9a-f]{8}\n$/);
    const v = await spawnOpenfief(["verify-proof", join(root, "e1.tlog-proof"), "--key", logKey, "--witness", wkey]);
    expect([v.code, v.stderr]).toEqual([0, ""]);
    // An export counts the cosignatures on the checkpoint it proves against.
    const exported = await spawnOpenfief(["export", "--since", "1", "--data", data, "--out", join(root, "all.tlog-export")]);
    expect([exported.code, exported.stderr]).toEqual([0, ""]);
    expect(exported.stdout).toMatch(/proved against the checkpoint of \d+ events \(1 cosignature\)\n$/);
  }, 240_000);

  it("refuses a --witness that is not an http(s) URL: one line, exit 2", async () => {
    const r = await spawnOpenfief(["up", "--data", join(root, "other"), "--no-egress", "--no-views", "--no-server", "--witness", "ftp://witness.example"]);
    expect([r.code, r.stdout]).toEqual([2, ""]);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/--witness takes an http\(s\) URL/);
  });
});
