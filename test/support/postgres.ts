/**
 * A real PostgreSQL for tests: Debian's `postgresql` (15), a new cluster made by `initdb` in a
 * temporary folder and started by `pg_ctl` on 127.0.0.1 with a free port and its Unix socket in that
 * folder. Installed with apt-get when missing (tests and CI run as root). As root, the server runs
 * as the `postgres` user, since `initdb` and `pg_ctl` refuse to run as root. Stopped, and its folder
 * removed, by `stop()`.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

export interface TestPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`: the superuser, over TCP, no password. */
  readonly url: string;
  readonly port: number;
  /** The URL of another database on the same server, as `user`. */
  urlFor(database: string, user?: string, password?: string): string;
  /** Runs SQL as the superuser through psql (for set-up: roles, databases). */
  psql(sql: string, database?: string): string;
  /** Creates an empty database owned by the superuser and returns its name. */
  createDatabase(name?: string): string;
  /** Stops the server (`pg_ctl stop -m fast`) and keeps its folder, for {@link resume}. */
  halt(): void;
  /** Starts a halted server again, on the same port, with the same data. */
  resume(): void;
  stop(): Promise<void>;
}

const PG_ROOT = "/usr/lib/postgresql";

/** The folder of the newest installed server's binaries, or undefined. */
function findBinDir(): string | undefined {
  if (!existsSync(PG_ROOT)) return undefined;
  const versions = readdirSync(PG_ROOT)
    .filter((v) => existsSync(join(PG_ROOT, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(PG_ROOT, versions[0], "bin");
}

/** Installs Debian's postgresql when it is missing and returns the folder of its binaries. */
export function ensurePostgresInstalled(): string {
  const found = findBinDir();
  if (found !== undefined) return found;
  if (typeof process.getuid === "function" && process.getuid() !== 0) {
    throw new Error("PostgreSQL is missing; install it with: apt-get install -y postgresql");
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  execFileSync("apt-get", ["update"], { stdio: "ignore", env });
  execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "postgresql"], { stdio: "ignore", env });
  const installed = findBinDir();
  if (installed === undefined) throw new Error(`apt-get did not install PostgreSQL under ${PG_ROOT}`);
  return installed;
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

function postgresIds(): { uid: number; gid: number } {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("postgres:"));
  const fields = line?.split(":");
  if (fields === undefined || fields.length < 4) throw new Error("no postgres user in /etc/passwd");
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

/** Runs a server binary, as the postgres user when we are root; throws with its output on failure. */
function run(bin: string, args: string[]): string {
  const [cmd, argv] = isRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  const result = spawnSync(cmd, argv, { encoding: "utf8", timeout: 60_000 });
  if (result.status !== 0) {
    throw new Error(`${bin} ${args.join(" ")} failed (${result.status ?? result.signal}): ${result.stderr}${result.stdout}`);
  }
  return result.stdout;
}

export interface StartOptions {
  /** Extra server settings (`-c name=value`), e.g. `{ fsync: "off" }` for speed where durability is not under test. */
  readonly settings?: Readonly<Record<string, string>>;
}

/** Starts a PostgreSQL server on 127.0.0.1; call `stop()` when done. */
export async function startPostgres(options: StartOptions = {}): Promise<TestPostgres> {
  const bin = ensurePostgresInstalled();
  const dir = mkdtempSync(join(tmpdir(), "openfief-pg-"));
  if (isRoot) {
    const { uid, gid } = postgresIds();
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  const data = join(dir, "data");
  run(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"]);
  const port = await freePort();
  const settings = { listen_addresses: "127.0.0.1", port: String(port), unix_socket_directories: dir, max_connections: "200", ...options.settings };
  const serverOptions = Object.entries(settings)
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(" ");
  run(join(bin, "pg_ctl"), ["-D", data, "-l", join(dir, "server.log"), "-o", serverOptions, "-w", "-t", "60", "start"]);
  const psqlBin = join(bin, "psql");
  const urlFor = (database: string, user = "postgres", password?: string): string =>
    `postgres://${encodeURIComponent(user)}${password === undefined ? "" : `:${encodeURIComponent(password)}`}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  let counter = 0;
  const psql = (sql: string, database = "postgres"): string =>
    run(psqlBin, ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", database, "-At", "-c", sql]);
  let stopped = false;
  return {
    url: urlFor("postgres"),
    port,
    urlFor,
    psql,
    createDatabase(name?: string): string {
      const db = name ?? `t${process.pid}_${++counter}`;
      psql(`CREATE DATABASE "${db}"`);
      return db;
    },
    halt(): void {
      run(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"]);
    },
    resume(): void {
      run(join(bin, "pg_ctl"), ["-D", data, "-l", join(dir, "server.log"), "-o", serverOptions, "-w", "-t", "60", "start"]);
    },
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      try {
        // A halted server is stopped already.
        if (existsSync(join(data, "postmaster.pid"))) run(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        // A server that made a database per test leaves tens of thousands of files: removing them
        // took most of a minute on a loaded machine, inside the suite's afterAll. A process of its
        // own removes them while the next suite runs.
        spawn("rm", ["-rf", dir], { detached: true, stdio: "ignore" }).unref();
      }
    },
  };
}
