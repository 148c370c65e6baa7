/**
 * The log's public key in the cluster (docs/adr/0192), against the fake API server on one
 * PostgreSQL log: a real operator replica (`runOperator` with `clusterReconcilerFactory`) signs
 * checkpoints with the key from the Secret's file and publishes the key's public half in the
 * ConfigMap `openfief-log-verifier`; the cluster's console, started before that with the
 * manifests' own RBAC (deploy/overlays/postgres/console-rbac.yaml) and a token of its
 * ServiceAccount, answers 404 at `/api/v1/log/key` until the key is published, then serves it,
 * `/tlog/checkpoint` signed by it and an event's proof that verifies offline with it. The console
 * may read that ConfigMap and not the Secret.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { verifyProofFile } from "../../src/app/index.js";
import type { LogKey } from "../../src/app/index.js";
import { clusterReconcilerFactory, startClusterConsole } from "../../src/compose/index.js";
import type { ClusterConsole } from "../../src/compose/index.js";
import type { EventLog } from "../../src/events/index.js";
import { runOperator } from "../../src/kube/operator.js";
import { openCheckpoint, parseVerifierKey } from "../../src/tlog/index.js";
import { call, cookieOf } from "../server/support.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, operatorOptions, putTrustedSigners, startSignedClusterLog, until } from "./operator-fixture.js";
import type { SignedClusterLog } from "./operator-fixture.js";

const NS = "openfief";
const CONSOLE_TOKEN = "console-sa-token";
const RBAC = new URL("../../deploy/overlays/postgres/console-rbac.yaml", import.meta.url);

let cluster: SignedClusterLog | undefined;
let server: FakeApiServer;
let dir: string;
let log: EventLog;
let key: LogKey;
let console_: ClusterConsole;
let failure: unknown;

beforeAll(async () => {
  cluster = await startSignedClusterLog("openfief-console-log-key-");
  ({ log, key, dir } = cluster);
  server = await FakeApiServer.start();
  await putTrustedSigners(server);
  // The console's rights exactly as the manifests give them, and a token of its ServiceAccount.
  for (const doc of parseAllDocuments(await readFile(RBAC, "utf8"))) {
    const obj = doc.toJSON() as (Record<string, unknown> & { metadata: Record<string, unknown> }) | null;
    if (obj !== null) server.put(obj);
  }
  server.issuedTokens.set(CONSOLE_TOKEN, { user: `system:serviceaccount:${NS}:openfief-console`, groups: ["system:serviceaccounts", `system:serviceaccounts:${NS}`, "system:authenticated"], expiresAt: Number.MAX_SAFE_INTEGER });
  // The Secret holding the private key is in the cluster too: the console must not be able to read it.
  server.put({ apiVersion: "v1", kind: "Secret", metadata: { name: "openfief-log-key", namespace: NS }, data: { key: Buffer.from(await readFile(join(dir, "log-key"))).toString("base64") } });
  server.tokenReviewer = (token) => (token === "viewer-token" ? { authenticated: true, user: { username: "vera", groups: ["system:authenticated"] }, audiences: ["https://kubernetes.default.svc"] } : { authenticated: false });
  server.accessReviewer = () => ({ allowed: true });
  console_ = await startClusterConsole({
    store: { kind: "postgres", url: cluster.url, shown: "cluster log" },
    kubeConfig: server.kubeConfig(CONSOLE_TOKEN),
    dataDir: join(dir, "console"),
    server: { host: "127.0.0.1", port: 0 },
    reviewCacheMs: 0,
    logKeyRefreshMs: 100,
    logger: pino({ level: "silent" }),
  });
}, 120_000);

afterAll(async () => {
  await console_?.stop();
  await server?.close();
  await cluster?.close();
}, 60_000);

/** Signs a viewer in; the session cookie. */
async function signIn(): Promise<string> {
  const r = await call(console_.url, "/signin", { method: "POST", body: "token=viewer-token", headers: { origin: console_.url, "sec-fetch-site": "same-origin", "content-type": "application/x-www-form-urlencoded" } });
  expect(r.status).toBe(303);
  return cookieOf(r);
}

