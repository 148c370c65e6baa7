/**
 * The operator serves the core's API to plugins: the real operator (client-node) against the fake
 * API server on 127.0.0.1, on the signed demo, with OPENFIEF_CORE_LISTEN set as the deploy base
 * sets it (here a free port of 127.0.0.1), running as its ServiceAccount under exactly the deploy
 * base's RBAC (operator-rbac.yaml), which the fake enforces. A plugin's openfief-core token is
 * checked with a TokenReview for the audience openfief-core (the ClusterRole
 * openfief-operator-tokenreview lets the operator create them; without its binding every call
 * is answered 503): a token the API server authenticates as the running instance's
 * ServiceAccount gets /core/v1/whoami's answer; one it does not is refused with 401 and recorded
 * as core.refused, without the token.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterReconcilerFactory } from "../../src/compose/index.js";
import type { EventLog } from "../../src/events/index.js";
import { runOperator } from "../../src/kube/operator.js";
import { NAMESPACE } from "../../src/plugins/constants.js";
import { freePort } from "../support/free-port.js";
import { FakeApiServer } from "./fake-apiserver.js";
import { EXAMPLES, OPERATOR_START_MS, operatorOptions, putTrustedSigners, setOperatorEnv, until, withOperatorLog } from "./operator-fixture.js";

const DEPLOY = fileURLToPath(new URL("../../deploy/base/", import.meta.url));

type Obj = Record<string, unknown> & { metadata: Record<string, unknown>; spec: Record<string, unknown> };

/** Token-shaped (three base64url parts), as a projected ServiceAccount token is; never a real one. */
const GOOD = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwbHVnaW4tbGVkZ2VyLXZpZXcifQ.c2lnbmF0dXJlLWdvb2Q";
const BAD = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzb21lb25lLWVsc2UifQ.c2lnbmF0dXJlLWJhZA";
const ACCOUNT = `system:serviceaccount:${NAMESPACE}:plugin-ledger-view`;

let server: FakeApiServer;
let dir: string;
let core = "";
let restoreEnv: () => void = () => undefined;
let controller: AbortController;
let done: Promise<void>;
let failure: unknown;
let image = "";
let operatorToken = "";

const wait = (what: string, p: () => boolean | Promise<boolean>): Promise<void> => until(what, p, () => failure, OPERATOR_START_MS);

const withLog = <T>(fn: (store: EventLog) => Promise<T>): Promise<T> => withOperatorLog(dir, fn);

const ask = (token: string): Promise<Response> => fetch(`${core}/core/v1/whoami`, { headers: { authorization: `Bearer ${token}` } });

beforeAll(async () => {
  restoreEnv = setOperatorEnv();
  const port = await freePort();
  process.env["OPENFIEF_CORE_LISTEN"] = `127.0.0.1:${port}`;
  core = `http://127.0.0.1:${port}`;
  server = await FakeApiServer.start();
  // The API server authenticates GOOD as ledger-view's ServiceAccount, for the audiences asked.
  server.tokenReviewer = (token, audiences) => (token === GOOD ? { authenticated: true, audiences: [...audiences], user: { username: ACCOUNT } } : { authenticated: false, error: "invalid bearer token" });
  dir = await mkdtemp(join(tmpdir(), "openfief-operator-core-"));
  await putTrustedSigners(server);
  // The operator runs as its ServiceAccount, with exactly the deploy base's RBAC: the fake API
  // server enforces it on the tokens it issues.
  for (const doc of parseAllDocuments(readFileSync(join(DEPLOY, "operator-rbac.yaml"), "utf8"))) server.put(doc.toJS() as Obj);
  const issued = await fetch(`${server.url}/api/v1/namespaces/${NAMESPACE}/serviceaccounts/openfief-operator/token`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ spec: { audiences: ["https://kubernetes.default.svc"], expirationSeconds: 3600 } }),
  });
  operatorToken = ((await issued.json()) as { status: { token: string } }).status.token;
  const plugin = parseYaml(await readFile(join(EXAMPLES, "plugins/ledger-view.yaml"), "utf8")) as Obj;
  image = String(plugin.spec["image"]);
  server.put(plugin);
  server.put(parseYaml(await readFile(join(EXAMPLES, "plugins/ledger-view-grant.yaml"), "utf8")) as Obj);
  controller = new AbortController();
  done = runOperator(operatorOptions(server, "replica-a", operatorToken, join(dir, "replica-a"), controller.signal), clusterReconcilerFactory).catch((err: unknown) => {
    failure = err;
  });
  // Running: its Deployment applied after the rollout decided to run it.
  await wait("ledger-view's Deployment", () => server.get("apps/v1", "Deployment", NAMESPACE, "plugin-ledger-view") !== undefined);
}, OPERATOR_START_MS + 30_000);

afterAll(async () => {
  controller.abort();
  await done;
  await server.close();
  await rm(dir, { recursive: true, force: true });
  delete process.env["OPENFIEF_CORE_LISTEN"];
  restoreEnv();
});

describe("the operator's core API (OPENFIEF_CORE_LISTEN, TokenReview)", () => {
  it("answers whoami for a token the API server authenticates as a running instance's ServiceAccount", { timeout: 30_000 }, async () => {
    const r = await ask(GOOD);
    expect(r.status).toBe(200);
    const body = (await r.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ instance: "ledger-view", serviceAccount: ACCOUNT, image });
    expect(body["permissions"]).toMatchObject({ capabilities: expect.arrayContaining(["view"]) });
    // Reviewed by the API server for the core's audience, with the operator's own credentials.
    const reviews = server.requestsTo("POST", "/apis/authentication.k8s.io/v1/tokenreviews");
    expect(reviews.length).toBeGreaterThanOrEqual(1);
    expect(reviews.map((q) => (q.body as { spec: { audiences: string[] } }).spec.audiences)).toContainEqual(["openfief-core"]);
    expect(reviews.every((q) => q.client === operatorToken)).toBe(true);
  });

  it("refuses a token the API server does not authenticate with 401, and records core.refused without the token", { timeout: 30_000 }, async () => {
    const r = await ask(BAD);
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe('Bearer realm="openfief-core"');
    expect(await r.json()).toEqual({ code: "token_refused", message: "the token is not accepted" });
    const refused = async () => withLog((store) => store.read({ stream: "core/-", type: "core.refused" }));
    await wait("core.refused recorded", async () => (await refused()).length > 0);
    const events = await refused();
    expect(events.map((e) => e.data)).toEqual([{ code: "token_refused", call: "whoami", source: "127.0.0.1" }]);
    expect(events[0]?.actor).toBe("core");
    expect(JSON.stringify(events)).not.toContain(BAD.split(".")[2]);
  });
});
