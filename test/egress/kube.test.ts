/**
 * The cluster-mode adapters against a fake API server on 127.0.0.1 that the real client-node talks
 * HTTP to: TokenReview for the audience openfief-egress, and the ConfigMap informer.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ErrNotSynced } from "../../src/egress/allowlist-source.js";
import { watchAllowLists, type ConfigMapAllowListSource } from "../../src/egress/configmap-source.js";
import { KubeTokenReviewer } from "../../src/egress/kube-reviewer.js";
import { decideEgress } from "../../src/plugins/allowlist.js";

interface FakeApi {
  reviews: { token: string; audiences: string[] }[];
  configMap: Record<string, string> | null;
  listFails: boolean;
  listHangs: boolean;
  watchers: ServerResponse[];
  push(type: "ADDED" | "MODIFIED" | "DELETED", data: Record<string, string>): void;
}

const api: FakeApi = {
  reviews: [], configMap: null, listFails: false, listHangs: false, watchers: [],
  push(type, data) {
    rv++;
    const object = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "openfief-egress-allowlist", namespace: "openfief", resourceVersion: String(rv) }, data };
    for (const w of api.watchers) w.write(`${JSON.stringify({ type, object })}\n`);
  },
};
let rv = 1;
let server: Server;
let kc: KubeConfig;
const logs: string[] = [];
const logger = pino({}, new Writable({ write: (c: Buffer, _e, cb) => { logs.push(c.toString()); cb(); } }));

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = "";
    req.on("data", (d: Buffer) => (s += d.toString()));
    req.on("end", () => resolve(s));
  });
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (req.method === "POST" && url.pathname === "/apis/authentication.k8s.io/v1/tokenreviews") {
      const review = JSON.parse(await body(req)) as { spec: { token: string; audiences: string[] } };
      api.reviews.push(review.spec);
      const t = review.spec.token;
      const status =
        t === "good" ? { authenticated: true, audiences: ["openfief-egress"], user: { username: "system:serviceaccount:openfief:plugin-alpha" } }
        : t === "core" ? { authenticated: true, audiences: ["openfief-core"], user: { username: "system:serviceaccount:openfief:plugin-alpha" } }
        : t === "nouser" ? { authenticated: true, audiences: ["openfief-egress"] }
        : { authenticated: false, error: "invalid bearer token" };
      if (t === "boom") return void res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ kind: "Status", code: 500 }));
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: review.spec, status }));
      return;
    }
    if (req.method === "GET" && url.pathname === "/api/v1/namespaces/openfief/configmaps") {
      expect(url.searchParams.get("fieldSelector")).toBe("metadata.name=openfief-egress-allowlist");
      if (url.searchParams.get("watch") === "true") {
        res.writeHead(200, { "content-type": "application/json" });
        res.flushHeaders();
        api.watchers.push(res);
        return;
      }
      if (api.listHangs) return;
      if (api.listFails) return void res.writeHead(500, { "content-type": "application/json" }).end("{}");
      const items = api.configMap === null ? [] : [{ metadata: { name: "openfief-egress-allowlist", namespace: "openfief", resourceVersion: String(rv) }, data: api.configMap }];
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ apiVersion: "v1", kind: "ConfigMapList", metadata: { resourceVersion: String(rv) }, items }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "fake", server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: "proxy", token: "sa-token-of-the-proxy" }],
    contexts: [{ name: "fake", cluster: "fake", user: "proxy" }],
    currentContext: "fake",
  });
});

afterAll(async () => {
  for (const w of api.watchers) w.end();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe("KubeTokenReviewer", () => {
  it.each([
    ["good", { ok: true, username: "system:serviceaccount:openfief:plugin-alpha" }],
    ["core", { ok: false, code: "wrong_audience" }],
    ["nouser", { ok: false, code: "no_username" }],
    ["bad", { ok: false, code: "token_refused" }],
    ["boom", { ok: false, code: "review_failed" }],
  ])("answers the token %s with %j", async (token, expected) => {
    const r = await KubeTokenReviewer.fromKubeConfig(kc);
    expect(await r.review(token)).toEqual(expected);
    expect(api.reviews.at(-1)).toEqual({ token, audiences: ["openfief-egress"] });
  });

  it("is a refusal when the API server cannot be reached", async () => {
    const dead = new KubeConfig();
    dead.loadFromOptions({ clusters: [{ name: "d", server: "http://127.0.0.1:1" }], users: [{ name: "u" }], contexts: [{ name: "d", cluster: "d", user: "u" }], currentContext: "d" });
    expect(await (await KubeTokenReviewer.fromKubeConfig(dead)).review("good")).toEqual({ ok: false, code: "review_failed" });
  });
});

describe("watchAllowLists", () => {
  let source: ConfigMapAllowListSource | undefined;
  afterEach(async () => {
    await source?.stop();
    source = undefined;
    for (const w of api.watchers) w.end();
    api.watchers = [];
    api.listFails = false;
    api.listHangs = false;
  });

  const until = async (cond: () => boolean): Promise<void> => {
    for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(cond()).toBe(true);
  };

  it("reads the lists at start, then follows updates, bad data and deletion", async () => {
    api.configMap = { alpha: "api.example.com:443\n" };
    source = await watchAllowLists(kc, { logger });
    expect(decideEgress(source.current(), "alpha", "api.example.com", 443)).toEqual({ allowed: true, reason: "listed" });
    await until(() => api.watchers.length > 0);
    api.push("MODIFIED", { alpha: "other.example.com:443\n" });
    await until(() => decideEgress(source?.current() ?? null, "alpha", "other.example.com", 443).allowed);
    expect(decideEgress(source.current(), "alpha", "api.example.com", 443).reason).toBe("not_listed");
    api.push("MODIFIED", { alpha: "8.8.8.8:443\n" });
    await until(() => source?.current() === null);
    expect(logs.some((l) => l.includes("egress allow-lists refused; denying all egress until fixed"))).toBe(true);
    api.push("MODIFIED", { alpha: "api.example.com:443\n" });
    await until(() => source?.current() !== null);
    api.push("DELETED", { alpha: "api.example.com:443\n" });
    await until(() => source?.current() === null);
    expect(decideEgress(source.current(), "alpha", "api.example.com", 443).reason).toBe("no_allow_list");
  });

  it("starts with no lists when the ConfigMap does not exist", async () => {
    api.configMap = null;
    source = await watchAllowLists(kc, { logger });
    expect(source.current()).toBeNull();
  });

  it("refuses undecodable data from the first read", async () => {
    api.configMap = { alpha: "API.example.com:443\n" };
    source = await watchAllowLists(kc, { logger });
    expect(source.current()).toBeNull();
  });

  it("throws ErrNotSynced when the first read fails", async () => {
    api.listFails = true;
    await expect(watchAllowLists(kc, { logger })).rejects.toBeInstanceOf(ErrNotSynced);
  });

  it("throws ErrNotSynced when the first read does not finish in time", async () => {
    api.listHangs = true;
    await expect(watchAllowLists(kc, { logger, syncTimeoutMs: 200 })).rejects.toBeInstanceOf(ErrNotSynced);
  });
});
