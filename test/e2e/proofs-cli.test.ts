/**
 * `prove`, `verify-proof`, `export`, `verify-export` and `verify-log --checkpoint` as users run them
 * (the bundle, as processes): a proof and an export made from a data folder verify with nothing but
 * the file and the log's public key, from another folder; a failure is one line each and exit 1;
 * a missing file, a bad key or a file that is not what it should be is one line on stderr and exit 2.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLogKey, openDataDir, openDataStore } from "../../src/app/index.js";
import { writeCheckpoint } from "../../src/events/index.js";
import type { StoredCheckpoint } from "../../src/events/index.js";
import { grantObserved, pluginObserved } from "../events/helpers.js";
import { freshBundle, spawnOpenfief } from "./support.js";

let root: string;
let data: string;
let vkey: string;
let cp: StoredCheckpoint;
const file = (name: string, text: string | Buffer) => {
  const p = join(root, name);
  writeFileSync(p, text);
  return p;
};

beforeAll(freshBundle, 180_000);
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "openfief-proofs-cli-"));
  data = join(root, "data");
  openDataDir(data);
  const key = loadLogKey({ dataDir: data });
  vkey = key.verifierKey;
  const store = await openDataStore(data);
  try {
    for (const name of ["alpha", "beta", "gamma"]) await store.append([pluginObserved(name), grantObserved(name)]);
    const c = await writeCheckpoint(store, key.signer);
    if (c === null) throw new Error("no checkpoint");
    cp = c;
  } finally {
    await store.close();
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("an auditor's files, made and checked by the bundle", () => {
  it("prove to standard output, verify-proof from a key file: exit 0", async () => {
    const made = await spawnOpenfief(["prove", "2", "--data", data]);
    expect([made.code, made.stderr]).toEqual([0, ""]);
    const proof = file("e2.tlog-proof", made.stdout);
    const v = await spawnOpenfief(["verify-proof", proof, "--key", file("log.vkey", `${vkey}\n`)]);
    expect([v.code, v.stderr]).toEqual([0, ""]);
    expect(v.stdout).toMatch(/^the proof holds: event 2 \(grant\.observed on plugin\/alpha, /);
    const j = await spawnOpenfief(["verify-proof", proof, "--key", vkey, "--json"]);
    expect(JSON.parse(j.stdout)).toMatchObject({ ok: true, problems: [], index: 1, checkpoint: { size: cp.size }, event: { seq: 2, type: "grant.observed" } });
  });

  it("a flipped bit in the proof is one line and exit 1", async () => {
    const made = await spawnOpenfief(["prove", "3", "--data", data]);
    const lines = made.stdout.split("\n");
    const at = lines.findIndex((l) => l.length === 44);
    const raw = Buffer.from(lines[at] as string, "base64");
    raw[5] = (raw[5] as number) ^ 4;
    lines[at] = raw.toString("base64");
    const v = await spawnOpenfief(["verify-proof", file("e3-bad.tlog-proof", lines.join("\n")), "--key", vkey]);
    expect([v.code, v.stdout]).toEqual([1, "the entry is not proved at index 2 of the checkpoint: the proof leads to another root\n"]);
  });

  it("export and verify-export: exit 0, then one line and exit 1 for an entry changed", async () => {
    const out = join(root, "all.export");
    const made = await spawnOpenfief(["export", "--since", "1", "--out", out, "--data", data]);
    expect([made.code, made.stderr]).toEqual([0, ""]);
    const v = await spawnOpenfief(["verify-export", out, "--key", vkey]);
    expect([v.code, v.stdout]).toEqual([0, `the export holds: events 1 to ${cp.size} are the log's, proved against ${vkey.split("+")[0]}'s checkpoint of ${cp.size} events, signed by its key\n`]);
    const text = readFileSync(out, "utf8").replace(/^entry (\S+)$/m, (_l, b: string) => `entry ${Buffer.from(Buffer.from(b, "base64").toString().replace("alpha", "omega")).toString("base64")}`);
    const bad = await spawnOpenfief(["verify-export", file("bad.export", text), "--key", vkey]);
    expect(bad.code).toBe(1);
    expect(bad.stdout.trimEnd().split("\n")).toHaveLength(1);
  });
});

describe("bad input: one line on standard error, exit 2", () => {
  const proofFile = () => file("ok.tlog-proof", "c2sp.org/tlog-proof@v1\nindex 0\n\nx\n");
  it.each<[string, () => string[], RegExp]>([
    ["verify-proof of a missing file", () => ["verify-proof", join(root, "none"), "--key", vkey], /FILE: no such file/],
    ["verify-proof with a key that is no key", () => ["verify-proof", proofFile(), "--key", "not-a-key"], /--key is neither a verifier key .* nor a file holding one/],
    ["verify-proof with a key of the wrong type", () => ["verify-proof", proofFile(), "--key", "w+12345678+BAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], /--key: not a verifier key|--key: .*type/],
    ["verify-proof without --key", () => ["verify-proof", proofFile()], /required option '--key <key>' not specified/],
    ["verify-proof of a garbage file", () => ["verify-proof", file("garbage", "hello\nworld\n"), "--key", vkey], /not a tlog-proof/],
    ["verify-proof of a binary file", () => ["verify-proof", file("binary", Buffer.from([0xff, 0, 1, 2])), "--key", vkey], /not a tlog-proof/],
    ["verify-export of a missing file", () => ["verify-export", join(root, "none"), "--key", vkey], /FILE: no such file/],
    ["verify-export of a garbage file", () => ["verify-export", file("garbage2", "hello\n"), "--key", vkey], /not a log export/],
    ["verify-export of a truncated export", () => ["verify-export", file("trunc", "openfief.dev/tlog-export@v1\nstart 0\n"), "--key", vkey], /ends before its checkpoint/],
    ["prove of a sequence number that is not one", () => ["prove", "x", "--data", data], /SEQ/],
    ["export without --since", () => ["export", "--data", data], /required option '--since <seq>'/],
    ["export to a folder that does not exist", () => ["export", "--since", "1", "--out", join(root, "no", "such", "file"), "--data", data], /--out: cannot write/],
  ])("%s", async (_what, args, message) => {
    const r = await spawnOpenfief(args());
    expect([r.code, r.stdout]).toEqual([2, ""]);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });

  it("prove of an event not yet covered by a checkpoint is a refusal (exit 1) that says when", async () => {
    const r = await spawnOpenfief(["prove", String(cp.size + 1), "--data", data]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/event \d+ is not covered by a signed checkpoint yet/);
  });
});
