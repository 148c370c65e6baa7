/**
 * `npm run bench:egress`: the egress proxy side by side with direct TCP (the limit) and Squid
 * (Debian's `squid`, CONNECT-only, allow-list by `dstdomain -n`) on this machine.
 *
 * Prints, for each: CONNECT handshakes/s and p50/p99 time-to-200 at 1, 16 and 256 concurrent
 * clients; the throughput of a 256 MiB tunnelled transfer; each the median of several rounds and
 * a ratio to Squid. Then the proxy's memory over 100,000 CONNECTs. Figures, not a timed test:
 * every loop is bounded and the run stops by itself.
 *
 * Roles (same file): the parent drives clients; `--role upstream` is the destination server;
 * `--role proxy` is this proxy with every check on (Basic token → caching JWKS review → allow-list
 * → DNS over UDP from a real server, answers cached for their TTL → address check on every CONNECT
 * → decision committed to a SQLite event store while the dial runs → 200), logging one JSON
 * decision line per CONNECT to a file. `BENCH_DNS_TTL` sets the TTL of the DNS answers (default
 * 60 s, so the proxy reuses them for 30 s; 0 makes it ask DNS on every CONNECT).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, chmodSync, existsSync, readFileSync } from "node:fs";
import { connect as netConnect, createServer, Socket, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const SELF = fileURLToPath(import.meta.url);
const HOST = "api.bench.test";
const TRANSFER_BYTES = 256 * 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? "1,16,256").split(",").map(Number);
/** `BENCH_SKIP=transfer,memory` leaves parts out (for profiling one part). */
const SKIP = new Set((process.env.BENCH_SKIP ?? "").split(","));
const CONNECTS_PER_ROUND: Record<number, number> = { 1: 400, 16: 2000, 256: 4000 };
const MEMORY_CONNECTS = Number(process.env.BENCH_MEMORY_CONNECTS ?? 100_000);
const ROUND_DEADLINE_MS = 120_000;
const DNS_TTL = Number(process.env.BENCH_DNS_TTL ?? 60);

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
      if (q !== undefined && q.type === Packet.TYPE.A && q.name.toLowerCase() === HOST) {
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
  process.on("disconnect", () => process.exit(0));
  server.listen(0, "127.0.0.1", () => process.send?.({ port: (server.address() as AddressInfo).port, dnsPort: dnsAddr.udp.port }));
}

async function roleProxy(): Promise<void> {
  const upstreamPort = Number(arg("--upstream"));
  const dir = mkdtempSync(join(tmpdir(), "bench-egress-"));
  const dnsPort = Number(arg("--dns"));
  const [{ pino }, store, egress] = await Promise.all([
    import("pino"),
    import("../src/events/index.js").then((m) => m.openStore({ file: join(dir, "events.db") })),
    import("../src/egress/index.js"),
  ]);
  const { token } = await egress.mintEgressToken(dir, "bench", { ttlSeconds: 3600 });
  const allowLists = new egress.MemoryAllowListSource();
  if (!allowLists.setData({ bench: `${HOST}:${upstreamPort}\n` })) throw new Error("allow-list");
  const logger = pino({}, pino.destination({ dest: join(dir, "decisions.log"), sync: false }));
  const proxy = egress.createEgressProxy({
    reviewer: new egress.CachingTokenReviewer(new egress.JwksTokenReviewer({ jwks: egress.readEmbeddedJwks(dir), issuer: egress.EMBEDDED_ISSUER })),
    allowLists,
    resolver: new egress.DnsResolver({ servers: [`127.0.0.1:${dnsPort}`] }),
    // The checked public answer is mapped to the local upstream (with the production dialer's
    // options): nothing leaves the machine.
    connect: (a) => (a.address === "8.8.4.4" ? egress.dialTcp({ address: "127.0.0.1", family: 4, port: upstreamPort }) : new Socket()),
    recorder: new egress.StoreDecisionRecorder(store),
    logger,
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
    if (m.events === true) process.send?.({ events: store.head() });
  });
  process.on("disconnect", () => {
    void proxy.close().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  process.send?.({ port, token });
}

// ───────────────────────────── helpers ─────────────────────────────

function startChild(role: string, extra: string[] = []): Promise<{ child: ChildProcess; msg: Record<string, unknown> }> {
  const prof = process.env.BENCH_CPU_PROFILE_DIR !== undefined && role === "proxy" ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...prof, "--expose-gc", "--import", "tsx", SELF, "--role", role, ...extra], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
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

function proxyTarget(name: string, port: number, upstreamPort: number, pid: number | undefined, auth?: string): Target {
  const head = `CONNECT ${HOST}:${upstreamPort} HTTP/1.1\r\nHost: ${HOST}:${upstreamPort}\r\n${auth !== undefined ? `Proxy-Authorization: ${auth}\r\n` : ""}\r\n`;
  return { name, ...(pid !== undefined ? { pid } : {}), open: () => connectThrough(port, head) };
}

/** CPU seconds (user + system) a process has used so far, from /proc; NaN when unreadable. */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in USER_HZ (100)
  } catch {
    return Number.NaN;
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[Math.floor((s.length - 1) / 2)] ?? Number.NaN);
}

