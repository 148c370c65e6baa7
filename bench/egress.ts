/**
 * `npm run bench:egress`: the egress proxy side by side with direct TCP (the limit), Squid
 * (Debian's `squid`, CONNECT-only, allow-list by `dstdomain -n`) and a bare `node:net` relay (no
 * checks: the floor of a Node relay) on this machine. See `bench/README.md` for what it prints.
 *
 * Every figure is the median of rounds interleaved across the targets. Figures, not a timed test:
 * every loop is bounded and the run stops by itself; everything stays on 127.0.0.1.
 *
 * Roles (same file): the parent drives clients; `--role upstream` is the destination server (a
 * byte counter, an echo server and a DNS server); `--role relay` the bare relay; `--role proxy`
 * this proxy with every check on (Basic token → caching JWKS review → allow-list → DNS over UDP,
 * answers cached for their TTL → address check on every CONNECT → decision committed by the
 * writer thread while the dial runs → 200; a second one with each commit synced to disk,
 * `synchronous=FULL`, beside it), logging one buffered JSON line per CONNECT to a file;
 * `--role lock` holds the proxy's store's write lock for a while, from another process;
 * `--role embedded` is `openfief up --demo` (the control plane with its console and views, the
 * demo applied), whose embedded proxy lets ecb-fx reach www.ecb.europa.eu:443, which the test DNS
 * answers with a public address that the dialer maps to the upstream.
 *
 * `--store postgres` measures instead the decisions committed to the cluster's one log: two
 * proxies on one PostgreSQL database beside one proxy on SQLite (bench/egress-store.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, chmodSync, existsSync, readFileSync } from "node:fs";
import { connect as netConnect, createServer, Socket, type AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { proxyEnvironment, TRIM_TUNABLE } from "../bin/launch.js";

const SELF = fileURLToPath(import.meta.url);
const HOST = "api.bench.test";
/** The demo's ecb-fx may reach this host (its grant): the embedded proxy's tunnels go there. */
const DEMO_HOST = "www.ecb.europa.eu";
const TRANSFER_BYTES = 256 * 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? "1,16,256").split(",").map(Number);
/** `BENCH_SKIP=transfer,memory` leaves parts out (for profiling one part). */
const SKIP = new Set((process.env.BENCH_SKIP ?? "").split(","));
const CONNECTS_PER_ROUND: Record<number, number> = { 1: 400, 16: 2000, 256: 4000 };
const MEMORY_CONNECTS = Number(process.env.BENCH_MEMORY_CONNECTS ?? 100_000);
const ROUND_DEADLINE_MS = 120_000;
const DNS_TTL = Number(process.env.BENCH_DNS_TTL ?? 60);
const LOCK_HOLD_MS = Number(process.env.BENCH_LOCK_HOLD_MS ?? 3000);
/** glibc's heap trimming off (ADR 0034): freed read buffers stay mapped instead of being faulted in again. */
const MALLOC_TUNABLES = TRIM_TUNABLE;

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

// ───────────────────────────── roles ─────────────────────────────

async function roleUpstream(): Promise<void> {
  // The DNS server the proxy asks lives here, outside the proxy's process, as CoreDNS would.
  const dns2 = (await import("dns2")).default;
  const { Packet } = dns2;
  const dnsServer = dns2.createServer({
    udp: true,
    handle: (req, send) => {
      const res = Packet.createResponseFromRequest(req);
      const q = req.questions[0];
      if (q !== undefined && q.type === Packet.TYPE.A && (q.name.toLowerCase() === HOST || q.name.toLowerCase() === DEMO_HOST)) {
        res.answers.push({ name: q.name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: DNS_TTL, address: "8.8.4.4" } as unknown as (typeof res.answers)[number]);
      }
      send(res);
    },
  });
  const dnsAddr = (await dnsServer.listen({ udp: { port: 0, address: "127.0.0.1" } })) as unknown as { udp: { port: number } };
  // Counts bytes per connection; answers "OK" once a transfer is complete. Handshake-only
  // connections send nothing and are simply held until the client goes.
  const server = createServer((s) => {
    let n = 0;
    s.on("data", (d: Buffer) => {
      n += d.length;
      if (n >= TRANSFER_BYTES) s.end("OK");
    });
    s.on("error", () => s.destroy());
  });
  // Echoes every byte back: the round trips measured while the store's write lock is held.
  const echo = createServer((s) => s.on("data", (d: Buffer) => s.write(d)).on("error", () => s.destroy()));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
  process.on("disconnect", () => process.exit(0));
  server.listen(0, "127.0.0.1", () => process.send?.({ port: (server.address() as AddressInfo).port, echoPort: (echo.address() as AddressInfo).port, dnsPort: dnsAddr.udp.port }));
}

