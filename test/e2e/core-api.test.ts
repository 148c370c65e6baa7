/**
 * Plugins calling the core, through the compiled bundle as a plugin author runs it: `up --demo`
 * serves the core API under `/core/v1` on its listener; `openfief token NAME --audience core`
 * mints an instance's openfief-core token; the SDK's core client calls `whoami` and a connector's
 * state with it; a view asking for a connector's state, the instance's egress token, and a removed
 * instance are refused with their codes; `openfief log` shows each refusal, never the token.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCoreClient } from "../../sdk/src/index.js";
import type { CoreClient } from "../../sdk/src/index.js";
import { spawnOpenfief, startOpenfief } from "./support.js";
import type { Started } from "./support.js";

let root: string;
let data: string;
let up: Started;
let console_: string;

async function token(plugin: string, audience?: "core"): Promise<string> {
  const r = await spawnOpenfief(["token", plugin, "--data", data, ...(audience === undefined ? [] : ["--audience", audience])]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim();
}

function client(t: string): CoreClient {
  return createCoreClient({ baseUrl: console_, token: () => Promise.resolve(t) });
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "openfief-core-api-"));
  data = join(root, "data");
  up = await startOpenfief(["up", "--demo", "--data", data, "--no-egress", "--no-views", "--listen", "127.0.0.1:0"]);
  const out = await up.waitFor(/console on (http:\/\/\S+?)[;\s]/, 150_000);
  console_ = /console on (http:\/\/\S+?)[;\s]/.exec(out)?.[1] ?? "";
}, 180_000);

afterAll(async () => {
  const r = await up.stop();
  expect(r.code, r.stderr).toBe(0);
  await rm(root, { recursive: true, force: true });
});

describe("a plugin calls up's core API with its openfief-core token", () => {
  it("whoami names the instance and its effective permissions; the connector reads its sync state", async () => {
    const ecb = client(await token("ecb-fx", "core"));
    try {
      let who: Awaited<ReturnType<CoreClient["fetch"]>> | undefined;
      for (let i = 0; i < 100; i++) {
        who = await ecb.fetch("/core/v1/whoami");
        if (who.status === 200) break;
        await who.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      expect(who?.status).toBe(200);
      expect(await who?.json()).toMatchObject({
        instance: "ecb-fx", serviceAccount: "system:serviceaccount:openfief:plugin-ecb-fx",
        permissions: { capabilities: ["connector"], egress: [{ host: "www.ecb.europa.eu", port: 443 }] },
      });
      expect(await ecb.connectorState()).toMatchObject({ instance: "ecb-fx", watermark: "", lastSync: null, latestDelivery: null });
      expect((await ecb.whoAmI()).image).toMatch(/ecb-fx@sha256:[0-9a-f]{64}$/);
    } finally {
      await ecb.close();
    }
  });

  it("refuses a view asking for a connector's state, an egress token, and a removed instance; the log says why, never the token", async () => {
    const view = await token("ledger-view", "core");
    const egress = await token("ecb-fx");
    const nbp = await token("nbp-fx", "core");
    const refused: [string, string, number, string][] = [];
    const ask = async (t: string, path: string): Promise<void> => {
      const c = client(t);
      try {
        const r = await c.fetch(path);
        refused.push([path, t.slice(0, 12), r.status, ((await r.json()) as { code: string }).code]);
      } finally {
        await c.close();
      }
    };
    await ask(view, "/core/v1/connector/state");
    await ask(egress, "/core/v1/whoami");
    const deleted = await spawnOpenfief(["delete", "plugin", "nbp-fx", "--data", data]);
    expect(deleted.code, deleted.stderr).toBe(0);
    await ask(nbp, "/core/v1/whoami");
    expect(refused.map(([path, , status, code]) => [path, status, code])).toEqual([
      ["/core/v1/connector/state", 403, "capability_not_held"],
      ["/core/v1/whoami", 401, "wrong_audience"],
      ["/core/v1/whoami", 403, "removed_instance"],
    ]);
    const log = await spawnOpenfief(["log", "--type", "core.refused", "--data", data]);
    expect(log.code, log.stderr).toBe(0);
    expect(log.stdout).toMatch(/core\/ledger-view\s+core\.refused\s+core\s+the core refused ledger-view's call connector\.state from 127\.0\.0\.1 \(capability_not_held: it does not hold connector\)/);
    expect(log.stdout).toMatch(/core\/-\s+core\.refused\s+core\s+the core refused a plugin's call whoami from 127\.0\.0\.1 \(wrong_audience\)/);
    expect(log.stdout).toMatch(/core\/nbp-fx\s+core\.refused\s+core\s+the core refused nbp-fx's call whoami from 127\.0\.0\.1 \(removed_instance\)/);
    const mine = await spawnOpenfief(["log", "--plugin", "ledger-view", "--json", "--data", data]);
    expect(mine.stdout).toContain('"capability_not_held"');
    for (const t of [view, egress, nbp]) for (const part of t.split(".")) {
      expect(log.stdout).not.toContain(part);
      expect(mine.stdout).not.toContain(part);
      expect(up.output().stdout + up.output().stderr).not.toContain(part);
    }
  });

  it("a bad --audience is one line and exit 2", async () => {
    const r = await spawnOpenfief(["token", "ecb-fx", "--audience", "kube", "--data", data]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual(['openfief: --audience must be egress or core, not "kube"']);
  });
});
