/**
 * `openfief witness` as users run it (the bundle, as a process): every bad flag or file is one
 * line on standard error and exit 2, a folder it cannot trust one line and exit 1; it prints its
 * verifier key and where it listens, cosigns over HTTP, logs one JSON line per request, and on
 * SIGTERM finishes the request in flight and exits 0.
 */
import { Buffer } from "node:buffer";
import { request } from "node:http";
import { createServer } from "node:net";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cosignerFromSeed, openNote, parseVerifierKey } from "../../src/tlog/index.js";
import { KEY_FILE, originHash, STATE_DIR } from "../../src/witness/index.js";
import { FakeLog, must } from "../../src/witness/test-support.js";
import { spawnOpenfief, startOpenfief } from "./support.js";
import type { Started } from "./support.js";

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "witness-cli-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const log = new FakeLog("example.com/log").grow(6);
const cosigner = must(cosignerFromSeed("witness.example/other", new Uint8Array(32).fill(1)));
let n = 0;
const fresh = () => join(root, `d${n++}`);

function file(name: string, text: string): string {
  const p = join(root, name);
  writeFileSync(p, text);
  return p;
}

/** Starts the witness on a free port and waits until it listens; its URL and verifier key. */
async function serve(args: readonly string[], env: Record<string, string> = {}): Promise<{ w: Started; url: string; key: string }> {
  const w = await startOpenfief(["witness", "--listen", "127.0.0.1:0", ...args], env);
  const out = await w.waitFor(/listening on http:\/\/\S+/);
  return { w, url: /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? "", key: /^verifier key: (\S+)$/m.exec(out)?.[1] ?? "" };
}

describe("openfief witness refuses bad inputs, each in one line", () => {
  const badLogs = () => file("bad-logs.txt", `# logs\n${log.line}\n\nexample.com/other notakey\n`);
  it.each<[string, () => string[], RegExp]>([
    ["no log to witness", () => ["--data", fresh()], /no log to witness/],
    ["a --log without a key", () => ["--data", fresh(), "--log", "example.com/log"], /--log "example\.com\/log": expected `<origin> <verifier key>`/],
    ["a --log with a key that does not parse", () => ["--data", fresh(), "--log", "example.com/log example.com/log+00000000+AAAA"], /the verifier key does not parse/],
    ["a --log with a cosigner's key", () => ["--data", fresh(), "--log", `example.com/log ${cosigner.verifierKey}`], /Ed25519 note key/],
    ["the same --log twice", () => ["--data", fresh(), "--log", log.line, "--log", log.line], /given twice/],
    ["a --logs file that does not exist", () => ["--data", fresh(), "--logs", join(root, "none.txt")], /--logs ".*none\.txt" cannot be read \(ENOENT\)/],
    ["a --logs file with one bad line, named by its number", () => ["--data", fresh(), "--logs", badLogs()], /bad-logs\.txt:4: the verifier key does not parse/],
    ["a --logs folder", () => ["--data", fresh(), "--logs", root], /is not a file/],
    ["a --name with a space", () => ["--data", fresh(), "--log", log.line, "--name", "my witness"], /--name "my witness": a witness name is a key name/],
    ["a --name with a plus sign", () => ["--print-key", "--data", fresh(), "--name", "a+b"], /a witness name is a key name/],
    ["a --listen without a port", () => ["--data", fresh(), "--log", log.line, "--listen", "127.0.0.1"], /--listen "127\.0\.0\.1": expected HOST:PORT/],
    ["a --listen port past 65535", () => ["--data", fresh(), "--log", log.line, "--listen", "127.0.0.1:65536"], /expected HOST:PORT/],
    ["a --listen host that is a name", () => ["--data", fresh(), "--log", log.line, "--listen", "example.com:4790"], /an IP address \(or localhost\)/],
    ["a --data that is a file", () => ["--data", file("a-file", ""), "--log", log.line], /data folder ".*a-file" is not a folder/],
    ["an option it does not know", () => ["--data", fresh(), "--frobnicate"], /unknown option '--frobnicate'/],
  ])("%s: exit 2", async (_what, args, message) => {
    const r = await spawnOpenfief(["witness", ...args()]);
    expect([r.code, r.stdout]).toEqual([2, ""]);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });

  it("refuses another --name than the folder's key was made with: exit 2", async () => {
    const dir = fresh();
    expect((await spawnOpenfief(["witness", "--print-key", "--data", dir, "--name", "witness.example/w1"])).code).toBe(0);
    const r = await spawnOpenfief(["witness", "--data", dir, "--name", "witness.example/w2", "--log", log.line]);
    expect([r.code, r.stderr.trimEnd().split("\n").length]).toEqual([2, 1]);
    expect(r.stderr).toContain("is named witness.example/w1, not witness.example/w2");
  });
});

