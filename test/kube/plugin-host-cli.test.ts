/**
 * `openfief plugin-host` as a command: its flags are checked before it starts, and as a real child
 * process (`node bin/openfief.js`) it starts against the fake API server through a kubeconfig
 * file, reports ready once it has read the ConfigMap, and stops on SIGTERM.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, BUNDLE_ENV, freshBundle, openfief, ROOT } from "../e2e/support.js";
import { FakeApiServer } from "./fake-apiserver.js";

let server: FakeApiServer;
let dir: string;

// The processes these tests start run the bundle users run: built first when the sources are newer.
beforeAll(freshBundle, 180_000);

beforeAll(async () => {
  server = await FakeApiServer.start();
  dir = await mkdtemp(join(tmpdir(), "openfief-plugin-host-cli-"));
  await writeFile(join(dir, "kubeconfig"), server.kubeConfig("plugin-host-token").exportConfig());
});

afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe("openfief plugin-host", () => {
  it.each([
    [["--egress-proxy", "ftp://10.96.0.30:4750"], "--egress-proxy must be http://host:port"],
    [["--egress-proxy", "http://user:secret@10.96.0.30:4750"], "without credentials"],
    [["--health-port", "70000"], "--health-port must be a port number"],
    [["--listen", "nowhere"], "--listen: expected [host]:port"],
    [["--kubeconfig", "/nonexistent/kubeconfig"], "plugin-host refused to start"],
  ])("refuses %j with a one-line reason and a non-zero exit", async (args, message) => {
    const r = await openfief(["plugin-host", ...args]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
    expect(r.stderr).not.toContain("secret");
  });

  it("runs as a process: ready once the ConfigMap is read, stopped by SIGTERM", async () => {
    const child = spawn(
      process.execPath,
      [BIN, "plugin-host", "--kubeconfig", join(dir, "kubeconfig"), "--listen", "127.0.0.1:0", "--health-port", "0", "--store", join(dir, "store"), "--sa-jwks-dir", dir],
      { cwd: ROOT, env: { ...process.env, ...BUNDLE_ENV, OPENFIEF_LOG_LEVEL: "info" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    const serving = new Promise<{ port: number; healthPort: number }>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        for (const line of out.split("\n")) {
          if (!line.includes("plugin host serving")) continue;
          const { port, healthPort } = JSON.parse(line) as { port: number; healthPort: number };
          resolve({ port, healthPort });
        }
      });
      child.on("close", (code) => reject(new Error(`exited ${String(code)} before serving: ${out}`)));
    });
    const { port, healthPort } = await serving;
    expect(port).toBeGreaterThan(0);
    let ready = 0;
    for (let i = 0; i < 200 && ready !== 200; i++) {
      ready = (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).status;
      if (ready !== 200) await new Promise((r) => setTimeout(r, 25));
    }
    expect(ready).toBe(200);
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 60_000);
});
