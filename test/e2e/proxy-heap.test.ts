/**
 * The embedded proxy runs with the cluster's heap setting (glibc keeps freed heap rather than
 * trimming it after every collection; ADR 0034) without the user doing anything: `up` and `egress`
 * start once more with `GLIBC_TUNABLES` set, since glibc reads it only when a process starts.
 * Checked on the process that runs the proxy, through the bundle.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { proxyEnvironment, TRIM_TUNABLE } from "../../bin/launch.js";
import { FakeApiServer } from "../kube/fake-apiserver.js";
import { startOpenfief } from "./support.js";

let dir: string;
let api: FakeApiServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-heap-"));
  api = await FakeApiServer.start();
  api.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "openfief-egress-allowlist", namespace: "openfief" }, data: {} });
  await writeFile(join(dir, "kubeconfig"), api.kubeConfig("egress-token").exportConfig());
});

afterAll(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

/** A process's environment variable (Linux). */
function environOf(pid: number, name: string): string | undefined {
  const entry = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").find((e) => e.startsWith(`${name}=`));
  return entry?.slice(name.length + 1);
}

function childOf(pid: number): number | undefined {
  return readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number).find((p) => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
    } catch {
      return false;
    }
  });
}

/** Starts `up` with only the egress proxy on a free port, and returns the pid that holds the data folder. */
async function up(name: string, env: Record<string, string> = {}) {
  const data = join(dir, name);
  const started = await startOpenfief(["up", "--data", data, "--egress-port", "0", "--no-server", "--no-views"], env);
  await started.waitFor(/openfief is up/);
  const { pid } = JSON.parse(readFileSync(join(data, "up.lock"), "utf8")) as { pid: number };
  return { started, pid, data };
}

describe("which commands start again with the cluster's heap setting", () => {
  it.each([
    ["up, with nothing set", ["up", "--demo"], {}, "linux", TRIM_TUNABLE],
    ["egress, with nothing set", ["egress", "--listen", ":4750"], {}, "linux", TRIM_TUNABLE],
    ["up, keeping the user's other tunables", ["up"], { GLIBC_TUNABLES: "glibc.malloc.arena_max=2" }, "linux", `${TRIM_TUNABLE}:glibc.malloc.arena_max=2`],
    ["up, when the user set a threshold of their own", ["up"], { GLIBC_TUNABLES: "glibc.malloc.trim_threshold=1048576" }, "linux", null],
    ["up, when already started again", ["up"], { GLIBC_TUNABLES: TRIM_TUNABLE }, "linux", null],
    ["a command that runs no proxy", ["get", "plugins"], {}, "linux", null],
    ["help for up", ["help", "up"], {}, "linux", null],
    ["up off Linux", ["up"], {}, "darwin", null],
  ] as const)("%s", (_name, args, env, platform, expected) => {
    expect(proxyEnvironment(args, env, platform)?.GLIBC_TUNABLES ?? null).toBe(expected);
  });
});

describe("the process that runs the proxy", () => {
  it("has the setting under up, and stops cleanly when its launcher is told to", async () => {
    const { started, pid } = await up("plain");
    expect(pid).not.toBe(started.child.pid);
    expect(environOf(pid, "GLIBC_TUNABLES")).toBe(TRIM_TUNABLE);
    const r = await started.stop();
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(`/proc/${pid}`)).toBe(false);
  }, 90_000);

  it("has it beside the user's other tunables", async () => {
    const { started, pid } = await up("arena", { GLIBC_TUNABLES: "glibc.malloc.arena_max=2" });
    // glibc cuts the string in place once parsed: /proc shows the first tunable only (the unit table shows the whole).
    expect(environOf(pid, "GLIBC_TUNABLES")).toBe(TRIM_TUNABLE);
    expect((await started.stop()).code).toBe(0);
  }, 90_000);

  it("keeps a threshold the user chose, in one process", async () => {
    const own = "glibc.malloc.trim_threshold=1048576";
    const { started, pid } = await up("own", { GLIBC_TUNABLES: own });
    expect(pid).toBe(started.child.pid);
    expect(environOf(pid, "GLIBC_TUNABLES")).toBe(own);
    expect((await started.stop()).code).toBe(0);
  }, 90_000);

  it("has the setting under egress", async () => {
    const started = await startOpenfief(["egress", "--listen", "127.0.0.1:0", "--kubeconfig", join(dir, "kubeconfig")], { OPENFIEF_LOG_LEVEL: "info" });
    try {
      await started.waitFor(/egress proxy listening/);
      const pid = childOf(started.child.pid ?? -1);
      expect(pid).toBeDefined();
      expect(environOf(pid ?? -1, "GLIBC_TUNABLES")).toBe(TRIM_TUNABLE);
    } finally {
      const r = await started.stop();
      expect(r.code, `${r.stderr}${r.stdout}`).toBe(0);
    }
  }, 90_000);

  it("stops, releasing the data folder, when its launcher is killed outright", async () => {
    const { started, pid, data } = await up("orphan");
    started.child.kill("SIGKILL");
    await started.exited;
    for (let i = 0; i < 150 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(`/proc/${pid}`)).toBe(false);
    expect(existsSync(join(data, "up.lock"))).toBe(false);
  }, 90_000);
});
