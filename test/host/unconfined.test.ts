/**
 * The unconfined tier with real subprocesses: small Node scripts in a temp directory that speak
 * the ABI as NDJSON frames, and that hang, crash, flood stdout, leave children behind, or change
 * on disk after being permitted.
 */
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createPluginHost, isExecutableName } from "../../src/host/index.js";
import { startHost, type TestHost } from "./support/host.js";

const SECRET = "unc0nf1ned-S3cret-value";

/** The test executable; `name` makes each file's bytes (so its digest) its own. */
function script(name: string, abi = 1): string {
  return `#!/usr/bin/env node
// ${name}
"use strict";
const { spawn } = require("node:child_process");
const rl = require("node:readline").createInterface({ input: process.stdin });
const send = (f) => process.stdout.write(JSON.stringify(f) + "\\n");
rl.on("line", (line) => {
  const { id, method, params } = JSON.parse(line);
  switch (method) {
    case "abi_version": return send({ id, result: ${abi} });
    case "pid": return send({ id, result: process.pid });
    case "hang": return;
    case "slow": return setTimeout(() => send({ id, result: "late" }), 3000);
    case "crash": return process.exit(1);
    case "flood": return process.stdout.write("x".repeat(1 << 20));
    case "garbage": return process.stdout.write("not a frame\\n");
    case "child": { const c = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" }); return send({ id, result: c.pid }); }
    case "log": for (let i = 0; i < 3000; i++) process.stderr.write("line " + i + " " + params.secret + "\\n"); return send({ id, result: "logged" });
    case "fail": return send({ id, error: { code: "internal", message: "failed with " + params.secret } });
    default: return send({ id, result: { method, params } });
  }
});
rl.on("close", () => process.exit(0));
`;
}

function sha(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let t: TestHost;
let dir: string;
const digests: Record<string, string> = {};

function write(name: string, text: string, mode = 0o755): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-unconfined-"));
  for (const name of ["echo", "crashy", "flooder", "hanger", "changer"]) digests[name] = sha(write(name, script(name)));
  digests["old-abi"] = sha(write("old-abi", script("old-abi", 2)));
  digests["not-abi"] = sha(write("not-abi", "#!/bin/sh\necho hello\nsleep 5\n"));
  write("readme.txt", "not executable", 0o644);
  write(".hidden", script("hidden"));
  write("_under", script("under"));
  mkdirSync(join(dir, "a-directory"));
  symlinkSync(join(dir, "echo"), join(dir, "link"));
  // 2 s: a process start (a node process) is inside a call's time when none runs.
  t = await startHost({ unconfinedDir: dir, limits: { time: 2000 }, caps: { messageBytes: 64 * 1024, httpResponseBytes: 0, logLineBytes: 200, logCallBytes: 4096 } });
});

