/**
 * `openfief up --store postgres://…` from the bundle users run: the reconciler, the egress proxy's
 * writer thread, the plugin host and the console all on one PostgreSQL log (a real server), the
 * data folder keeping only settings, keys and sessions. The demo's WebAssembly connector is called
 * (by `up --demo`, then once from the command line); each call's egress decision is in the log in
 * PostgreSQL, and `why` there names the proxy's decision and the plugin host's failed call.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDnsServer } from "../egress/support/dns-server.js";
import type { TestDnsServer } from "../egress/support/dns-server.js";
import { startPostgres } from "../support/postgres.js";
import type { TestPostgres } from "../support/postgres.js";
import { spawnOpenfief, startOpenfief } from "./support.js";
import type { Started } from "./support.js";

let pg: TestPostgres;
let dir: string;
let dns: TestDnsServer;
let up: Started;
let store: string;

interface Decision {
  readonly actor: string;
  readonly data: { readonly plugin: string; readonly host: string; readonly port: number; readonly allowed: boolean };
}

async function ok(args: readonly string[]): Promise<string> {
  const r = await spawnOpenfief(args);
  if (r.code !== 0) throw new Error(`openfief ${args.join(" ")} exited ${String(r.code)}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** The egress decisions of ecb-fx, read from PostgreSQL by the bundle's own `log`. */
async function ecbDecisions(): Promise<Decision[]> {
  return (await ok(["log", "--plugin", "ecb-fx", "--type", "egress.decision", "--json", "--store", store])).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Decision);
}

beforeAll(async () => {
  pg = await startPostgres({ settings: { fsync: "off" } });
  store = pg.urlFor(pg.createDatabase("up"));
  await ok(["store", "init", "--store", store]);
  dir = await mkdtemp(join(tmpdir(), "openfief-up-pg-"));
  dns = await startDnsServer({ "www.ecb.europa.eu": { kind: "answer", addresses: ["127.0.0.1"] } });
  up = await startOpenfief([
    "up", "--demo", "--data", dir, "--store", store, "--egress-port", "0", "--listen", "127.0.0.1:0",
    "--plugin-proxy-origin", "http://localhost:0", "--gateway-origin", "http://localhost:0", "--dns-server", dns.server,
  ]);
  await up.waitFor(/openfief is up/, 150_000);
}, 240_000);

afterAll(async () => {
  const r = await up?.stop();
  await dns?.close();
  await pg?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  expect(r?.code, r?.stderr).toBe(0);
}, 60_000);

describe("up on a PostgreSQL log", () => {
  it("runs everything on that log: the demo's call through the egress proxy is recorded there, and the data folder holds no log", async () => {
    const { stdout } = up.output();
    expect(stdout).toMatch(/openfief is up: data in \S+; event log in postgres:\/\/postgres@127\.0\.0\.1:\d+\/up;/);
    expect(stdout).toMatch(/Called ecb-fx \(WebAssembly, in the plugin host\): sync failed with http_failed/);
    expect((await ecbDecisions()).map((e) => e.data)).toContainEqual(expect.objectContaining({ plugin: "ecb-fx", host: "www.ecb.europa.eu", port: 443, allowed: false }));
    expect(existsSync(join(dir, "openfief.db"))).toBe(false);
  });

  it("calls ecb-fx sync once from the command line, and the proxy's decision for that call is in PostgreSQL", async () => {
    const before = (await ecbDecisions()).length;
    const r = await spawnOpenfief(["call", "ecb-fx", "sync", "--data", dir, "--store", store]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^ecb-fx sync: http_failed \(reported by the plugin\)/m);
    const after = await ecbDecisions();
    expect(after).toHaveLength(before + 1);
    expect(after.at(-1)).toMatchObject({ actor: "egress-proxy", data: { plugin: "ecb-fx", host: "www.ecb.europa.eu", port: 443, allowed: false } });
  });

  it("answers why from PostgreSQL with the proxy's decision and the plugin host's failed calls, and the chain holds", async () => {
    const why = await ok(["why", "ecb-fx", "--store", store]);
    expect(why).toMatch(/Its latest egress decision by egress-proxy: (refused|failed to reach) www\.ecb\.europa\.eu:443/);
    expect(why).toMatch(/Its calls failed with http_failed \(reported by the plugin\) (once|\d+ times) in the last hour \(last at [^,]+, recorded by [^)]*plugin-host[^)]*\)/);
    expect(await ok(["verify-log", "--store", store])).toMatch(/^the log holds: \d+ events, every hash verified$/m);
  });
});