describe("the log's key in the cluster's console", () => {
  it("answers 404 before the operator publishes the key, then serves it, the signed checkpoint and a proof that verifies with it", { timeout: 60_000 }, async () => {
    const before = await call(console_.url, "/api/v1/log/key");
    expect(before.status).toBe(404);
    const viewer = await signIn();
    expect((await call(console_.url, "/integrity", { headers: { cookie: viewer } })).text).toContain("The operator has not published the log's verifier key");

    const controller = new AbortController();
    const options = { ...operatorOptions(server, "pod-a", "operator-token", join(dir, "pod-a"), controller.signal), checkpoints: { every: 10_000, intervalMs: 100, witnesses: [] } };
    const done = runOperator(options, clusterReconcilerFactory).catch((err: unknown) => { failure = err; });
    try {
      for (const file of ["plugins/nbp-fx.yaml", "plugins/nbp-fx-grant.yaml"]) server.put(parseYaml(await readFile(join(EXAMPLES, file), "utf8")) as Record<string, unknown> & { metadata: Record<string, unknown> });
      await until("the leader published the key", () => server.get("v1", "ConfigMap", NS, "openfief-log-verifier") !== undefined, () => failure);
      expect(server.get("v1", "ConfigMap", NS, "openfief-log-verifier")?.["data"]).toEqual({ origin: "cluster.test/log", "verifier-key": key.verifierKey });
      const decided = await until("a checkpoint covers the decision", async () => {
        const d = await log.last("plugin/nbp-fx", "rollout.decided");
        return d !== null && ((await log.tree.latestCheckpoint())?.size ?? 0) >= d.seq;
      }, () => failure).then(() => log.last("plugin/nbp-fx", "rollout.decided"));

      await until("the console serves the key", async () => (await call(console_.url, "/api/v1/log/key")).status === 200);
      const served = await call(console_.url, "/api/v1/log/key");
      expect(served.json()).toEqual({ origin: key.origin, key: key.verifierKey });

      const verifier = parseVerifierKey(key.verifierKey);
      if (!verifier.ok) throw new Error(verifier.error.message);
      const checkpoint = await call(console_.url, "/tlog/checkpoint");
      expect(checkpoint.status).toBe(200);
      expect(openCheckpoint(checkpoint.text, [verifier.value]).ok).toBe(true);

      // The integrity page offers the proof as a download; it verifies with nothing but the public key.
      const proof = await call(console_.url, `/integrity/proof?seq=${decided?.seq ?? 0}`, { headers: { cookie: viewer } });
      expect(proof.status, proof.text).toBe(200);
      const report = verifyProofFile(Buffer.from(proof.text, "utf8"), verifier.value, []);
      expect(report.ok).toBe(true);
      expect(report.event?.seq).toBe(decided?.seq);
      const page = await call(console_.url, "/integrity", { headers: { cookie: viewer } });
      expect(page.text).toContain(key.verifierKey);
    } finally {
      controller.abort();
      await done;
    }
    expect(failure).toBeUndefined();
  });

  it("holds the console to its manifests' rights: the published key's ConfigMap, never the log's Secret", async () => {
    const get = (path: string) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${CONSOLE_TOKEN}` } });
    // Allowed (found once the operator published it): never refused.
    expect((await get(`/api/v1/namespaces/${NS}/configmaps/openfief-log-verifier`)).status).not.toBe(403);
    expect((await get(`/api/v1/namespaces/${NS}/secrets/openfief-log-key`)).status).toBe(403);
    expect((await get(`/api/v1/namespaces/${NS}/configmaps/openfief-trusted-signers`)).status).toBe(403);
  });
});
