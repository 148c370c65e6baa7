/**
 * The verifiable log through the bundle users run: `up` signs checkpoints with a key it makes in
 * the data folder and serves the tiles; `export-tiles DIR` writes the same files, which every tile
 * fetched from the server equals byte for byte; a folder that cannot take them is one line and
 * exit 2.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishedPaths } from "../../src/app/index.js";
import { openCheckpoint, parseVerifierKey } from "../../src/tlog/index.js";
import { ok, ROOT, spawnOpenfief, startOpenfief } from "./support.js";
import type { Started } from "./support.js";

let dir: string;
let data: string;
let up: Started;
let consoleUrl: string;
let verifierKey: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-tlog-e2e-"));
  data = join(dir, "data");
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), "--data", data]);
  up = await startOpenfief([
    "up", "--data", data, "--no-egress", "--no-views", "--listen", "127.0.0.1:0", "--json",
    "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json"),
    // One checkpoint at start, then only when asked: the log's files hold still while compared.
    "--checkpoint-every", "100000000", "--checkpoint-interval", "3600",
  ]);
  const out = await up.waitFor(/"logKey"/, 150_000);
  const said = JSON.parse(out.slice(out.indexOf("{"))) as { console: string; logKey: string };
  consoleUrl = said.console;
  verifierKey = said.logKey;
}, 240_000);

afterAll(async () => {
  const r = await up?.stop();
  await rm(dir, { recursive: true, force: true });
  expect(r?.code, r?.stderr).toBe(0);
}, 60_000);

async function compare(out: string): Promise<number> {
  const note = await readFile(join(out, "checkpoint"), "utf8");
  const v = parseVerifierKey(verifierKey);
  if (!v.ok) throw new Error(v.error.message);
  const opened = openCheckpoint(note, [v.value]);
  if (!opened.ok) throw new Error(opened.error.message);
  const size = opened.value.checkpoint.size;
  for (const p of publishedPaths(size)) {
    const r = await fetch(`${consoleUrl}/tlog/${p}`);
    expect(r.status, p).toBe(200);
    expect(Buffer.from(await r.arrayBuffer()).equals(await readFile(join(out, ...p.split("/")))), p).toBe(true);
  }
  return size;
}

describe("export-tiles and the /tlog files", () => {
  it("made the log's key in the data folder, its owner's only, and publishes its verifier key", async () => {
    expect(verifierKey).toMatch(/^openfief\/log\/[0-9a-f]{16}\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    expect((await stat(join(data, "log-key"))).mode & 0o777).toBe(0o600);
    const r = await fetch(`${consoleUrl}/api/v1/log/key`);
    expect(await r.json()).toEqual({ origin: verifierKey.split("+")[0], key: verifierKey });
  });

  it("writes the files a static server publishes, each equal to what the console serves", async () => {
    const out = join(dir, "tiles");
    const r = await spawnOpenfief(["export-tiles", out, "--data", data]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^wrote the checkpoint of \d+ events \(root [A-Za-z0-9+/]{43}=\), \d+ tile\(s\) and \d+ entry bundle\(s\) to /);
    expect(await compare(out)).toBeGreaterThan(0);
  }, 60_000);

  it("signs a checkpoint of the whole log first with --sign, and the console serves it too", async () => {
    await ok(["apply", "-f", join(ROOT, "examples", "upgrade"), "--data", data]);
    const out = join(dir, "signed");
    const r = await spawnOpenfief(["export-tiles", out, "--data", data, "--sign", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const said = JSON.parse(r.stdout) as { size: number };
    expect(await compare(out)).toBe(said.size);
    expect(await (await fetch(`${consoleUrl}/tlog/checkpoint`)).text()).toBe(await readFile(join(out, "checkpoint"), "utf8"));
  }, 60_000);

  it.each([
    ["a folder under a parent that does not exist", () => join(dir, "no", "such", "place"), /^openfief: cannot make .* its parent folder .* does not exist\n$/],
    ["a file", () => join(dir, "a-file"), /^openfief: .*a-file is not a folder\n$/],
  ])("refuses %s in one line, exit 2", async (_what, target, message) => {
    await writeFile(join(dir, "a-file"), "x");
    const r = await spawnOpenfief(["export-tiles", target(), "--data", data]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe("");
  }, 60_000);
});