/**
 * The bare relay: CONNECT on `node:net` with no checks at all (no token, no list, no DNS, no
 * record, no log); reads the head up to the blank line and pipes both ways. The floor of a Node
 * relay on this machine.
 */
async function roleRelay(): Promise<void> {
  const upstreamPort = Number(arg("--upstream"));
  const server = createServer((c) => {
    let head = "";
    const onData = (d: Buffer): void => {
      head += d.toString("latin1");
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      c.off("data", onData);
      c.pause();
      const rest = Buffer.from(head.slice(end + 4), "latin1");
      const target = /^CONNECT [^:]+:(\d+) /.exec(head);
      const u = netConnect({ host: "127.0.0.1", port: target?.[1] === undefined ? upstreamPort : Number(target[1]) }, () => {
        c.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        if (rest.length > 0) u.write(rest);
        c.pipe(u);
        u.pipe(c);
      });
      u.on("error", () => c.destroy());
      c.on("close", () => u.destroy());
    };
    c.on("data", onData);
    c.on("error", () => c.destroy());
  });
  process.on("disconnect", () => process.exit(0));
  server.listen(0, "127.0.0.1", () => process.send?.({ port: (server.address() as AddressInfo).port }));
}

async function roleProxy(): Promise<void> {
  const upstreamPort = Number(arg("--upstream"));
  const echoPort = Number(arg("--echo"));
  const dir = mkdtempSync(join(tmpdir(), "bench-egress-"));
  const dnsPort = Number(arg("--dns"));
  const [store, egress] = await Promise.all([
    import("../src/events/index.js").then((m) => m.openStore({ file: join(dir, "events.db") })),
    import("../src/egress/index.js"),
  ]);
  const { token } = await egress.mintEgressToken(dir, "bench", { ttlSeconds: 3600 });
  const allowLists = new egress.MemoryAllowListSource();
  // The codec wants its lines sorted (and unique).
  const lines = [...new Set([`${HOST}:${upstreamPort}`, `${HOST}:${echoPort}`])].sort();
  if (!allowLists.setData({ bench: lines.map((l) => `${l}\n`).join("") })) throw new Error("allow-list");
  // One JSON decision line per CONNECT to a file, buffered (ADR 0033).
  const log = egress.bufferedLog({ dest: join(dir, "decisions.log") });
  // BENCH_RECORDER=inline: the former synchronous append on the event loop, for comparison.
  const recorder = process.env.BENCH_RECORDER === "inline"
    ? new egress.StoreDecisionRecorder(store)
    : await egress.WorkerDecisionRecorder.open({ file: store.location, onCommitted: (events) => store.announce(events), durable: process.env.BENCH_DECISIONS_SYNC === "full" });
  const proxy = egress.createEgressProxy({
    reviewer: new egress.CachingTokenReviewer(new egress.JwksTokenReviewer({ jwks: egress.readEmbeddedJwks(dir), issuer: egress.EMBEDDED_ISSUER })),
    allowLists,
    resolver: new egress.DnsResolver({ servers: [`127.0.0.1:${dnsPort}`] }),
    // The checked public answer is mapped to the local upstream on the CONNECT's port (with the
    // production dialer's options): nothing leaves the machine.
    connect: (a) => (a.address === "8.8.4.4" ? egress.dialTcp({ address: "127.0.0.1", family: 4, port: a.port }) : new Socket()),
    recorder,
    logger: log.logger,
    flushLog: () => log.close(),
    env: {},
    options: { host: "127.0.0.1", port: 0, maxTunnels: 100_000 },
  });
  const { port } = await proxy.listen();
  process.on("message", (m: { mem?: boolean; events?: boolean }) => {
    if (m.mem === true) {
      (globalThis as { gc?: () => void }).gc?.();
      const u = process.memoryUsage();
      process.send?.({ rss: u.rss, heapUsed: u.heapUsed });
    }
    if (m.events === true) void store.head().then((events) => process.send?.({ events, batches: "committed" in recorder ? recorder.committed.batches : null }));
  });
  process.on("disconnect", () => {
    void proxy.close().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  process.send?.({ port, token, store: store.location });
}

/**
 * `openfief up --demo` in this process — the store, the reconcile loop, the plugin host, the console
 * and the views, so the heap is the size of `up`'s — with its embedded proxy's dialer mapping the
 * checked public answer to the upstream. Its environment is what the parent gives it.
 */
async function roleEmbedded(): Promise<void> {
  const upstreamPort = Number(arg("--upstream"));
  const dnsPort = Number(arg("--dns"));
  const dir = mkdtempSync(join(tmpdir(), "bench-embedded-"));
  const [app, compose, egress, { pino }] = await Promise.all([import("../src/app/index.js"), import("../src/compose/index.js"), import("../src/egress/index.js"), import("pino")]);
  const cp = await compose.startControlPlane({
    dataDir: dir,
    logger: pino({ level: "silent" }),
    settings: { ...app.demoSettings(), pluginProxyOrigin: "http://localhost:0", gatewayOrigin: "http://localhost:0" },
    egress: { port: 0, dnsServers: [`127.0.0.1:${dnsPort}`], connect: (a) => (a.address === "8.8.4.4" ? egress.dialTcp({ address: "127.0.0.1", family: 4, port: upstreamPort }) : new Socket()) },
    views: {},
    server: { host: "127.0.0.1", port: 0 },
  });
  await app.applyDemoFolder(cp.runtime.store, "plugins");
  await cp.pass();
  const { token } = await egress.mintEgressToken(dir, "ecb-fx", { ttlSeconds: 3600 });
  process.on("disconnect", () => {
    void cp.stop().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  process.send?.({ port: cp.egress?.port, token });
}

/** Holds the store's write lock (BEGIN IMMEDIATE) for `--hold` ms, from another process. */
async function roleLock(): Promise<void> {
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(arg("--file") ?? "");
  db.pragma("busy_timeout = 10000");
  db.exec("BEGIN IMMEDIATE");
  process.send?.({ locked: true });
  await new Promise((r) => setTimeout(r, Number(arg("--hold"))));
  db.exec("COMMIT");
  db.close();
  process.send?.({ released: true });
  process.disconnect?.();
}

// ───────────────────────────── helpers ─────────────────────────────

function startChild(role: string, extra: string[] = [], env: Record<string, string> = {}, script = SELF): Promise<{ child: ChildProcess; msg: Record<string, unknown> }> {
  const prof = process.env.BENCH_CPU_PROFILE_DIR !== undefined && role === "proxy" ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...prof, "--expose-gc", "--import", "tsx", script, "--role", role, ...extra], { stdio: ["ignore", "inherit", "inherit", "ipc"], env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    child.once("message", (msg) => resolve({ child, msg: msg as Record<string, unknown> }));
    child.once("exit", (code) => reject(new Error(`${role} exited ${code}`)));
  });
}

function ask<T>(child: ChildProcess, msg: object): Promise<T> {
  return new Promise((resolve) => {
    child.once("message", (m) => resolve(m as T));
    child.send(msg);
  });
}

interface Target {
  name: string;
  /** The process in the middle (the proxy), whose CPU time is read from /proc. */
  pid?: number;
  /** Whether the main thread's own CPU time is worth a column (a Node process with other threads). */
  node?: boolean;
  /** Opens a tunnel (or a direct connection) and resolves with the socket once usable. */
  open(): Promise<Socket>;
}

function connectThrough(port: number, head: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = netConnect({ host: "127.0.0.1", port });
    s.setNoDelay(true);
    let buf = "";
    const onData = (d: Buffer): void => {
      buf += d.toString("latin1");
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      s.off("data", onData);
      if (!buf.startsWith("HTTP/1.1 200") && !buf.startsWith("HTTP/1.0 200")) {
        s.destroy();
        reject(new Error(`CONNECT refused: ${buf.split("\r\n")[0] ?? ""} ${buf.slice(buf.indexOf("\r\n\r\n") + 4).trim()}`));
        return;
      }
      resolve(s);
    };
    s.on("data", onData);
    s.once("error", reject);
    s.once("connect", () => s.write(head));
  });
}

