/**
 * Two operator replicas (`openfief operator` from the compiled bundle, as the cluster runs it)
 * against the fake API server, appending to one real PostgreSQL log given by
 * `$OPENFIEF_STORE_FILE`, as the postgres overlay's Secret gives it. The leader is killed
 * (SIGKILL, no release of the Lease) in the middle of its first reconcile pass; the standby takes
 * the Lease when it expires, and finishes the work: every object observed once, no decision made
 * twice on the same inputs, every workload applied, nothing the dead leader recorded decided again, the chain
 * intact and every decision reproduced by `check-decisions` — both read through the CLI with
 * `--store postgres://…`.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { openLogAt } from "../../src/app/index.js";
import type { KnownEvent } from "../../src/events/index.js";
import { NAMESPACE } from "../../src/plugins/index.js";
import { startLogDatabases } from "../events/postgres-support.js";
import type { LogDatabases } from "../events/postgres-support.js";
import { json, startOpenfief } from "../e2e/support.js";
import type { Started } from "../e2e/support.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, putTrustedSigners, setOperatorEnv } from "./operator-fixture.js";

const PLUGINS = ["ecb-fx", "ledger-view", "nbp-fx"];
/** Appends after which the first leader dies: its observations are in, its decisions under way. */
const KILL_AFTER = 9;

let fake: FakeApiServer;
let dbs: LogDatabases;
let dir: string;
let url: string;
let restoreEnv: () => void = () => undefined;
const started: Started[] = [];

async function kubeconfig(name: string, token: string): Promise<string> {
  const file = join(dir, `${name}.kubeconfig`);
  await writeFile(file, JSON.stringify({
    apiVersion: "v1", kind: "Config", "current-context": "fake",
    clusters: [{ name: "fake", cluster: { server: fake.url, "insecure-skip-tls-verify": true } }],
    users: [{ name: name, user: { token } }],
    contexts: [{ name: "fake", context: { cluster: "fake", user: name, namespace: NAMESPACE } }],
  }));
  return file;
}

async function replica(name: string, env: Record<string, string> = {}): Promise<Started> {
  const args = ["operator", "--kubeconfig", await kubeconfig(name, `${name}-token`), "--data", join(dir, name), "--health-port", "0", "--identity", name,
    "--leader-elect-lease-duration", "2", "--leader-elect-renew-deadline", "1.5", "--leader-elect-retry-period", "0.2"];
  const s = await startOpenfief(args, { OPENFIEF_STORE_FILE: join(dir, "store-url"), OPENFIEF_LOG_LEVEL: "warn", ...env });
  started.push(s);
  return s;
}

