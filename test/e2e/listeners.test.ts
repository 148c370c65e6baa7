/**
 * Every listener of `openfief up`, its port taken by another program: `up` stops what it started,
 * says which listener, where, and the flag that moves it, and exits non-zero by itself (it used to
 * print `EADDRINUSE` and never exit). Through the bundle users run.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import type { Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOpenfief } from "./support.js";

let dir: string;
let taken: Server;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-listeners-"));
  taken = createServer();
  await new Promise<void>((r) => taken.listen(0, "127.0.0.1", () => r()));
  port = (taken.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((r) => taken.close(r));
  await rm(dir, { recursive: true, force: true });
});

/** Each listener on a free port, but `name`'s on the taken one. */
function flags(name: string, p: number): string[] {
  const at = (listener: string, free: string, busy: string): string => (listener === name ? busy : free);
  return [
    "--egress-port", at("egress", "0", String(p)),
    "--listen", at("console", "127.0.0.1:0", `127.0.0.1:${p}`),
    "--plugin-proxy-origin", at("plugin proxy", "http://localhost:0", `http://localhost:${p}`),
    "--gateway-origin", at("gateway", "http://localhost:0", `http://localhost:${p}`),
  ];
}

describe("up, when a listener's port is taken", () => {
  it.each([
    ["egress", (p: number) => new RegExp(`^openfief: the egress proxy cannot listen on 127\\.0\\.0\\.1:${p}: another program uses that port: pass another --egress-port \\(or --no-egress\\)$`, "m")],
    ["console", (p: number) => new RegExp(`^openfief: 127\\.0\\.0\\.1:${p} is in use by another program: pass another --listen \\(or --no-server\\)$`, "m")],
    ["plugin proxy", (p: number) => new RegExp(`^openfief: the plugin proxy cannot listen on 127\\.0\\.0\\.1:${p}: another program uses that port: pass another --plugin-proxy-origin \\(or --no-views\\)$`, "m")],
    ["gateway", (p: number) => new RegExp(`^openfief: the gateway cannot listen on 127\\.0\\.0\\.1:${p}: another program uses that port: pass another --gateway-origin \\(or --no-views\\)$`, "m")],
  ])("stops everything and exits 1 naming the flag that moves it: %s", async (name, message) => {
    const data = join(dir, name.replace(" ", "-"));
    const up = await startOpenfief(["up", "--data", data, ...flags(name, port)]);
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      up.child.kill("SIGKILL");
    }, 45_000);
    const r = await up.exited;
    clearTimeout(timer);
    expect(hung, `up did not exit by itself: ${r.stderr}`).toBe(false);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(message(port));
    expect(r.stdout).not.toMatch(/openfief is up/);
    // Stopped in order, not cut short: the data folder is let go.
    expect(existsSync(join(data, "up.lock"))).toBe(false);
  }, 90_000);
});