const failures = new Map<string, number>();

async function handshakes(t: Target, concurrency: number, total: number): Promise<{ perSecond: number; p50: number; p99: number; failed: number; cpuUs: number }> {
  const times: number[] = [];
  const cpu0 = cpuSeconds(t.pid);
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
  return { perSecond: times.length / elapsed, p50: percentile(times, 50), p99: percentile(times, 99), failed, cpuUs };
}

async function transfer(t: Target): Promise<{ mibPerSecond: number; cpuSeconds: number }> {
  const s = await t.open();
  const cpu0 = cpuSeconds(t.pid);
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
  return { mibPerSecond: TRANSFER_BYTES / (1024 * 1024) / seconds, cpuSeconds: cpuSeconds(t.pid) - cpu0 };
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
    "--no-resolv", "--no-hosts", `--host-record=${HOST},8.8.4.4`, "--local=/bench.test/", `--local-ttl=${DNS_TTL}`, "--log-facility=/dev/null",
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
  const role = arg("--role");
  if (role === "upstream") return roleUpstream();
  if (role === "proxy") return roleProxy();

  const progress = (what: string): void => void process.stderr.write(`[bench] ${what}\n`);
  progress("starting upstream");
  const up = await startChild("upstream");
  const upstreamPort = up.msg.port as number;
  progress("starting dnsmasq");
  const dnsmasq = await startDnsmasq();
  process.on("exit", () => dnsmasq?.stop());
  if (dnsmasq !== undefined) await waitForDns(dnsmasq.port);
  progress("starting the proxy");
  const dnsPort = dnsmasq?.port ?? (up.msg.dnsPort as number);
  const px = await startChild("proxy", ["--upstream", String(upstreamPort), "--dns", String(dnsPort)]);
  const proxyPort = px.msg.port as number;
  const token = px.msg.token as string;
  progress("starting squid");
  const squid = await startSquid(upstreamPort);
  process.on("exit", () => squid?.stop());
  if (squid !== undefined) await waitForPort(squid.port);
  progress("measuring");

  const targets: Target[] = [directTarget(upstreamPort)];
  if (squid !== undefined) targets.push(proxyTarget("squid", squid.port, upstreamPort, squid.pid));
  targets.push(proxyTarget("openfief egress", proxyPort, upstreamPort, px.child.pid, `Basic ${Buffer.from(`plugin:${token}`).toString("base64")}`));

  console.log(`egress benchmark: ${ROUNDS} rounds, medians; 2-core machine, noisy. Squid: ${squid === undefined ? "not installed" : "5.x (names from a hosts file)"}; the proxy asks ${dnsmasq === undefined ? "dns2 (JavaScript)" : "dnsmasq"} over UDP, answers with TTL ${DNS_TTL} s (reused for min(TTL, 30 s), every address checked on every CONNECT)`);
  const results: Record<string, Record<string, { perSecond: number; p50: number; p99: number; cpuUs: number }>> = {};
  for (const c of CONCURRENCY) {
    for (const t of targets) {
      if (SKIP.has(t.name)) continue;
      await handshakes(t, Math.min(c, 16), 50); // warm-up
      const rounds = [];
      for (let r = 0; r < ROUNDS; r++) rounds.push(await handshakes(t, c, CONNECTS_PER_ROUND[c] ?? 1000));
      const failed = rounds.reduce((n, x) => n + x.failed, 0);
      (results[t.name] ??= {})[String(c)] = { perSecond: median(rounds.map((x) => x.perSecond)), p50: median(rounds.map((x) => x.p50)), p99: median(rounds.map((x) => x.p99)), cpuUs: median(rounds.map((x) => x.cpuUs)) };
      if (failed > 0) console.log(`  (${t.name} c=${c}: ${failed} failed CONNECTs)`);
    }
  }
  for (const [why, n] of failures) console.log(`  failed ${n}× ${why}`);
  console.log("\nCONNECT handshakes (time to 200; direct TCP = time to connect)");
  console.log("| target | clients | handshakes/s | p50 ms | p99 ms | /s vs squid | proxy CPU µs/CONNECT |");
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const c of CONCURRENCY) {
    for (const t of targets) {
      const r = results[t.name]?.[String(c)];
      const sq = results.squid?.[String(c)];
      if (r === undefined) continue;
      console.log(`| ${t.name} | ${c} | ${r.perSecond.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${sq !== undefined ? (r.perSecond / sq.perSecond).toFixed(2) : "-"} | ${Number.isNaN(r.cpuUs) ? "-" : r.cpuUs.toFixed(0)} |`);
    }
  }

  if (!SKIP.has("transfer")) {
  console.log("\n256 MiB tunnelled transfer");
  console.log("| target | MiB/s | vs direct | vs squid | proxy CPU s |");
  console.log("|---|---:|---:|---:|---:|");
  const tput: Record<string, number> = {};
  const tcpu: Record<string, number> = {};
  for (const t of targets) {
    const rounds = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push(await transfer(t));
    tput[t.name] = median(rounds.map((x) => x.mibPerSecond));
    tcpu[t.name] = median(rounds.map((x) => x.cpuSeconds));
  }
  for (const t of targets) {
    const v = tput[t.name] ?? Number.NaN;
    const c = tcpu[t.name] ?? Number.NaN;
    console.log(`| ${t.name} | ${v.toFixed(0)} | ${(v / (tput["direct TCP"] ?? Number.NaN)).toFixed(2)} | ${tput.squid !== undefined ? (v / tput.squid).toFixed(2) : "-"} | ${Number.isNaN(c) ? "-" : c.toFixed(2)} |`);
  }
  }

  console.log(`\nmemory of the proxy over ${MEMORY_CONNECTS} CONNECTs (64 clients; after GC)`);
  console.log("| CONNECTs | rss MiB | heap MiB |");
  console.log("|---:|---:|---:|");
  const ours = targets[targets.length - 1] as Target;
  const step = Math.max(1, Math.floor(MEMORY_CONNECTS / 10));
  for (let done = 0; done <= MEMORY_CONNECTS && !SKIP.has("memory"); done += step) {
    if (done > 0) await handshakes(ours, 64, step);
    const m = await ask<{ rss: number; heapUsed: number }>(px.child, { mem: true });
    console.log(`| ${done} | ${(m.rss / 2 ** 20).toFixed(1)} | ${(m.heapUsed / 2 ** 20).toFixed(1)} |`);
  }
  const ev = await ask<{ events: number }>(px.child, { events: true });
  console.log(`\ndecisions committed in the proxy's event store: ${ev.events}`);

  squid?.stop();
  dnsmasq?.stop();
  px.child.disconnect();
  up.child.kill();
}

await main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
