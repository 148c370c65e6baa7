/**
 * `openfief console` from the compiled bundle, as the cluster runs it: the log's location from
 * `$OPENFIEF_STORE_FILE`, the cluster from a kubeconfig (the fake API server), sign-in by bearer
 * token checked by the cluster, a clean stop on SIGTERM; and its one-line refusals of bad flags.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLogAt } from "../../src/app/index.js";
import { FakeApiServer } from "../kube/fake-apiserver.js";
import { bearer, call } from "../server/support.js";
import { openfief, startOpenfief } from "./support.js";
import type { Started } from "./support.js";

let fake: FakeApiServer;
let dir: string;
let running: Started;
let url: string;

beforeAll(async () => {
  fake = await FakeApiServer.start();
  fake.tokenReviewer = (token) => (token === "alice-token" ? { authenticated: true, user: { username: "alice", groups: ["viewers"] } } : { authenticated: false });
  fake.accessReviewer = (spec) => ({ allowed: spec["user"] === "alice" && (spec["resourceAttributes"] as { verb?: string } | undefined)?.verb === "get" });
  dir = await mkdtemp(join(tmpdir(), "openfief-console-e2e-"));
  const log = await openLogAt({ kind: "sqlite", file: join(dir, "log.db") });
  await log.close();
  await writeFile(join(dir, "store-url"), `sqlite:${join(dir, "log.db")}\n`, { mode: 0o400 });
  await writeFile(join(dir, "kubeconfig"), JSON.stringify({
    apiVersion: "v1", kind: "Config", "current-context": "fake",
    clusters: [{ name: "fake", cluster: { server: fake.url, "insecure-skip-tls-verify": true } }],
    users: [{ name: "console", user: { token: "console-token" } }],
    contexts: [{ name: "fake", context: { cluster: "fake", user: "console", namespace: "openfief" } }],
  }));
  running = await startOpenfief(["console", "--kubeconfig", join(dir, "kubeconfig"), "--data", join(dir, "console"), "--listen", "127.0.0.1:0"], { OPENFIEF_STORE_FILE: join(dir, "store-url") });
  url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(await running.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/))?.[1] ?? "";
}, 120_000);

afterAll(async () => {
  await running?.stop();
  await fake?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("openfief console", () => {
  it("serves the API to a token the cluster accepts, and refuses any other", async () => {
    expect((await call(url, "/api/v1/plugins", { headers: bearer("alice-token") })).status).toBe(200);
    expect((await call(url, "/api/v1/plugins", { headers: bearer("someone-else") })).status).toBe(401);
    expect(fake.requestsTo("POST", "/apis/authentication.k8s.io/v1/tokenreviews").length).toBeGreaterThanOrEqual(2);
  });

  it("stops on SIGTERM", async () => {
    const r = await running.stop();
    expect(r.code).toBe(0);
    expect(`${r.stdout}${r.stderr}`).not.toContain("alice-token");
  });

  it.each([
    [["console", "--listen", "0.0.0.0:4780", "--store", "sqlite:/nonexistent/x.db"], /beyond this machine|--tls-cert/],
    [["console", "--tls-cert", "/nonexistent.pem", "--store", "sqlite:/nonexistent/x.db"], /--tls-cert and --tls-key together/],
    [["console", "--listen", "nowhere"], /--listen must be host:port/],
  ])("refuses %j in one line, exit 2", async (args, message) => {
    const saved = { store: process.env["OPENFIEF_STORE"], file: process.env["OPENFIEF_STORE_FILE"] };
    delete process.env["OPENFIEF_STORE"];
    delete process.env["OPENFIEF_STORE_FILE"];
    try {
      const r = await openfief(args);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    } finally {
      if (saved.store !== undefined) process.env["OPENFIEF_STORE"] = saved.store;
      if (saved.file !== undefined) process.env["OPENFIEF_STORE_FILE"] = saved.file;
    }
  });

  it("refuses to start without the cluster's log", async () => {
    const r = await openfief(["console"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/give the cluster's log/);
  });
});