describe("openfief witness refuses a folder it cannot trust: exit 1, one line", () => {
  it.each<[string, (dir: string) => void, RegExp]>([
    ["a corrupt state file", (dir) => writeFileSync(join(dir, STATE_DIR, `${originHash(log.origin)}.json`), "{\"format\":"), /state file .* is corrupt \(not a JSON object\): the witness refuses to start/],
    ["a state folder that is gone", (dir) => rmSync(join(dir, STATE_DIR), { recursive: true }), /holds a witness key but no state\/ folder/],
    ["a key others may read", (dir) => chmodSync(join(dir, KEY_FILE), 0o644), /may be read by others \(mode 0644\): run chmod 600/],
  ])("%s", async (_what, spoil, message) => {
    const dir = fresh();
    expect((await spawnOpenfief(["witness", "--print-key", "--data", dir])).code).toBe(0);
    spoil(dir);
    const r = await spawnOpenfief(["witness", "--data", dir, "--log", log.line, "--listen", "127.0.0.1:0"]);
    expect([r.code, r.stdout]).toEqual([1, ""]);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });

  it("refuses a folder another witness holds, naming it, and a port in use", async () => {
    const dir = fresh();
    const { w } = await serve(["--data", dir, "--log", log.line]);
    try {
      const r = await spawnOpenfief(["witness", "--data", dir, "--log", log.line, "--listen", "127.0.0.1:0"]);
      expect([r.code, r.stderr.trimEnd().split("\n").length]).toEqual([1, 1]);
      expect(r.stderr).toContain(`in use by another witness (pid ${w.child.pid ?? ""}`);
    } finally {
      await w.stop();
    }
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const port = (busy.address() as { port: number }).port;
    const other = fresh();
    expect((await spawnOpenfief(["witness", "--print-key", "--data", other])).code).toBe(0);
    const r = await spawnOpenfief(["witness", "--data", other, "--log", log.line, "--listen", `127.0.0.1:${port}`]);
    busy.close();
    expect([r.code, r.stderr.trim()]).toEqual([1, `openfief: the witness cannot listen on 127.0.0.1:${port} (EADDRINUSE)`]);
  });
});

describe("openfief witness serving", () => {
  it("prints the verifier key --print-key prints, cosigns with it, and never prints its private key", async () => {
    const dir = fresh();
    const printed = await spawnOpenfief(["witness", "--print-key", "--data", dir, "--name", "witness.example/w1"]);
    expect(printed.code).toBe(0);
    expect(printed.stderr).toContain("made a new witness key");
    const { w, url, key } = await serve(["--data", dir, "--log", log.line], { OPENFIEF_LOG_LEVEL: "info" });
    expect(key).toBe(printed.stdout.trim());
    const a = await fetch(`${url}/add-checkpoint`, { method: "POST", body: log.body(0) });
    const body = await a.text();
    expect(a.status).toBe(200);
    expect(must(openNote(`${log.checkpoint()}${body}`, [must(parseVerifierKey(key))])).verified).toHaveLength(1);
    const ended = await w.stop();
    expect(ended.code).toBe(0);
    const access = ended.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(access).toEqual([expect.objectContaining({ msg: "request", origin: log.origin, old: 0, size: 6, status: 200, outcome: "cosigned" })]);
    const secret = readFileSync(join(dir, KEY_FILE), "utf8").trim();
    for (const text of [printed.stdout, printed.stderr, ended.stdout, ended.stderr]) expect(text).not.toContain(secret.slice(-20));
  });

  it("takes its logs from a --logs file", async () => {
    const other = new FakeLog("example.com/other").grow(2);
    const logs = file("logs.txt", `# two logs\n${log.line}\n${other.line}\n`);
    const { w, url } = await serve(["--data", fresh(), "--logs", logs]);
    try {
      expect(w.output().stdout).toContain("(2 logs)");
      expect((await fetch(`${url}/add-checkpoint`, { method: "POST", body: other.body(0) })).status).toBe(200);
    } finally {
      await w.stop();
    }
  });

  it("on SIGTERM, finishes the request in flight, then exits 0", async () => {
    const dir = fresh();
    const { w, url } = await serve(["--data", dir, "--log", log.line]);
    const bytes = Buffer.from(log.body(0));
    const req = request(`${url}/add-checkpoint`, { method: "POST", headers: { "content-length": String(bytes.length) } });
    const answered = new Promise<number>((resolve, reject) => {
      req.on("response", (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
    });
    req.write(bytes.subarray(0, 20));
    await new Promise((r) => setTimeout(r, 200));
    w.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    req.end(bytes.subarray(20));
    expect(await answered).toBe(200);
    const ended = await w.exited;
    expect([ended.code, ended.signal]).toEqual([0, null]);
    // What it cosigned is kept: a restart answers from it.
    const again = await serve(["--data", dir, "--log", log.line]);
    try {
      const r = await fetch(`${again.url}/add-checkpoint`, { method: "POST", body: log.body(0) });
      expect([r.status, r.headers.get("content-type"), await r.text()]).toEqual([409, "text/x.tlog.size", "6\n"]);
    } finally {
      await again.w.stop();
    }
  });

  it("prints its key and listens without any flag but its logs, on 127.0.0.1, and stops on an interrupt", async () => {
    const dir = fresh();
    mkdirSync(dir);
    const { w, url, key } = await serve(["--data", dir, "--log", log.line]);
    w.child.kill("SIGINT");
    expect((await w.exited).code).toBe(0);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(key).toMatch(/\/witness\+[0-9a-f]{8}\+/);
  });
});