/** Polls `predicate` until it holds (a minute at most: two processes start on a busy machine); `failed` ends the wait at once. */
async function until(what: string, predicate: () => boolean | Promise<boolean>, failed: () => unknown = () => undefined): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const failure = failed();
    if (failure !== undefined) throw new Error(`a replica stopped while waiting for: ${what}`, { cause: failure });
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never happened within a minute: ${what}`);
}

const holder = (): string | undefined => (fake.get("coordination.k8s.io/v1", "Lease", NAMESPACE, "openfief-operator")?.["spec"] as { holderIdentity?: string } | undefined)?.holderIdentity;

async function events(): Promise<KnownEvent[]> {
  const log = await openLogAt({ kind: "postgres", url, shown: "test" });
  try {
    return await log.read({});
  } finally {
    await log.close();
  }
}

function counts(list: readonly KnownEvent[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of list) out[`${e.stream} ${e.type}`] = (out[`${e.stream} ${e.type}`] ?? 0) + 1;
  return out;
}

beforeAll(async () => {
  restoreEnv = setOperatorEnv();
  [fake, dbs, dir] = await Promise.all([FakeApiServer.start(), startLogDatabases(), mkdtemp(join(tmpdir(), "openfief-ha-"))]);
  url = await dbs.fresh();
  // The Secret's key, mounted as a file.
  await writeFile(join(dir, "store-url"), `${url}\n`, { mode: 0o400 });
  await putTrustedSigners(fake);
}, 60_000);

afterAll(async () => {
  for (const s of started) if (s.child.exitCode === null && s.child.signalCode === null) await s.stop();
  restoreEnv();
  await fake?.close();
  await dbs?.stop();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

describe("two operators on one PostgreSQL log", () => {
  it("the standby takes over from a leader killed mid-pass: no decision lost or made twice, the chain verifies", async () => {
    // The first replica leads before there is anything to do (the Lease is its own when it starts:
    // it renews at once, and the second sees a live holder), and dies after its KILL_AFTER-th append.
    fake.put({ apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: "openfief-operator", namespace: NAMESPACE }, spec: { holderIdentity: "operator-a", leaseDurationSeconds: 2, leaseTransitions: 0 } });
    const [a, b] = await Promise.all([replica("operator-a", { OPENFIEF_TEST_KILL_AFTER_APPENDS: String(KILL_AFTER) }), replica("operator-b")]);
    await until("operator-a leads and operator-b follows the cluster as a standby", () =>
      fake.requests.some((r) => r.client === "operator-a-token" && r.method === "PUT" && r.path.endsWith("/leases/openfief-operator")) &&
      fake.requests.some((r) => r.client === "operator-b-token" && r.path.includes("plugingrants")), () => (a.child.exitCode === null ? undefined : a.output().stderr));
    expect(holder()).toBe("operator-a");

    for (const p of PLUGINS) {
      fake.put(parseYaml(await readFile(join(EXAMPLES, "plugins", `${p}.yaml`), "utf8")) as Record<string, unknown>);
      fake.put(parseYaml(await readFile(join(EXAMPLES, "plugins", `${p}-grant.yaml`), "utf8")) as Record<string, unknown>);
    }
    const killed = await a.exited;
    expect(killed.signal).toBe("SIGKILL");
    const atKill = await events();
    // Killed mid-pass: it had begun deciding, and had not finished.
    expect(atKill.some((e) => ["signature.verdict", "config.verdict", "rollout.decided"].includes(e.type))).toBe(true);
    expect(PLUGINS.some((p) => !atKill.some((e) => e.stream === `plugin/${p}` && e.type === "kube.applied"))).toBe(true);

    await until("operator-b takes the Lease", () => holder() === "operator-b");
    await until("every plugin's workload is applied by operator-b", async () => {
      const list = await events();
      return PLUGINS.every((p) => list.some((e) => e.stream === `plugin/${p}` && e.type === "kube.applied"));
    });
    // What the new leader applied is in the cluster (nbp-fx runs as a Deployment of its own).
    expect(fake.get("apps/v1", "Deployment", NAMESPACE, "plugin-nbp-fx")).toBeDefined();
    // The new leader applied what the old one had not.
    expect((await events()).some((e) => e.type === "kube.applied" && e.seq > atKill.length)).toBe(true);
    await until("every plugin's status is written", () =>
      PLUGINS.every((p) => (fake.get("openfief.io/v1alpha1", "Plugin", NAMESPACE, p)?.["status"] as { deployed?: unknown } | undefined)?.deployed !== undefined));
    // Only the new leader wrote to the cluster after the old one died.
    const lease = fake.get("coordination.k8s.io/v1", "Lease", NAMESPACE, "openfief-operator")?.["spec"] as { leaseTransitions: number };
    expect(lease.leaseTransitions).toBeGreaterThanOrEqual(1);

    const all = await events();
    const after = counts(all);
    for (const p of PLUGINS) {
      // Each object was observed once, whoever led.
      for (const type of ["plugin.observed", "grant.observed", "config.verdict"]) expect(after[`plugin/${p} ${type}`], `${p} ${type}`).toBe(1);
      // A leader that saw a plugin before its grant decides again when the grant comes (new inputs);
      // what must never happen is the same decision twice — the standby redoing what the dead leader did.
      for (const type of ["rollout.decided", "workload.desired"]) {
        const made = all.filter((e) => e.stream === `plugin/${p}` && e.type === type).map((e) => JSON.stringify(e.data));
        expect(made.length, `${p} ${type}`).toBeGreaterThanOrEqual(1);
        for (let i = 1; i < made.length; i++) expect(made[i], `${p} ${type} #${i + 1} repeats #${i}`).not.toBe(made[i - 1]);
      }
      // And the last decision is on the grant.
      const last = all.filter((e) => e.stream === `plugin/${p}` && e.type === "workload.desired").at(-1);
      expect((last?.data as { running?: boolean } | undefined)?.running, `${p} runs under its grant`).toBe(true);
    }
    expect(after["trust signature.verdict"]).toBe(PLUGINS.length);
    // Every event the dead leader appended is still there, in the same place.
    const now = await events();
    for (const e of atKill) expect(now[e.seq - 1]?.hash).toBe(e.hash);

    // The cluster's log, read with the CLI as an operator would.
    expect(await json(["verify-log", "--store", url])).toMatchObject({ ok: true });
    expect(await json(["check-decisions", "--store", url])).toMatchObject({ divergences: [] });
    expect(b.child.exitCode).toBeNull();
  }, 180_000);
});
