/**
 * What the tests that run the real operator against the fake API server share: the environment
 * the operator reads (the demo's OCI layout, a topology no default uses), its options for a
 * quick test, the owner's trusted signers as the cluster's ConfigMap, and a bounded wait.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import type { OperatorOptions } from "../../src/kube/operator.js";
import { TRUSTED_SIGNERS_KEY } from "../../src/kube/trusted-signers.js";
import { NAMESPACE, TRUSTED_SIGNERS_CONFIGMAP } from "../../src/plugins/constants.js";
import { newLogSignerKey, openDataStore, readLogKey } from "../../src/app/index.js";
import type { LogKey } from "../../src/app/index.js";
import { openPostgresLog } from "../../src/events/index.js";
import type { EventLog } from "../../src/events/index.js";
import { startLogDatabases } from "../events/postgres-support.js";
import type { FakeApiServer } from "./fake-apiserver.js";

export const EXAMPLES = fileURLToPath(new URL("../../examples/", import.meta.url));

/** Addresses no default uses, so seeing them proves OPENFIEF_TOPOLOGY was read. */
const TOPOLOGY = {
  core: { clusterIP: "10.99.0.20", port: 8443, podPort: 8443, podLabels: { "app.kubernetes.io/name": "openfief-core" } },
  proxy: { clusterIP: "10.99.0.30", port: 4750, podPort: 4750, podLabels: { "app.kubernetes.io/name": "openfief-egress-proxy" } },
  pluginPort: 8080,
  coreSubject: "system:serviceaccount:openfief:openfief-core",
};

/** The leader's syncs are off here: these tests are of other things (test/kube/syncs-e2e.test.ts runs them). */
const OPERATOR_ENV = { OPENFIEF_OCI_LAYOUTS: join(EXAMPLES, "oci"), OPENFIEF_TOPOLOGY: JSON.stringify(TOPOLOGY), OPENFIEF_INSECURE_REGISTRIES: "", OPENFIEF_SYNCS: "off" };

/** Sets the environment the operator reads; returns what puts the previous one back. */
export function setOperatorEnv(): () => void {
  const saved = Object.keys(OPERATOR_ENV).map((k) => [k, process.env[k]] as const);
  Object.assign(process.env, OPERATOR_ENV);
  return () => {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

/** A replica's options: a silent log, a free health port, short relist, retry and reconcile delays. */
export function operatorOptions(server: FakeApiServer, identity: string, token: string, dataDir: string, signal: AbortSignal): OperatorOptions {
  return {
    kubeConfigObject: server.kubeConfig(token),
    dataDir,
    healthPort: 0,
    healthHost: "127.0.0.1",
    identity,
    log: pino({ level: "silent" }),
    signal,
    sourceOptions: { relistIntervalMs: 1_000, initialBackoffMs: 50, maxBackoffMs: 500 },
    retryPeriodSeconds: 0.1,
    reconcileDelayMs: 10,
  };
}

/** The demo's trusted signers as the cluster's ConfigMap. */
export async function putTrustedSigners(server: FakeApiServer): Promise<void> {
  server.put({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: TRUSTED_SIGNERS_CONFIGMAP, namespace: NAMESPACE },
    data: { [TRUSTED_SIGNERS_KEY]: await readFile(join(EXAMPLES, "trusted-signers.json"), "utf8") },
  });
}

const DEADLINE_MS = 15_000;

/**
 * How long a wait that includes the operator's start (its imports, leading, its first pass over
 * signed images) may take: on a loaded machine that alone took 18 s (two cores, six busy loops).
 */
export const OPERATOR_START_MS = 60_000;

/**
 * Polls `predicate` until it holds or the deadline passes (`deadlineMs`, 15 s unless told); the
 * error names what never happened. `failed` (when given) ends the wait at once with the error of a
 * replica that stopped.
 */
export async function until(what: string, predicate: () => boolean | Promise<boolean>, failed: () => unknown = () => undefined, deadlineMs = DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    const failure = failed();
    if (failure !== undefined) throw new Error(`an operator replica failed while waiting for: ${what}`, { cause: failure });
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never happened within ${deadlineMs} ms: ${what}`);
}

/** A cluster's one log on a real PostgreSQL with its signing key, as the operator's Secrets give them. */
export interface SignedClusterLog {
  readonly log: EventLog;
  /** The log's URL. */
  readonly url: string;
  readonly key: LogKey;
  /** A temporary folder of the test's own (the store URL and the key are in it). */
  readonly dir: string;
  /** Closes the log, stops PostgreSQL, removes the folder and restores the environment. */
  close(): Promise<void>;
}

/**
 * Starts PostgreSQL with a fresh log and a new log key, and points the operator's environment at
 * them (`OPENFIEF_STORE_FILE`, `OPENFIEF_LOG_KEY_FILE`, as the Secrets' mounts do).
 */
export async function startSignedClusterLog(prefix: string): Promise<SignedClusterLog> {
  const dbs = await startLogDatabases();
  const url = await dbs.fresh();
  const log = await openPostgresLog({ url, migrate: false });
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await writeFile(join(dir, "store-url"), `${url}\n`, { mode: 0o600 });
  await writeFile(join(dir, "log-key"), `${newLogSignerKey("cluster.test/log")}\n`, { mode: 0o600 });
  const restoreEnv = setOperatorEnv();
  process.env["OPENFIEF_STORE_FILE"] = join(dir, "store-url");
  process.env["OPENFIEF_LOG_KEY_FILE"] = join(dir, "log-key");
  return {
    log, url, key: readLogKey(join(dir, "log-key")), dir,
    async close() {
      delete process.env["OPENFIEF_STORE_FILE"];
      delete process.env["OPENFIEF_LOG_KEY_FILE"];
      restoreEnv();
      await log.close();
      await dbs.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `fn` on the log of the operator's data folder `dataDir` (its replica-a), closed afterwards. */
export async function withOperatorLog<T>(dataDir: string, fn: (store: EventLog) => Promise<T>): Promise<T> {
  const store = await openDataStore(join(dataDir, "replica-a"));
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
