/**
 * What an owner reads of a flood, as a user runs the command (`node bin/openfief.js`, the bundle):
 * a view's refusals past their budget, and the egress proxy's before identity, recorded as
 * summaries, read in words by `openfief why` and `openfief log`, and passed over by
 * `openfief check-decisions`.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeFile } from "../../src/app/index.js";
import { EGRESS_ANONYMOUS_STREAM, gatewayStream, openStore } from "../../src/events/index.js";
import { ROOT, spawnOpenfief } from "./support.js";

let dir: string;
const data = (): string[] => ["--data", join(dir, "data")];

async function run(args: string[]): Promise<string> {
  const r = await spawnOpenfief(args);
  if (r.code !== 0) throw new Error(`openfief ${args.join(" ")} exited ${String(r.code)}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-e2e-summaries-"));
  await run(["apply", "-f", join(ROOT, "examples", "plugins"), ...data()]);
  await run(["reconcile", ...data(), "--out", join(dir, "cluster"), "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json")]);
  // What a gateway and an egress proxy under a flood append (their own tests show them doing it).
  const store = await openStore({ file: storeFile(join(dir, "data")) });
  await store.append([{
    stream: gatewayStream("ledger-view"), type: "gateway.refusals", actor: "gateway",
    data: {
      user: "mallory", installation: "ledger-view.1", installationName: "ledger-view", route: "kube", gate: "rate", status: 429, reason: "rate_limited_user",
      count: 9990, first: "2026-12-01T10:00:00.000Z", last: "2026-12-01T10:00:42.000Z", firstRequestId: "r-first", lastRequestId: "r-last",
    },
  }]);
  await store.append([{ stream: EGRESS_ANONYMOUS_STREAM, type: "egress.refusals", actor: "egress-proxy", data: { code: "no_token", source: "10.0.0.9", count: 512, first: "2026-12-01T10:00:00.000Z", last: "2026-12-01T10:01:00.000Z" } }]);
  await store.close();
}, 180_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("summaries of refusals", () => {
  it("read in words in why", async () => {
    const out = await run(["why", "ledger-view", ...data()]);
    expect(out).toContain("9990 denied (9990 at rate), 9990 of them counted in summaries rather than one by one");
    expect(out).toContain("mallory via ledger-view: 9990 more requests denied at rate (429, rate_limited_user) between 2026-12-01T10:00:00.000Z and 2026-12-01T10:00:42.000Z, counted rather than recorded one by one (requests r-first to r-last)");
  });

  it("read in words in the log", async () => {
    const out = await run(["log", ...data()]);
    expect(out).toContain("the gateway refused 9990 more requests of mallory's through ledger-view at rate (429, rate_limited_user)");
    expect(out).toContain("refused 512 more CONNECTs from 10.0.0.9 before identity (no_token) between 2026-12-01T10:00:00.000Z and 2026-12-01T10:01:00.000Z");
  });

  it("are passed over by check-decisions, which re-decides only decisions", async () => {
    const r = await spawnOpenfief(["check-decisions", ...data()]);
    expect(r.code).toBe(0);
  });
});
