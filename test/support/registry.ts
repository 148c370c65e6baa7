/**
 * A real OCI registry for tests: Debian's `docker-registry` (distribution 2.8, which has no
 * referrers API, so the `sha256-<hex>` tag fallback is what gets exercised), on 127.0.0.1 with a
 * free port, a temporary storage folder and its own config file. Installed with apt-get when
 * missing (tests and CI run as root). Stopped, and its folder removed, by `stop()`.
 */
import { execFileSync, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

export const REGISTRY_BINARY = "/usr/bin/docker-registry";

export interface TestRegistry {
  /** `127.0.0.1:<port>`, as written in an image reference. */
  readonly host: string;
  readonly url: string;
  stop(): Promise<void>;
}

/** Installs Debian's docker-registry when it is missing. */
export function ensureRegistryInstalled(): void {
  if (existsSync(REGISTRY_BINARY)) return;
  if (typeof process.getuid === "function" && process.getuid() !== 0) {
    throw new Error(`${REGISTRY_BINARY} is missing; install it with: apt-get install -y docker-registry`);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  execFileSync("apt-get", ["update"], { stdio: "ignore", env });
  execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "docker-registry"], { stdio: "ignore", env });
  if (!existsSync(REGISTRY_BINARY)) throw new Error(`apt-get did not install ${REGISTRY_BINARY}`);
}

async function waitReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`docker-registry exited with ${child.exitCode}: ${output()}`);
    try {
      const res = await fetch(`${url}/v2/`);
      await res.body?.cancel();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`docker-registry did not become ready: ${output()}`);
}

/** Starts a registry on 127.0.0.1; call `stop()` when done. */
export async function startRegistry(): Promise<TestRegistry> {
  ensureRegistryInstalled();
  const dir = mkdtempSync(join(tmpdir(), "openfief-registry-"));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const config = join(dir, "config.yml");
  writeFileSync(
    config,
    [
      "version: 0.1",
      "log:",
      "  level: error",
      "  accesslog:",
      "    disabled: true",
      "storage:",
      "  filesystem:",
      `    rootdirectory: ${join(dir, "storage")}`,
      "  delete:",
      "    enabled: true",
      "http:",
      `  addr: ${host}`,
      "",
    ].join("\n"),
  );
  const child = spawn(REGISTRY_BINARY, ["serve", config], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  child.stderr?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  const url = `http://${host}`;
  try {
    await waitReady(url, child, () => output);
  } catch (err) {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    host,
    url,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
