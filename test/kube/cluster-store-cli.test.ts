/**
 * The cluster's processes take the one log's URL from a Secret (a mounted file or a variable), as
 * real child processes from the bundle, against the fake API server and a real PostgreSQL:
 * `openfief egress` records each decision there as its replica (`egress-proxy/<id>`), the plugin
 * host starts on it without a volume, and none of them prints the URL's password — nor does a
 * refusal to start.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresLog } from "../../src/events/index.js";
import { ALLOWLIST_CONFIGMAP, NAMESPACE } from "../../src/plugins/index.js";
import { BIN, BUNDLE_ENV, freshBundle, ROOT } from "../e2e/support.js";
import { startDnsServer, type TestDnsServer } from "../egress/support/dns-server.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";
import { FakeApiServer } from "./fake-apiserver.js";

const PASSWORD = "hunter2-s3cret";
let server: FakeApiServer;
let pg: TestPostgres;
let dns: TestDnsServer;
let dir: string;
let url: string;
let urlFile: string;

beforeAll(freshBundle, 180_000);

beforeAll(async () => {
  pg = await startPostgres({ settings: { fsync: "off" } });
  const db = pg.createDatabase("cluster");
  // The schema made by its owner, as `openfief store init` does; the server trusts local
  // connections, so the password is only carried, which is what must never be shown.
  await (await openPostgresLog({ url: pg.urlFor(db) })).close();
  url = pg.urlFor(db, "postgres", PASSWORD);
  server = await FakeApiServer.start();
  server.put({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "plugin-alpha", namespace: NAMESPACE } });
  server.put({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: ALLOWLIST_CONFIGMAP, namespace: NAMESPACE }, data: { alpha: "api.example.com:443\n" } });
  server.tokenReviewer = (token) => {
    const who = server.issuedTokens.get(token);
    return who === undefined ? { authenticated: false } : { authenticated: true, user: { username: who.user, groups: who.groups }, audiences: ["openfief-egress"] };
  };
  dns = await startDnsServer({ "api.example.com": { kind: "answer", addresses: ["127.0.0.1"] } });
  dir = await mkdtemp(join(tmpdir(), "openfief-cluster-store-"));
  await writeFile(join(dir, "kubeconfig"), server.kubeConfig("cluster-token").exportConfig());
  pg.createDatabase("bare");
  urlFile = join(dir, "store-url");
  // As a Secret's key is mounted: the URL and a newline.
  await writeFile(urlFile, `${url}\n`, { mode: 0o600 });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await dns?.close();
  await pg?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
}, 60_000);

interface Child {
  readonly child: ChildProcessWithoutNullStreams;
  readonly out: () => string;
  waitFor(pattern: RegExp): Promise<string>;
  stop(): Promise<number | null>;
}

function start(args: readonly string[], env: Readonly<Record<string, string>> = {}): Child {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...BUNDLE_ENV, OPENFIEF_LOG_LEVEL: "info", ...env } });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const closed = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return {
    child,
    out: () => out,
    waitFor: async (pattern) => {
      for (let i = 0; i < 1200; i++) {
        const m = pattern.exec(out);
        if (m !== null) return m[0];
        if (child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`no ${String(pattern)}: ${out}`);
    },
    stop: () => {
      child.kill("SIGTERM");
      return closed;
    },
  };
}

/** A CONNECT with a token the fake API server issued for the plugin's ServiceAccount; the answer's status. */
async function connectAs(port: number, target: string): Promise<number> {
  const res = await fetch(`${server.url}/api/v1/namespaces/${NAMESPACE}/serviceaccounts/plugin-alpha/token`, {
    method: "POST", headers: { "content-type": "application/json", authorization: "Bearer cluster-token" },
    body: JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { audiences: ["openfief-egress"], expirationSeconds: 600 } }),
  });
  const token = ((await res.json()) as { status: { token: string } }).status.token;
  return new Promise((resolve, reject) => {
    const s = netConnect({ host: "127.0.0.1", port });
    let head = "";
    s.on("connect", () => s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Basic ${Buffer.from(`plugin:${token}`).toString("base64")}\r\n\r\n`));
    s.on("data", (d: Buffer) => {
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      s.destroy();
      resolve(Number(head.split(" ")[1]));
    });
    s.on("error", reject);
  });
}

describe("the cluster's processes on one PostgreSQL log from a Secret", () => {
  it("openfief egress records each decision there as its replica, reading the URL from a mounted file", async () => {
    const proxy = start(["egress", "--kubeconfig", join(dir, "kubeconfig"), "--listen", "127.0.0.1:0", "--dns-server", dns.server, "--store-file", urlFile, "--identity", "egress-0"]);
    try {
      await proxy.waitFor(/recording every decision in the event log/);
      const line = await proxy.waitFor(/[^\n]*egress proxy listening[^\n]*/);
      const port = Number(/"port":(\d+)/.exec(line)?.[1]);
      // The test's DNS answers a loopback address, which the proxy refuses: a decision all the same.
      expect(await connectAs(port, "api.example.com:443")).not.toBe(200);
      expect(await connectAs(port, "unlisted.example.com:443")).not.toBe(200);
    } finally {
      expect(await proxy.stop()).toBe(0);
    }
    const log = await openPostgresLog({ url, migrate: false });
    try {
      const decisions = await log.read({ stream: "egress/alpha", type: "egress.decision" });
      expect(decisions.map((e) => [e.actor, e.data.host])).toEqual([["egress-proxy/egress-0", "api.example.com"], ["egress-proxy/egress-0", "unlisted.example.com"]]);
    } finally {
      await log.close();
    }
    expect(proxy.out()).toContain("postgres://postgres@127.0.0.1");
    expect(proxy.out()).not.toContain(PASSWORD);
  }, 90_000);

  it("openfief plugin-host starts on the log named by OPENFIEF_STORE, with no folder of its own", async () => {
    const host = start(["plugin-host", "--kubeconfig", join(dir, "kubeconfig"), "--listen", "127.0.0.1:0", "--health-port", "0", "--sa-jwks-dir", dir], { OPENFIEF_STORE: url });
    try {
      await host.waitFor(/plugin host serving/);
    } finally {
      expect(await host.stop()).toBe(0);
    }
    expect(host.out()).not.toContain(PASSWORD);
  }, 90_000);

  it.each([
    ["egress, a file holding another scheme", ["egress", "--kubeconfig", "KUBECONFIG", "--store-file", "BAD"], {}, /\$?--store-file \S+ has the scheme "mysql:"/],
    ["egress, both variables", ["egress", "--kubeconfig", "KUBECONFIG"], { OPENFIEF_STORE: "URL", OPENFIEF_STORE_FILE: "FILE" }, /set \$OPENFIEF_STORE or \$OPENFIEF_STORE_FILE, not both/],
    ["egress, a database without the log's schema", ["egress", "--kubeconfig", "KUBECONFIG", "--listen", "127.0.0.1:0", "--store", "NOSCHEMA"], {}, /egress refused to start: the event log postgres:\/\/postgres@127\.0\.0\.1:\d+\/bare: .*lacks migrations/],
    ["plugin-host, a file that is not there", ["plugin-host", "--kubeconfig", "KUBECONFIG", "--store-file", "/nonexistent/url"], {}, /--store-file \/nonexistent\/url: cannot read/],
  ])("refuses to start (%s) in one line, never showing a password", async (_what, args, env, message) => {
    const bad = join(dir, "bad-url");
    await writeFile(bad, `mysql://root:${PASSWORD}@db/x\n`);
    const noSchema = pg.urlFor("bare", "postgres", PASSWORD);
    const swap = (a: string): string => ({ KUBECONFIG: join(dir, "kubeconfig"), BAD: bad, URL: url, FILE: urlFile, NOSCHEMA: noSchema } as Record<string, string>)[a] ?? a;
    const r = await openfiefEnv(args.map(swap), Object.fromEntries(Object.entries(env).map(([k, v]) => [k, swap(v)])));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr + r.stdout).not.toContain(PASSWORD);
  }, 60_000);
});

/** `openfief ARGS` from the bundle with more environment. */
async function openfiefEnv(args: readonly string[], env: Readonly<Record<string, string>>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...BUNDLE_ENV, ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
  return { code, stdout, stderr };
}
