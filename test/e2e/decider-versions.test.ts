/**
 * `openfief check-decisions` on the demo's log, run from the bundle as a user runs it: each decision
 * re-decided under the rules it names (ADR 0150), and each verdict too — signature, config and grant
 * (ADR 0191) — with `--json`, and a decision or a verdict edited in the database behind the
 * program's back reported as a divergence (exit 1).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDataStore, storeFile } from "../../src/app/index.js";
import { decisionRecord } from "../../src/egress/index.js";
import { tamper } from "../support/sqlite-file.js";
import { freshBundle, ok, ROOT, spawnOpenfief } from "./support.js";

interface Checked {
  checked: number;
  reproduced: number;
  diverged: number;
  upgraded: number;
  divergences: { seq: number; name: string; family: string; rules: number; field: string; recorded: unknown; expected: unknown }[];
  upgrades: unknown[];
  rules: Record<"rollout" | "egress", { today: number; decisions: Record<string, number> }>;
  notRedecided: Record<"gateway", { today: number; decisions: Record<string, number> }>;
  verdicts: number;
  verdictsDiverged: number;
  verdictRules: Record<"signature" | "config" | "grant", { today: number; decisions: Record<string, number> }>;
}

let dir: string;
let counter = 0;

beforeAll(freshBundle, 180_000);
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-deciders-e2e-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A data folder with the demo's plugins applied and reconciled, and one egress decision of nbp-fx's. */
async function demoLog(): Promise<{ data: string[]; folder: string; rollouts: number }> {
  const folder = join(dir, `data-${++counter}`);
  const data = ["--data", folder];
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data]);
  await ok(["reconcile", ...data, "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json")]);
  const store = await openDataStore(folder);
  try {
    const record = decisionRecord("nbp-fx", "api.nbp.pl", 443, { allowed: true, reason: "listed", dial: { address: "93.184.215.14", family: 4, port: 443 }, addresses: ["93.184.215.14"] });
    await store.append([{ stream: "egress/nbp-fx", type: "egress.decision", actor: "egress", data: record }]);
    return { data, folder, rollouts: (await store.read({ type: "rollout.decided" })).length };
  } finally {
    await store.close();
  }
}

