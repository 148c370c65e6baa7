/**
 * `openfief check-decisions` (the bundle, as a process) on a log holding every kind of verdict
 * (docs/adr/0191): the demo's signature and config verdicts, and a grant verdict the reconciler
 * recorded when an instance's grant, as the cluster reported it, mapped another instance's Secret.
 * Each names the rules that made it and reproduces under them; a grant verdict edited in the
 * database behind the program's back is a divergence of its family (exit 1).
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { openDataStore, storeFile } from "../../src/app/index.js";
import { tamper } from "../support/sqlite-file.js";
import { freshBundle, ok, ROOT, spawnOpenfief } from "./support.js";

interface Checked {
  divergences: { seq: number; name: string; family: string; rules: number; field: string; recorded: unknown; expected: unknown }[];
  upgrades: unknown[];
  diverged: number;
  verdicts: number;
  verdictsDiverged: number;
  verdictRules: Record<"signature" | "config" | "grant", { today: number; decisions: Record<string, number> }>;
}

let dir: string;
const data = (): string[] => ["--data", join(dir, "data")];
const reconcile = (): Promise<string> => ok(["reconcile", ...data(), "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json")]);
let grantVerdict: { seq: number; ok: boolean };

beforeAll(freshBundle, 180_000);
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "openfief-verdict-rules-e2e-"));
  // The demo, and a second instance of the ledger view, whose signed image asks for the Secret role ledger-view-session.
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data()]);
  const plugin = parse(await readFile(join(ROOT, "examples", "plugins", "ledger-view.yaml"), "utf8")) as { metadata: { name: string } };
  plugin.metadata.name = "ledger-b";
  await writeFile(join(dir, "ledger-b.yaml"), stringify(plugin));
  await ok(["apply", "-f", join(dir, "ledger-b.yaml"), ...data()]);
  await reconcile();
  // The cluster reports a grant of ledger-b's mapping its role to the first instance's own Secret
  // (apply refuses such a grant; a PluginGrant edited in the cluster is not asked): the reconciler refuses it.
  const store = await openDataStore(join(dir, "data"));
  try {
    const spec = { capabilities: ["view"], egress: [], secrets: [], dataTiers: ["ledger"], secretRoles: [{ role: "ledger-view-session", secret: "ledger-view-ledger-view-session" }] };
    await store.append([{ stream: "plugin/ledger-b", type: "grant.observed", actor: "cluster", data: { name: "ledger-b", spec } }]);
  } finally {
    await store.close();
  }
  await reconcile();
  const after = await openDataStore(join(dir, "data"));
  try {
    const [v] = await after.read({ stream: "plugin/ledger-b", type: "grant.verdict" });
    if (v === undefined) throw new Error("the reconciler recorded no grant verdict");
    expect(v.data).toMatchObject({ name: "ledger-b", rules: 1, ok: false, errors: [{ code: "foreign_secret", path: "spec.secretRoles[0].secret" }] });
    grantVerdict = { seq: v.seq, ok: v.data.ok };
  } finally {
    await after.close();
  }
}, 180_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("check-decisions on a log with every kind of verdict", () => {
  it("re-decides signature, config and grant verdicts under the rules each names: every one reproduces", async () => {
    const text = await spawnOpenfief(["check-decisions", ...data()]);
    expect(text.code, text.stdout + text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^[1-9]\d* verdicts re-checked \(signature verdicts \(their catalog part, from the catalog each cites\), config verdicts, grant verdicts\): every one reproduces$/m);
    expect(text.stdout).toMatch(/^ {2}signature: rules 1 today, [1-9]\d* under rules 1; config: rules 1 today, [1-9]\d* under rules 1; grant: rules 1 today, 1 under rules 1$/m);
    const r = JSON.parse((await spawnOpenfief(["check-decisions", "--json", ...data()])).stdout) as Checked;
    expect(r).toMatchObject({ divergences: [], upgrades: [], verdictsDiverged: 0 });
    expect(r.verdictRules.grant).toEqual({ today: 1, decisions: { 1: 1 } });
    expect(r.verdicts).toBe(Object.values(r.verdictRules).reduce((n, f) => n + Object.values(f.decisions).reduce((a, b) => a + b, 0), 0));
  });

  it("reports a grant verdict edited to pass behind the program's back as a divergence of the grant rules it names, and exits 1", async () => {
    tamper(storeFile(join(dir, "data")), `UPDATE events SET data = json_set(data, '$.ok', json('true'), '$.errors', json('[]')) WHERE seq = ${grantVerdict.seq};`);
    const text = await spawnOpenfief(["check-decisions", ...data()]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^1 of [1-9]\d* verdicts do not reproduce under the rules they name \(a bug or tampering\):$/m);
    expect(text.stdout).toContain(`  event ${grantVerdict.seq} (ledger-b): the recorded verdict of a grant verdict differs from what grant rules 1 give: {"ok":false,"errors":[{"code":"foreign_secret","path":"spec.secretRoles[0].secret"`);
    const r = JSON.parse((await spawnOpenfief(["check-decisions", "--json", ...data()])).stdout) as Checked;
    expect(r.divergences.map((d) => [d.seq, d.name, d.family, d.rules, d.field])).toEqual([[grantVerdict.seq, "ledger-b", "grant", 1, "grant.verdict"]]);
    expect(r.divergences[0]?.recorded).toEqual({ ok: true, errors: [] });
    expect([r.diverged, r.verdictsDiverged]).toEqual([0, 1]);
  });
});
