/**
 * What `npm start` and `npx openfief` run: bin/openfief.js loading the compiled bundle, never the
 * TypeScript sources. The demo's WebAssembly connector reaches the egress proxy from the bundle —
 * from `up --demo` and from a one-shot `call` — and the proxy's decision is on the log whatever
 * the network answers (here the test's DNS server answers a loopback address, which the proxy
 * refuses: nothing leaves this machine). The plugin sandbox runs from beside the bundle.
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDnsServer } from "../egress/support/dns-server.js";
import type { TestDnsServer } from "../egress/support/dns-server.js";
import { ROOT, spawnOpenfief, startOpenfief } from "./support.js";
import type { Started } from "./support.js";

let dir: string;
let dns: TestDnsServer;
let up: Started;

interface Decision {
  readonly type: string;
  readonly data: { readonly plugin: string; readonly host: string; readonly port: number; readonly allowed: boolean };
}

/** The egress decisions of ecb-fx, read by the bundle's own `log`. */
async function ecbDecisions(): Promise<Decision[]> {
  const r = await spawnOpenfief(["log", "--plugin", "ecb-fx", "--type", "egress.decision", "--json", "--data", dir]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Decision);
}

/** The process ids whose parent is `pid` (Linux). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // The command name is in parentheses and may hold spaces: the fields after it are fixed.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((a) => a !== "");
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-bundle-"));
  dns = await startDnsServer({ "www.ecb.europa.eu": { kind: "answer", addresses: ["127.0.0.1"] } });
  up = await startOpenfief([
    "up", "--demo", "--data", dir, "--egress-port", "0", "--listen", "127.0.0.1:0",
    "--plugin-proxy-origin", "http://localhost:0", "--gateway-origin", "http://localhost:0", "--dns-server", dns.server,
  ]);
  await up.waitFor(/openfief is up/, 150_000);
}, 240_000);

afterAll(async () => {
  const r = await up?.stop();
  await dns?.close();
  await rm(dir, { recursive: true, force: true });
  expect(r?.code, r?.stderr).toBe(0);
}, 60_000);

describe("the bundle users run", () => {
  it("calls the demo's WebAssembly connector from up --demo through the egress proxy, which records its decision", async () => {
    const { stdout } = up.output();
    expect(stdout).toMatch(/Called ecb-fx \(WebAssembly, in the plugin host\): sync failed with http_failed: .*the egress proxy could not reach the origin, or refused its address \(502\)/);
    expect(dns.queries.get("www.ecb.europa.eu") ?? 0).toBeGreaterThan(0);
    expect((await ecbDecisions()).map((e) => e.data)).toContainEqual(expect.objectContaining({ plugin: "ecb-fx", host: "www.ecb.europa.eu", port: 443, allowed: false }));
  });

  it("calls ecb-fx sync once from the command line, and the proxy's decision for that call is on the log", async () => {
    const before = (await ecbDecisions()).length;
    const r = await spawnOpenfief(["call", "ecb-fx", "sync", "--data", dir]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^ecb-fx sync: http_failed \(reported by the plugin\): .*the egress proxy could not reach the origin, or refused its address \(502\)/m);
    const after = await ecbDecisions();
    expect(after).toHaveLength(before + 1);
    expect(after.at(-1)?.data).toMatchObject({ plugin: "ecb-fx", host: "www.ecb.europa.eu", port: 443, allowed: false });
  });

  it("runs the plugin sandbox the build emitted beside the bundle, not the source tree's", () => {
    const holder = JSON.parse(readFileSync(join(dir, "up.lock"), "utf8")) as { pid: number };
    const sandboxes = childrenOf(holder.pid).map(commandLine).filter((argv) => argv.some((a) => a.endsWith("sandbox.js")));
    expect(sandboxes.length).toBeGreaterThan(0);
    for (const argv of sandboxes) expect(argv).toContain(join(ROOT, "dist", "sandbox", "sandbox.js"));
  });
});
