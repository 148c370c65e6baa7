/**
 * The console from the command line: `openfief up` serves it and prints a one-time sign-in link,
 * `openfief login` prints a Bearer token (or, with --link, a link to the running console), and
 * the flags refuse what they cannot do — listening beyond loopback without TLS above all.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { storeFile } from "../../src/app/data-dir.js";
import { openStore } from "../../src/events/index.js";
import type { NewEvent } from "../../src/events/index.js";
import { BIN, BUNDLE_ENV, freshBundle, openfief, ROOT, spawnOpenfief } from "../e2e/support.js";
import { bearer, call, cookieOf } from "./support.js";

let dir: string;
let up: ChildProcess;
let started: { console: string; signIn: string; data: string };

/** Starts `openfief up --json` and resolves with what it printed once it is up. */
function startUp(args: readonly string[]): Promise<{ child: ChildProcess; printed: typeof started }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "up", "--json", ...args], { cwd: ROOT, env: { ...process.env, ...BUNDLE_ENV }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      try {
        resolve({ child, printed: JSON.parse(out) as typeof started });
      } catch {
        // Not all of it yet.
      }
    });
    child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
    child.on("exit", (code) => reject(new Error(`up exited ${String(code)}: ${err}`)));
  });
}

// The processes these tests start run the bundle users run: built first when the sources are newer.
beforeAll(freshBundle, 180_000);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-console-cli-"));
  // Free ports for the views too: another up (or a test file) may hold 4781-4782.
  const r = await startUp(["--no-egress", "--listen", "127.0.0.1:0", "--plugin-proxy-origin", "http://localhost:0", "--gateway-origin", "http://localhost:0", "--user", "olga", "--data", dir]);
  up = r.child;
  started = r.printed;
}, 60_000);

