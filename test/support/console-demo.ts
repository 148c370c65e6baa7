/**
 * The shipped demo as `openfief up --demo` runs it (its WebAssembly plugin installed, not called),
 * with the console on 127.0.0.1 (a free port),
 * and a day of history behind it: the clock starts a day ago, the demo's plugins are applied, the
 * egress proxy's decisions accumulate through the day (appended as the proxy records them, since
 * nothing here may reach the hosts they name), and the upgrade of nbp-fx that is held back
 * arrives an hour before now; with `views`, the gateway and the plugin proxy run too, so that
 * ledger-view's page frames its view. The browser test and `npm run screenshots` both start it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { applyDemoFolder, demoSettings, signInLink } from "../../src/app/index.js";
import { startControlPlane } from "../../src/compose/index.js";
import type { Role } from "../../src/app/index.js";
import type { ControlPlane } from "../../src/compose/index.js";

/** A running demo with its console. */
export interface ConsoleDemo {
  readonly cp: ControlPlane;
  readonly url: string;
  readonly dir: string;
  /** A one-time sign-in link. */
  signIn(user?: string, role?: Role): Promise<string>;
  /** A Bearer session token. */
  token(user?: string, role?: Role): Promise<string>;
  /** Lets the clock run on from now (real time). */
  stop(): Promise<void>;
}

const HOUR = 3_600_000;

interface Decision { plugin: string; host: string; port: number; allowed: boolean; reason: string; rules: number; address?: string }

async function egress(cp: ControlPlane, d: Decision): Promise<void> {
  await cp.runtime.store.append([{ stream: `egress/${d.plugin}`, type: "egress.decision", actor: "egress", data: d }]);
}

/** A day of the proxy's decisions: nbp-fx fetching its rates, the odd refused attempt, and one DNS timeout. */
async function day(cp: ControlPlane, setNow: (t: number) => void, start: number, upgrade: () => Promise<void>): Promise<void> {
  for (let h = 1; h <= 23; h++) {
    setNow(start + h * HOUR);
    // Table A is published on working days around noon; the connector polls every hour, more around noon.
    const fetches = h >= 10 && h <= 14 ? 6 : 2;
    for (let i = 0; i < fetches; i++) await egress(cp, { plugin: "nbp-fx", host: "api.nbp.pl", port: 443, allowed: true, reason: "listed", rules: 1, address: "198.51.100.14" });
    // The WebAssembly connector fetches the ECB's daily reference rates once, after 16:00 CET.
    if (h === 15) await egress(cp, { plugin: "ecb-fx", host: "www.ecb.europa.eu", port: 443, allowed: true, reason: "listed", rules: 1, address: "198.51.100.40" });
    if (h === 6 || h === 17) await egress(cp, { plugin: "ledger-view", host: "telemetry.vendor.example", port: 443, allowed: false, reason: "not_listed", rules: 1 });
    // Once in the night, DNS did not answer for the granted host: a failure to reach, not a refusal.
    if (h === 3) await egress(cp, { plugin: "nbp-fx", host: "api.nbp.pl", port: 443, allowed: false, reason: "dns_timeout", rules: 1 });
    if (h === 23) await upgrade();
    if (h >= 23) for (let i = 0; i < 3; i++) await egress(cp, { plugin: "nbp-fx", host: "static.nbp.pl", port: 443, allowed: false, reason: "not_listed", rules: 1 });
  }
}

/** Starts the demo in a fresh data folder (or `dir`), its history a day long, ending now. */
export async function startConsoleDemo(o: { dir?: string; history?: boolean; views?: boolean; intervalMs?: number; checkpoints?: boolean } = {}): Promise<ConsoleDemo> {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), "openfief-console-"));
  const real = Date.now();
  const start = o.history === false ? real : real - 24 * HOUR;
  let now = start;
  // The clock stands still while the history is written, then runs with real time.
  let frozen = true;
  const clock = () => new Date(frozen ? now : Math.max(Date.now(), now));
  const cp = await startControlPlane({
    dataDir: dir, logger: pino({ level: "warn" }), egress: null, clock, intervalMs: o.intervalMs ?? 100,
    server: { host: "127.0.0.1", port: 0 },
    // The log keeps its key, but signs checkpoints (each an event) only where a test asks: tests
    // that check a refused write appended nothing compare the log's head.
    ...(o.checkpoints === true ? {} : { checkpoints: { every: 1_000_000, intervalMs: 3_600_000 } }),
    // With views: the plugin proxy and the gateway on free ports of localhost (the other site).
    ...(o.views === true
      ? { settings: { ...demoSettings(), pluginProxyOrigin: "http://localhost:0", gatewayOrigin: "http://localhost:0" }, views: {} }
      : { settings: demoSettings() }),
  });
  try {
    await cp.pass();
    await applyDemoFolder(cp.runtime.store, "plugins");
    await cp.pass();
    const upgrade = async () => {
      await applyDemoFolder(cp.runtime.store, "upgrade");
      await cp.pass();
    };
    if (o.history === false) await upgrade();
    else await day(cp, (t) => { now = t; }, start, upgrade);
    frozen = false;
    await cp.pass();
  } catch (err) {
    await cp.stop();
    throw err;
  }
  const url = cp.server?.url ?? "";
  return {
    cp, url, dir,
    signIn: async (user = "alice", role = "owner") => (await signInLink(cp.sessions, url, user, role)).url,
    token: async (user = "alice", role = "owner") => (await cp.sessions.mintSession(user, role)).token,
    async stop() {
      await cp.stop();
      if (o.dir === undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}