describe("check-decisions on the demo's log", () => {
  it("re-decides every decision under the rules it names, in words and as JSON", async () => {
    const { data, rollouts } = await demoLog();
    const text = await spawnOpenfief(["check-decisions", ...data]);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split("\n");
    expect(lines[0]).toBe(`${rollouts + 1} decisions re-checked: every one reproduces`);
    expect(lines[1]).toBe(`  rollout: rules 1 today, ${rollouts} decisions made under rules 1; egress: rules 1 today, 1 decisions made under rules 1`);
    // The demo's signature verdicts cite the catalog they were decided with: their catalog part
    // reproduces; so do its config verdicts, each under the rules it names.
    expect(lines[2]).toMatch(/^[1-9]\d* verdicts re-checked \(signature verdicts \(their catalog part, from the catalog each cites\), config verdicts\): every one reproduces$/);
    expect(lines[3]).toMatch(/^ {2}signature: rules 1 today, [1-9]\d* under rules 1; config: rules 1 today, [1-9]\d* under rules 1$/);
    expect(lines).toHaveLength(4);

    const json = await spawnOpenfief(["check-decisions", "--json", ...data]);
    expect(json.code).toBe(0);
    const r = JSON.parse(json.stdout) as Checked;
    expect(r).toEqual({
      checked: rollouts + 1, reproduced: rollouts + 1, diverged: 0, upgraded: 0, divergences: [], upgrades: [],
      rules: { rollout: { today: 1, decisions: { 1: rollouts } }, egress: { today: 1, decisions: { 1: 1 } } },
      notRedecided: { gateway: { today: 1, decisions: {} } }, verdicts: expect.any(Number) as number, verdictsDiverged: 0,
      verdictRules: { signature: { today: 1, decisions: { 1: expect.any(Number) as number } }, config: { today: 1, decisions: { 1: expect.any(Number) as number } }, grant: { today: 1, decisions: {} } },
    });
    expect(r.verdicts).toBe((r.verdictRules.signature.decisions["1"] ?? 0) + (r.verdictRules.config.decisions["1"] ?? 0));
  });

  it("reports a decision edited behind the program's back as a divergence under its own rules, and exits 1", async () => {
    const { data, folder, rollouts } = await demoLog();
    const store = await openDataStore(folder);
    const [first] = await store.read({ type: "rollout.decided", limit: 1 });
    const [egress] = await store.read({ type: "egress.decision", limit: 1 });
    await store.close();
    if (first === undefined || egress === undefined) throw new Error("the demo recorded no decision");
    const flipped = first.data.inputs.currentDeployable ? "false" : "true";
    tamper(storeFile(folder), `UPDATE events SET data = json_set(data, '$.inputs.currentDeployable', json('${flipped}')) WHERE seq = ${first.seq};
      UPDATE events SET data = json_set(data, '$.rules', 9) WHERE seq = ${egress.seq};`);

    const text = await spawnOpenfief(["check-decisions", ...data]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`2 of ${rollouts + 1} decisions do not reproduce under the rules they name (a bug or tampering):`);
    expect(text.stdout).toContain(`  event ${first.seq} (${first.data.name}): the recorded inputs differ from what rollout rules 1 decide`);
    expect(text.stdout).toContain(`  event ${egress.seq} (nbp-fx): names egress rules 9, which this release does not know (it has rules 1 to 1)`);

    const json = await spawnOpenfief(["check-decisions", "--json", ...data]);
    expect(json.code).toBe(1);
    const r = JSON.parse(json.stdout) as Checked;
    expect(r).toMatchObject({ checked: rollouts + 1, reproduced: rollouts - 1, diverged: 2, upgraded: 0, upgrades: [] });
    expect(r.divergences.map((d) => [d.seq, d.family, d.rules, d.field])).toEqual([
      [first.seq, "rollout", 1, "inputs"],
      [egress.seq, "egress", 9, "egress.rules"],
    ]);
    // The chain sees the edit too: the hash of the edited rows no longer holds.
    expect((await spawnOpenfief(["verify-log", ...data])).code).toBe(1);
  });
  it("reports a signature verdict whose catalog part the catalog it cites does not give (verified with no publisher's signature), and exits 1", async () => {
    const { data, folder } = await demoLog();
    const store = await openDataStore(folder);
    const verdict = (await store.read({ type: "signature.verdict" })).find((e) => e.data.outcome === "verified");
    await store.close();
    if (verdict === undefined) throw new Error("the demo recorded no verified verdict");
    // Its identities replaced by one no catalog publisher holds: the catalog would not have made it verified.
    tamper(storeFile(folder), `UPDATE events SET data = json_set(data, '$.identities', json('[{"kind":"keyless","issuer":"https://issuer.example","subject":"someone@example.com"}]')) WHERE seq = ${verdict.seq};`);
    const text = await spawnOpenfief(["check-decisions", ...data]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^1 of \d+ verdicts do not reproduce under the rules they name \(a bug or tampering\):$/m);
    expect(text.stdout).toContain(`  event ${verdict.seq} (${verdict.data.image}): the recorded outcome of a signature verdict differs from what signature rules 1 give: "unverified"`);
    const r = JSON.parse((await spawnOpenfief(["check-decisions", "--json", ...data])).stdout) as Checked;
    expect(r.divergences.map((d) => [d.seq, d.family, d.field])).toEqual([[verdict.seq, "signature", "catalog.publishers"], [verdict.seq, "signature", "catalog.outcome"]]);
    expect([r.diverged, r.verdictsDiverged]).toEqual([0, 1]);
  });
});