afterAll(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

async function permitted(name: string): Promise<string> {
  const r = await t.host.unconfined?.permit(name, digests[name] as string, "owner:test");
  if (r === undefined || !r.ok) throw new Error(`permit ${name}: ${r?.ok === false ? r.error.message : "no tier"}`);
  return r.value.digest;
}

describe("the unconfined directory", () => {
  it.each([["echo", true], ["a.b_c-1", true], [".hidden", false], ["_under", false], ["-dash", false], ["", false], ["a/b", false], ["x".repeat(129), false]])("name %j follows the rule: %s", (name, ok) => {
    expect(isExecutableName(name)).toBe(ok);
  });

  it("lists executable regular files by the name rule, with their digests, without running them", async () => {
    const list = await t.host.unconfined?.list();
    expect(list?.map((e) => e.name)).toEqual(["changer", "crashy", "echo", "flooder", "hanger", "not-abi", "old-abi"]);
    expect(list?.find((e) => e.name === "echo")?.digest).toBe(digests.echo);
  });

  it.each([
    ["a name not in the directory", "ghost", "a".repeat(64), "plugin_executable_unknown"],
    ["a file that is not executable", "readme.txt", "a".repeat(64), "plugin_executable_unknown"],
    ["a symlink", "link", "a".repeat(64), "plugin_executable_unknown"],
    ["a digest the file does not have", "echo", "b".repeat(64), "plugin_executable_changed"],
  ])("refuses to permit %s", async (_name, name, digest, code) => {
    const r = await t.host.unconfined?.permit(name, digest, "owner:test");
    expect(r?.ok === false && r.error.code).toBe(code);
  });
});

describe("a permitted executable", () => {
  it("is recorded, started from a sealed copy, and serves its calls from one process", async () => {
    const d = await permitted("echo");
    expect((await t.store.read({ type: "executable.permitted" })).map((e) => e.data)).toContainEqual({ executable: "echo", digest: d, size: expect.any(Number) });
    const r = await t.host.call("unc", d, { method: "sync", params: { batchId: "b" } });
    expect(r).toEqual({ ok: true, result: { method: "sync", params: { batchId: "b" } } });
    const [a, b] = await Promise.all([t.host.call("unc", d, { method: "pid" }), t.host.call("unc", d, { method: "pid" })]);
    expect(a.ok && b.ok && a.result === b.result).toBe(true);
    expect(t.host.lastCalls().get("unc")).toMatchObject({ runtime: "unconfined", digest: d });
  });

  it("reports a plugin's own failure with its own code, redacted", async () => {
    const d = await permitted("echo");
    const r = await t.host.call("unc", d, { method: "fail", params: { secret: SECRET }, secrets: [SECRET] });
    expect(r).toEqual({ ok: false, error: { source: "plugin", code: "internal", message: "failed with [REDACTED]" } });
  });

  it("that hangs is killed with its process group at the time limit, failing the calls in flight", async () => {
    const d = await permitted("hanger");
    const child = await t.host.call("unc-hang", d, { method: "child" });
    const grandchild = child.ok ? (child.result as number) : -1;
    expect(alive(grandchild)).toBe(true);
    const [hung, slow] = await Promise.all([t.host.call("unc-hang", d, { method: "hang" }), t.host.call("unc-hang", d, { method: "slow" })]);
    expect(hung.ok === false && hung.error.code).toBe("plugin_timed_out");
    expect(slow.ok === false && slow.error).toMatchObject({ code: "plugin_failed", message: expect.stringMatching(/unanswered past the time limit/) });
    await vi.waitFor(() => expect(alive(grandchild)).toBe(false), { timeout: 5000, interval: 50 });
    // The next call starts it again.
    expect((await t.host.call("unc-hang", d, { method: "ping" })).ok).toBe(true);
  });

  it("that crashes fails its calls and is restarted for the next one", async () => {
    const d = await permitted("crashy");
    const before = await t.host.call("unc-crash", d, { method: "pid" });
    const crash = await t.host.call("unc-crash", d, { method: "crash" });
    expect(crash.ok === false && crash.error).toMatchObject({ code: "plugin_failed", message: expect.stringMatching(/exited \(code 1\)/) });
    const after = await t.host.call("unc-crash", d, { method: "pid" });
    expect(before.ok && after.ok && before.result !== after.result).toBe(true);
    expect((await t.store.read({ type: "plugin.call", stream: "plugin/unc-crash" })).map((e) => e.data)).toEqual([expect.objectContaining({ runtime: "unconfined", code: "plugin_failed" })]);
  });

  it.each([
    ["floods stdout past the message cap", "flood"],
    ["writes something on stdout that is not a frame", "garbage"],
  ])("that %s is stopped as not speaking the ABI", async (_name, method) => {
    const d = await permitted("flooder");
    const r = await t.host.call("unc-flood", d, { method });
    expect(r.ok === false && r.error.code).toBe("plugin_executable_invalid");
    expect((await t.host.call("unc-flood", d, { method: "ping" })).ok).toBe(true);
  });

  it("logs through stderr, capped and redacted", async () => {
    const d = await permitted("echo");
    const r = await t.host.call("unc-log", d, { method: "log", params: { secret: SECRET }, secrets: [SECRET] });
    expect(r.ok).toBe(true);
    // One process serves every call of its executable, so its log is the executable's.
    const mine = () => t.logs.filter((l) => l.executable === "echo" && l.stream === "stderr");
    await vi.waitFor(() => expect(mine().length).toBeGreaterThan(5), { timeout: 5000 });
    const lines = mine().map((l) => String(l.msg));
    expect(lines[0]).toBe("line 0 [REDACTED]");
    expect(lines.join("").length).toBeLessThanOrEqual(4 * 4096);
    for (const raw of t.raw) expect(raw).not.toContain(SECRET.slice(0, 8));
  });

  it("that speaks another ABI version is refused", async () => {
    const d = await permitted("old-abi");
    const r = await t.host.call("unc-old", d, { method: "sync" });
    expect(r.ok === false && r.error.code).toBe("plugin_abi_unsupported");
  });

  it("that does not speak the ABI at all is refused", async () => {
    const d = await permitted("not-abi");
    const r = await t.host.call("unc-not", d, { method: "sync" });
    expect(r.ok === false && r.error.code).toBe("plugin_executable_invalid");
  });

  it("that changes on disk after being permitted is not started again", async () => {
    const d = await permitted("changer");
    expect((await t.host.call("unc-change", d, { method: "ping" })).ok).toBe(true);
    writeFileSync(join(dir, "changer"), script("changer").replace("abi_version", "abi_version_changed"));
    // The running process is the sealed copy; it ends, and the next start finds the file changed.
    expect((await t.host.call("unc-change", d, { method: "crash" })).ok).toBe(false);
    const r = await t.host.call("unc-change", d, { method: "ping" });
    expect(r.ok === false && r.error).toMatchObject({ code: "plugin_executable_changed", message: expect.stringMatching(/not the permitted/) });
  });

  it("is refused with plugin_unconfined_disabled by a host that does not enable the tier", async () => {
    const d = await permitted("echo");
    const other = createPluginHost({ store: t.store, logger: pino({ level: "silent" }), limits: { time: 500 } });
    try {
      const r = await other.call("unc", d, { method: "sync" });
      expect(r.ok === false && r.error.code).toBe("plugin_unconfined_disabled");
      expect(other.unconfined).toBeNull();
    } finally {
      await other.close();
    }
  });
});