function directTarget(upstreamPort: number): Target {
  return {
    name: "direct TCP",
    open: () => new Promise((resolve, reject) => {
      const s = netConnect({ host: "127.0.0.1", port: upstreamPort });
      s.once("connect", () => resolve(s));
      s.once("error", reject);
    }),
  };
}

function proxyTarget(name: string, port: number, upstreamPort: number, pid: number | undefined, auth?: string, node = false, target = `${HOST}:${upstreamPort}`): Target {
  const head = `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth !== undefined ? `Proxy-Authorization: ${auth}\r\n` : ""}\r\n`;
  return { name, node, ...(pid !== undefined ? { pid } : {}), open: () => connectThrough(port, head) };
}

/**
 * With another process holding the store's write lock for `holdMs`: the worst echo round trip of
 * `tunnels` open tunnels (each pinging in a loop), and what CONNECTs made meanwhile got.
 */
async function lockHeld(port: number, echoPort: number, auth: string, storeFile: string, holdMs: number, tunnels = 8): Promise<{ worstMs: number; worstOutsideMs: number; echoes: number; connects: string[] }> {
  const open = await Promise.all(Array.from({ length: tunnels }, () => proxyTarget("echo", port, echoPort, undefined, auth).open()));
  let held = false;
  let stop = false;
  let worstMs = 0;
  let worstOutsideMs = 0;
  let echoes = 0;
  const ping = async (s: Socket): Promise<void> => {
    while (!stop) {
      const t0 = performance.now();
      const wasHeld = held;
      await new Promise<void>((resolve) => {
        s.once("data", () => resolve());
        s.write("ping-0123456789\n");
      });
      const ms = performance.now() - t0;
      if (wasHeld || held) {
        worstMs = Math.max(worstMs, ms);
        echoes++;
      } else worstOutsideMs = Math.max(worstOutsideMs, ms);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const loops = open.map(ping);
  await new Promise((r) => setTimeout(r, 300));
  const lock = spawn(process.execPath, ["--import", "tsx", SELF, "--role", "lock", "--file", storeFile, "--hold", String(holdMs)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const released = new Promise<void>((resolve) => lock.on("message", (m: { released?: boolean }) => m.released === true && resolve()));
  await new Promise<void>((resolve) => lock.on("message", (m: { locked?: boolean }) => m.locked === true && resolve()));
  held = true;
  const connects: string[] = [];
  const during = (async () => {
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const answer = await proxyTarget("new", port, echoPort, undefined, auth).open().then((s) => {
        s.destroy();
        return "200";
      }, (err: unknown) => (err instanceof Error ? err.message.replace(/^CONNECT refused: HTTP\/1\.1 /, "").slice(0, 28) : "error"));
      connects.push(`${answer} after ${(performance.now() - t0).toFixed(0)} ms`);
    }
  })();
  await released;
  held = false;
  await during;
  await new Promise((r) => setTimeout(r, 300));
  stop = true;
  await Promise.all(loops);
  for (const s of open) s.destroy();
  return { worstMs, worstOutsideMs, echoes, connects };
}

/** user + system CPU seconds and minor page faults, from a /proc stat line. */
function statOf(path: string): { cpu: number; minflt: number } {
  try {
    const stat = readFileSync(path, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { cpu: (Number(fields[11]) + Number(fields[12])) / 100, minflt: Number(fields[7]) }; // utime + stime in USER_HZ (100)
  } catch {
    return { cpu: Number.NaN, minflt: Number.NaN };
  }
}

/** CPU seconds a process has used so far, all threads; NaN when unreadable. */
function cpuSeconds(pid: number | undefined): number {
  return pid === undefined ? Number.NaN : statOf(`/proc/${pid}/stat`).cpu;
}

/** CPU seconds of a process's main thread (its event loop: the thread whose id is the pid). */
function loopCpuSeconds(pid: number | undefined): number {
  return pid === undefined ? Number.NaN : statOf(`/proc/${pid}/task/${pid}/stat`).cpu;
}

/** Minor page faults of a process so far, all threads. */
function pageFaults(pid: number | undefined): number {
  return pid === undefined ? Number.NaN : statOf(`/proc/${pid}/stat`).minflt;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** The machine's load averages (1, 5, 15 min), printed beside every table: other work on it moves every figure. */
function load(): string {
  return `load average ${loadavg().map((l) => l.toFixed(2)).join(" / ")}`;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[Math.floor((s.length - 1) / 2)] ?? Number.NaN);
}

const failures = new Map<string, number>();

interface Handshakes { perSecond: number; p50: number; p99: number; failed: number; cpuUs: number; loopUs: number }

async function handshakes(t: Target, concurrency: number, total: number): Promise<Handshakes> {
  const times: number[] = [];
  const cpu0 = cpuSeconds(t.pid);
  const loop0 = loopCpuSeconds(t.pid);
  let next = 0;
  let failed = 0;
  const deadline = performance.now() + ROUND_DEADLINE_MS;
  const start = performance.now();
  const worker = async (): Promise<void> => {
    while (next < total && performance.now() < deadline) {
      next++;
      const t0 = performance.now();
      try {
        const s = await t.open();
        times.push(performance.now() - t0);
        s.destroy();
      } catch (err) {
        failed++;
        const why = `${t.name}: ${err instanceof Error ? err.message : String(err)}`;
        failures.set(why, (failures.get(why) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - start) / 1000;
  times.sort((a, b) => a - b);
  const cpuUs = ((cpuSeconds(t.pid) - cpu0) * 1e6) / Math.max(1, times.length);
  const loopUs = ((loopCpuSeconds(t.pid) - loop0) * 1e6) / Math.max(1, times.length);
  return { perSecond: times.length / elapsed, p50: percentile(times, 50), p99: percentile(times, 99), failed, cpuUs, loopUs };
}

async function transfer(t: Target): Promise<{ mibPerSecond: number; cpuSeconds: number; faults: number }> {
  const s = await t.open();
  const cpu0 = cpuSeconds(t.pid);
  const faults0 = pageFaults(t.pid);
  const chunk = Buffer.alloc(256 * 1024, 0x61);
  const t0 = performance.now();
  const done = new Promise<void>((resolve, reject) => {
    s.on("data", (d: Buffer) => {
      if (d.toString().includes("OK")) resolve();
    });
    s.on("error", reject);
  });
  let sent = 0;
  while (sent < TRANSFER_BYTES) {
    sent += chunk.length;
    if (!s.write(chunk)) await new Promise((r) => s.once("drain", r));
  }
  await done;
  const seconds = (performance.now() - t0) / 1000;
  s.destroy();
  return { mibPerSecond: TRANSFER_BYTES / (1024 * 1024) / seconds, cpuSeconds: cpuSeconds(t.pid) - cpu0, faults: pageFaults(t.pid) - faults0 };
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

async function startSquid(upstreamPort: number): Promise<{ stop: () => void; port: number; pid: number | undefined } | undefined> {
  if (!existsSync("/usr/sbin/squid")) return undefined;
  const dir = mkdtempSync(join(tmpdir(), "bench-squid-"));
  chmodSync(dir, 0o777);
  const port = await freePort();
  writeFileSync(join(dir, "hosts"), `127.0.0.1 ${HOST}\n`);
  writeFileSync(join(dir, "squid.conf"), [
    `http_port 127.0.0.1:${port}`,
    "acl CONNECT method CONNECT",
    // -n: never reverse-resolve an IP target to match a name.
    `acl allowed dstdomain -n ${HOST}`,
    `acl allowed_port port ${upstreamPort}`,
    "http_access allow CONNECT allowed allowed_port",
    "http_access deny all",
    `hosts_file ${join(dir, "hosts")}`,
    "cache deny all",
    "cache_mem 8 MB",
    "access_log none",
    `cache_log ${join(dir, "cache.log")}`,
    `pid_filename ${join(dir, "squid.pid")}`,
    `coredump_dir ${dir}`,
    "shutdown_lifetime 0 seconds",
    "max_filedescriptors 16384",
    "dns_v4_first on",
    "",
  ].join("\n"));
  const child = spawn("/usr/sbin/squid", ["-N", "-f", join(dir, "squid.conf")], { stdio: "ignore" });
  return {
    port,
    pid: child.pid,
    stop: () => {
      if (child.exitCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A native DNS server for the proxy to ask (Debian's dnsmasq, as fast as a cluster's CoreDNS);
 * without it the JavaScript dns2 server in the upstream process answers, and limits the figures.
 */
async function startDnsmasq(): Promise<{ stop: () => void; port: number } | undefined> {
  if (!existsSync("/usr/sbin/dnsmasq")) return undefined;
  const port = await freePort();
  const child = spawn("/usr/sbin/dnsmasq", [
    "-C", "/dev/null", "--keep-in-foreground", `--port=${port}`, "--listen-address=127.0.0.1", "--bind-interfaces",
    "--no-resolv", "--no-hosts", `--host-record=${HOST},8.8.4.4`, `--host-record=${DEMO_HOST},8.8.4.4`, "--local=/bench.test/", `--local-ttl=${DNS_TTL}`, "--log-facility=/dev/null",
  ], { stdio: "ignore" });
  return { port, stop: () => void (child.exitCode === null && child.kill("SIGKILL")) };
}

async function waitForDns(port: number): Promise<void> {
  const { promises } = await import("node:dns");
  const r = new promises.Resolver({ timeout: 200, tries: 1 });
  r.setServers([`127.0.0.1:${port}`]);
  for (let i = 0; i < 50; i++) {
    if ((await r.resolve4(HOST).catch(() => [])).length > 0) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error("dnsmasq does not answer");
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = netConnect({ host: "127.0.0.1", port });
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on ${port}`);
}

// ───────────────────────────── main ─────────────────────────────

async function main(): Promise<void> {
  // `--store postgres`: the decisions committed to PostgreSQL, beside SQLite (bench/egress-store.ts).
  if (arg("--store") === "postgres") return (await import("./egress-store.js")).main();
  const role = arg("--role");
  if (role === "upstream") return roleUpstream();
  if (role === "proxy") return roleProxy();
  if (role === "relay") return roleRelay();
  if (role === "lock") return roleLock();
  if (role === "embedded") return roleEmbedded();

  const progress = (what: string): void => void process.stderr.write(`[bench] ${what}\n`);
  progress("starting upstream");
  const up = await startChild("upstream");
  const upstreamPort = up.msg.port as number;
  const echoPort = up.msg.echoPort as number;
  progress("starting dnsmasq");
  const dnsmasq = await startDnsmasq();
  process.on("exit", () => dnsmasq?.stop());
  if (dnsmasq !== undefined) await waitForDns(dnsmasq.port);
  progress("starting the proxies and the bare relay");
  const dnsPort = dnsmasq?.port ?? (up.msg.dnsPort as number);
  const proxyArgs = ["--upstream", String(upstreamPort), "--echo", String(echoPort), "--dns", String(dnsPort)];
  const px = await startChild("proxy", proxyArgs);
  const proxyPort = px.msg.port as number;
  const token = px.msg.token as string;
  const auth = `Basic ${Buffer.from(`plugin:${token}`).toString("base64")}`;
  const relay = await startChild("relay", ["--upstream", String(upstreamPort)]);
  progress("starting squid");
  const squid = await startSquid(upstreamPort);
  process.on("exit", () => squid?.stop());
  if (squid !== undefined) await waitForPort(squid.port);
  progress("measuring");

  const ours = proxyTarget("openfief egress", proxyPort, upstreamPort, px.child.pid, auth, true);
  const targets: Target[] = [directTarget(upstreamPort)];
  if (squid !== undefined) targets.push(proxyTarget("squid", squid.port, upstreamPort, squid.pid));
  targets.push(proxyTarget("bare node:net relay", relay.msg.port as number, upstreamPort, relay.child.pid));
  targets.push(ours);
  // The same proxy with each decision batch synced before its 200 (synchronous=FULL), in the same
  // rounds: what durability across a power loss would cost the commit path (docs/adr/0096).
  const durable = await startChild("proxy", proxyArgs, { BENCH_DECISIONS_SYNC: "full" });
  targets.push(proxyTarget("openfief egress, decisions synced (FULL)", durable.msg.port as number, upstreamPort, durable.child.pid, `Basic ${Buffer.from(`plugin:${durable.msg.token as string}`).toString("base64")}`, true));
  // BENCH_BASELINE=<another checkout>: its proxy beside this one, in the same interleaved rounds
  // (a before/after that sees the same load).
  const baselineDir = process.env.BENCH_BASELINE;
  const baseline = baselineDir !== undefined && baselineDir !== "" ? await startChild("proxy", proxyArgs, {}, join(baselineDir, "bench", "egress.ts")) : undefined;
  if (baseline !== undefined) {
    const baseAuth = `Basic ${Buffer.from(`plugin:${baseline.msg.token as string}`).toString("base64")}`;
    targets.push(proxyTarget("openfief egress, baseline", baseline.msg.port as number, upstreamPort, baseline.child.pid, baseAuth, true));
  }
  const active = targets.filter((t) => !SKIP.has(t.name));

  console.log(`egress benchmark (${new Date().toISOString()}, ${load()}): ${ROUNDS} interleaved rounds, medians; 2-core machine, noisy. Squid: ${squid === undefined ? "not installed" : "5.x (names from a hosts file)"}; the proxy asks ${dnsmasq === undefined ? "dns2 (JavaScript)" : "dnsmasq"} over UDP, answers with TTL ${DNS_TTL} s (reused for min(TTL, 30 s), every address checked on every CONNECT); decisions committed by ${process.env.BENCH_RECORDER === "inline" ? "the event loop (BENCH_RECORDER=inline)" : "the writer thread"}`);
  const results: Record<string, Record<string, Handshakes>> = {};
  for (const c of CONCURRENCY) {
    for (const t of active) await handshakes(t, Math.min(c, 16), 50); // warm-up
    // Rounds interleaved across targets, so that a burst of load elsewhere on the machine falls on all of them.
    const rounds: Record<string, Handshakes[]> = {};
    for (let r = 0; r < ROUNDS; r++) for (const t of active) (rounds[t.name] ??= []).push(await handshakes(t, c, CONNECTS_PER_ROUND[c] ?? 1000));
    for (const t of active) {
      const rs = rounds[t.name] ?? [];
      const failed = rs.reduce((n, x) => n + x.failed, 0);
      (results[t.name] ??= {})[String(c)] = {
        perSecond: median(rs.map((x) => x.perSecond)), p50: median(rs.map((x) => x.p50)), p99: median(rs.map((x) => x.p99)),
        cpuUs: median(rs.map((x) => x.cpuUs)), loopUs: median(rs.map((x) => x.loopUs)), failed,
      };
      if (failed > 0) console.log(`  (${t.name} c=${c}: ${failed} failed CONNECTs)`);
    }
  }
  for (const [why, n] of failures) console.log(`  failed ${n}× ${why}`);
  console.log(`\nCONNECT handshakes (time to 200; direct TCP = time to connect); CPU of the process in the middle per CONNECT; ${load()} at the end`);
  console.log("| target | clients | handshakes/s | p50 ms | p99 ms | /s vs squid | CPU µs/CONNECT, all threads | of which event loop |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const c of CONCURRENCY) {
    for (const t of active) {
      const r = results[t.name]?.[String(c)];
      const sq = results.squid?.[String(c)];
      if (r === undefined) continue;
      const cpu = Number.isNaN(r.cpuUs) ? "-" : r.cpuUs.toFixed(0);
      const loop = t.node === true && !Number.isNaN(r.loopUs) ? r.loopUs.toFixed(0) : "-";
      console.log(`| ${t.name} | ${c} | ${r.perSecond.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${sq !== undefined ? (r.perSecond / sq.perSecond).toFixed(2) : "-"} | ${cpu} | ${loop} |`);
    }
  }

  if (!SKIP.has("transfer")) {
    // The same proxy with glibc's heap trimming off (ADR 0034): the page faults of the tunnel.
    const untrimmed = await startChild("proxy", proxyArgs, { GLIBC_TUNABLES: MALLOC_TUNABLES });
    // `openfief up`'s embedded proxy, in the environment bin/openfief.js starts `up` with (ADR 0098),
    // and, for comparison, in glibc's default one (what `up` ran with before).
    const embeddedArgs = ["--upstream", String(upstreamPort), "--dns", String(dnsPort)];
    const embedded = await startChild("embedded", embeddedArgs, { GLIBC_TUNABLES: proxyEnvironment(["up"], { ...process.env, GLIBC_TUNABLES: "" })?.GLIBC_TUNABLES ?? "" });
    const embeddedDefault = await startChild("embedded", embeddedArgs, { GLIBC_TUNABLES: "" });
    const basic = (msg: Record<string, unknown>): string => `Basic ${Buffer.from(`plugin:${msg.token as string}`).toString("base64")}`;
    const tt: Target[] = [
      ...active,
      proxyTarget("openfief egress, GLIBC_TUNABLES trim off (the cluster's setting)", untrimmed.msg.port as number, upstreamPort, untrimmed.child.pid, basic(untrimmed.msg), true),
      proxyTarget("openfief up, embedded proxy (as bin/openfief.js starts it)", embedded.msg.port as number, upstreamPort, embedded.child.pid, basic(embedded.msg), true, `${DEMO_HOST}:443`),
      proxyTarget("openfief up, embedded proxy, glibc's default", embeddedDefault.msg.port as number, upstreamPort, embeddedDefault.child.pid, basic(embeddedDefault.msg), true, `${DEMO_HOST}:443`),
    ];
    console.log(`\n256 MiB tunnelled transfer (client to upstream); ${load()} at the start`);
    console.log("| target | MiB/s | vs direct | vs squid | CPU s in the middle | minor page faults |");
    console.log("|---|---:|---:|---:|---:|---:|");
    const rounds: Record<string, { mibPerSecond: number; cpuSeconds: number; faults: number }[]> = {};
    for (let r = 0; r < ROUNDS; r++) for (const t of tt) (rounds[t.name] ??= []).push(await transfer(t));
    const tput = (name: string): number => median((rounds[name] ?? []).map((x) => x.mibPerSecond));
    for (const t of tt) {
      const rs = rounds[t.name] ?? [];
      const v = tput(t.name);
      const c = median(rs.map((x) => x.cpuSeconds));
      const f = median(rs.map((x) => x.faults));
      console.log(`| ${t.name} | ${v.toFixed(0)} | ${(v / tput("direct TCP")).toFixed(2)} | ${rounds.squid !== undefined ? (v / tput("squid")).toFixed(2) : "-"} | ${Number.isNaN(c) ? "-" : c.toFixed(2)} | ${Number.isNaN(f) ? "-" : f.toFixed(0)} |`);
    }
    untrimmed.child.disconnect();
    embedded.child.disconnect();
    embeddedDefault.child.disconnect();
  }

  if (!SKIP.has("lock")) {
    console.log(`\nwhile another process holds the store's write lock for ${LOCK_HOLD_MS / 1000} s: 8 open tunnels echo 16 bytes in a loop; 3 new CONNECTs are made one after another; ${load()} at the start`);
    console.log("| recorder | worst round trip while held | worst round trip otherwise | echoes while held | the new CONNECTs |");
    console.log("|---|---:|---:|---:|---|");
    const held = await lockHeld(proxyPort, echoPort, auth, px.msg.store as string, LOCK_HOLD_MS);
    console.log(`| writer thread | ${held.worstMs.toFixed(1)} ms | ${held.worstOutsideMs.toFixed(1)} ms | ${held.echoes} | ${held.connects.join("; ")} |`);
    if (!SKIP.has("inline")) {
      const inline = await startChild("proxy", proxyArgs, { BENCH_RECORDER: "inline" });
      const inlineAuth = `Basic ${Buffer.from(`plugin:${inline.msg.token as string}`).toString("base64")}`;
      const before = await lockHeld(inline.msg.port as number, echoPort, inlineAuth, inline.msg.store as string, LOCK_HOLD_MS);
      console.log(`| on the event loop (before) | ${before.worstMs.toFixed(1)} ms | ${before.worstOutsideMs.toFixed(1)} ms | ${before.echoes} | ${before.connects.join("; ")} |`);
      inline.child.disconnect();
    }
  }

  if (!SKIP.has("memory")) {
    console.log(`\nmemory of the proxy over ${MEMORY_CONNECTS} CONNECTs (64 clients; after GC); ${load()} at the start`);
    console.log("| CONNECTs | rss MiB | heap MiB |");
    console.log("|---:|---:|---:|");
    const step = Math.max(1, Math.floor(MEMORY_CONNECTS / 10));
    for (let done = 0; done <= MEMORY_CONNECTS; done += step) {
      if (done > 0) await handshakes(ours, 64, step);
      const m = await ask<{ rss: number; heapUsed: number }>(px.child, { mem: true });
      console.log(`| ${done} | ${(m.rss / 2 ** 20).toFixed(1)} | ${(m.heapUsed / 2 ** 20).toFixed(1)} |`);
    }
  }
  const ev = await ask<{ events: number; batches: number | null }>(px.child, { events: true });
  const batches = ev.batches === null ? "" : ` in ${ev.batches} commits (${(ev.events / Math.max(1, ev.batches)).toFixed(1)} a commit)`;
  console.log(`\ndecisions committed in the proxy's event store: ${ev.events}${batches}; ${load()}`);
  if (baseline !== undefined) {
    const bv = await ask<{ events: number; batches: number | null }>(baseline.child, { events: true });
    console.log(`the baseline's: ${bv.events}${bv.batches === null ? "" : ` in ${bv.batches} commits (${(bv.events / Math.max(1, bv.batches)).toFixed(1)} a commit)`}`);
  }

  squid?.stop();
  dnsmasq?.stop();
  px.child.disconnect();
  durable.child.disconnect();
  baseline?.child.disconnect();
  relay.child.disconnect();
  up.child.kill();
}

await main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