afterAll(async () => {
  if (up.exitCode === null) {
    const exited = new Promise((r) => up.once("exit", r));
    up.kill("SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("openfief up", () => {
  it("serves the console on loopback and prints a sign-in link that works once", async () => {
    expect(started.console).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const link = new URL(started.signIn);
    expect(link.origin).toBe(started.console);
    const r = await call(started.console, link.pathname + link.search);
    expect(r.status).toBe(303);
    const me = await call(started.console, "/api/v1/session", { headers: { cookie: cookieOf(r) } });
    expect(me.json()).toMatchObject({ user: "olga", role: "owner" });
    expect((await call(started.console, link.pathname + link.search)).status).toBe(401);
  });

  it("answers only at the origin it printed: the same port of localhost is redirected there", async () => {
    const link = new URL(started.signIn);
    const r = await call(started.console, link.pathname + link.search, { headers: { host: `localhost:${link.port}` } });
    expect([r.status, r.headers["location"], r.headers["set-cookie"]]).toEqual([307, `${started.console}${link.pathname}${link.search}`, undefined]);
  });

  it.each<[string, string[], RegExp]>([
    ["beyond loopback without TLS", ["--listen", "0.0.0.0:0"], /listening on 0\.0\.0\.0 reaches beyond this machine: give --tls-cert and --tls-key/],
    ["at an address that is not one", ["--listen", "nowhere"], /--listen must be host:port/],
    ["with a certificate but no key", ["--tls-cert", "/etc/hostname"], /give --tls-cert and --tls-key together/],
  ])("refuses to listen %s", async (_what, args, message) => {
    const r = await openfief(["up", "--no-egress", "--data", join(dir, "never"), ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it.each<[string, string[], RegExp]>([
    ["a console also answering at localhost, the views' site", ["--origin", "http://localhost:4780"], /the plugin proxy \(http:\/\/localhost:\d+\) must be a different site from the console \(http:\/\/localhost:4780\)/],
    ["a gateway on the console's site (another port of 127.0.0.1)", ["--gateway-origin", "http://127.0.0.1:0"], /the gateway \(http:\/\/127\.0\.0\.1:\d+\) must be a different site from the console/],
  ])("refuses %s: cookies are shared across ports", async (_what, args, message) => {
    const r = await openfief(["up", "--no-egress", "--listen", "127.0.0.1:0", "--plugin-proxy-origin", "http://localhost:0", "--gateway-origin", "http://localhost:0", "--data", join(dir, `never-${args[0]?.slice(2) ?? ""}`), ...args]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
  });
});

describe("the console's egress and integrity pages, as openfief up serves them", () => {
  const HOUR = 3_600_000;
  let owner: Record<string, string>;
  let at = Date.parse("2026-11-30T08:00:00Z");

  /** Appends through a second connection, as the egress proxy's writer thread does (up is not told). */
  async function appendBeside(events: NewEvent[]): Promise<void> {
    const store = await openStore({ file: storeFile(dir), clock: () => new Date(at) });
    try {
      await store.append(events);
    } finally {
      await store.close();
    }
  }
  const decision = (host: string, allowed: boolean): NewEvent => ({ stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: { plugin: "nbp-fx", host, port: 443, allowed, reason: allowed ? "listed" : "not_listed", rules: 1 } });

  beforeAll(async () => {
    owner = bearer((await openfief(["login", "--user", "pages", "--data", dir])).stdout.trim());
  });

  it("counts the egress decisions of a window, whenever they were appended", async () => {
    await appendBeside([decision("api.nbp.pl", true), decision("API.nbp.pl", true), decision("static.nbp.pl", false)]);
    at += 2 * HOUR;
    await appendBeside([decision("api.nbp.pl", true)]);
    const summary = (since: number, until: number) => call(started.console, `/api/v1/egress/summary?since=${new Date(since).toISOString()}&until=${new Date(until).toISOString()}&buckets=4`, { headers: owner });
    const r = await summary(at - 3 * HOUR, at + HOUR);
    expect(r.json()).toMatchObject({ allowed: 3, refused: 1, truncated: false });
    expect((r.json() as { buckets: { allowed: number; refused: number }[] }).buckets.map((b) => [b.allowed, b.refused])).toEqual([[0, 0], [2, 1], [0, 0], [1, 0]]);
    expect((await summary(at - HOUR, at + HOUR)).json()).toMatchObject({ allowed: 1, refused: 0 });
  });

  it("shows the chain verified up to its last verified event, and verify-log finds an edit made before it", async () => {
    const first = await call(started.console, "/integrity", { headers: owner });
    expect(first.text).toMatch(/Hash chain <span class="badge good">/);
    const verified = Number(/Every (?:one of the (\d+) events|event up to event (\d+))/.exec(first.text)?.slice(1).find((x) => x !== undefined));
    expect(verified).toBeGreaterThan(1);
    // Someone with the file edits the first event (and puts the guard back): the page does not read it again.
    const db = new Database(storeFile(dir));
    try {
      db.exec("DROP TRIGGER events_no_update");
      db.exec("UPDATE events SET actor = 'mallory' WHERE seq = 1");
      db.exec("CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END");
    } finally {
      db.close();
    }
    await appendBeside([decision("api.nbp.pl", true)]);
    const again = await call(started.console, "/integrity", { headers: owner });
    expect(Number(/Events 1 to (\d+) were verified before/.exec(again.text)?.[1])).toBeGreaterThanOrEqual(verified);
    expect(again.text).toMatch(/Hash chain <span class="badge good">/);
    const full = await spawnOpenfief(["verify-log", "--data", dir]);
    expect(full.code).not.toBe(0);
    expect(full.stdout).toMatch(/the log does NOT hold at event 1: hash does not match/);
  });
});

describe("openfief login", () => {
  it("prints a token the API takes as Bearer", async () => {
    const r = await openfief(["login", "--user", "script", "--ttl", "15m", "--data", dir]);
    expect(r.code).toBe(0);
    const me = await call(started.console, "/api/v1/session", { headers: bearer(r.stdout.trim()) });
    expect(me.json()).toMatchObject({ user: "script", role: "owner" });
  });

  it("prints a viewer's token that may not write", async () => {
    const token = (await openfief(["login", "--role", "viewer", "--user", "vic", "--data", dir])).stdout.trim();
    const r = await call(started.console, "/api/v1/plugins/x/approve", { method: "POST", headers: { ...bearer(token), "if-match": '"1"' } });
    expect([r.status, r.json().code]).toEqual([403, "forbidden"]);
  });

  it("with --link prints a sign-in link to the running console", async () => {
    const r = await openfief(["login", "--link", "--role", "viewer", "--user", "vic", "--json", "--data", dir]);
    const out = JSON.parse(r.stdout) as { url: string; role: string };
    expect(new URL(out.url).origin).toBe(started.console);
    const signedIn = await call(started.console, new URL(out.url).pathname + new URL(out.url).search);
    const me = await call(started.console, "/api/v1/session", { headers: { cookie: cookieOf(signedIn) } });
    expect(me.json()).toMatchObject({ user: "vic", role: "viewer" });
  });

  it.each<[string, string[], number, RegExp]>([
    ["a role there is not", ["--role", "admin"], 2, /role must be owner or viewer/],
    ["a lifetime over a day", ["--ttl", "25h"], 2, /--ttl must be 1s to 24h/],
    ["a user name an actor could not hold", ["--user", "a b"], 2, /a user name is 1 to 64/],
  ])("refuses %s", async (_what, args, code, message) => {
    const r = await openfief(["login", ...args, "--data", dir]);
    expect([r.code, r.stderr]).toEqual([code, expect.stringMatching(message)]);
  });

  it("with --link says so when no up serves the console", async () => {
    const other = mkdtempSync(join(tmpdir(), "openfief-console-cli-none-"));
    try {
      await openfief(["apply", "-f", join(ROOT, "examples", "plugins", "nbp-fx-grant.yaml"), "--data", other]);
      const r = await openfief(["login", "--link", "--data", other]);
      expect([r.code, r.stderr]).toEqual([1, expect.stringMatching(/no openfief up serves the console/)]);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
