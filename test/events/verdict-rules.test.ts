/**
 * Verdicts re-decided under the rules they name (docs/adr/0191): a config or grant verdict the
 * reconciler's own steps made reproduces; one edited (tampered) is a divergence of its family; one
 * naming rules this release does not know is reported as such; a verdict recorded before verdicts
 * named their rules reads as made by rules 1; and a test-only rules 2 that decides otherwise shows
 * the older verdicts apart, as an upgrade's effect, never as a divergence.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/events/index.js";
import type { EventLog, NewEvent } from "../../src/events/index.js";
import { CONFIG_RULES, GRANT_RULES, loadSchemaChecks, parsePlugin, withVersion } from "../../src/plugins/index.js";
import type { GrantSpec, InstanceSecrets, JsonValue } from "../../src/plugins/index.js";
import { grantProblems, nextConfigVerdict, nextGrantVerdict } from "../../src/reconciler/steps.js";
import { checkDecisions, type DeciderRules } from "../../src/projections/index.js";

const DIGEST = `sha256:${"a".repeat(64)}`;
const IMAGE = `registry.example/fx@${DIGEST}`;
const OTHER_IMAGE = `registry.example/fx@sha256:${"b".repeat(64)}`;
const SCHEMA = { type: "object", properties: { base: { type: "string" } }, additionalProperties: false };
const MANIFEST = { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [{ name: "token", mountPath: "/secrets/token" }], dataTiers: [], configSchema: SCHEMA };
const GRANT: GrantSpec = { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: ["token"], dataTiers: [] };
/** A grant mapping the role `token` to `first-token`: the instance `first`'s default Secret. */
const FOREIGN: GrantSpec = { ...GRANT, secrets: [], secretRoles: [{ role: "token", secret: "first-token" }] };

/** Config rules 2, for this test only: a config may not name `base` "EUR". */
const CONFIG_V2 = withVersion(CONFIG_RULES, "test only: base may not be EUR", (m, config, check) => {
  const v1 = CONFIG_RULES.today.decide(m, config, check);
  const base = (config as Record<string, unknown> | undefined)?.["base"];
  return base === "EUR" ? [...v1, { code: "config_mismatch", path: "spec.config.base", message: "test only: not EUR" }] : v1;
});
/** Grant rules 2, for this test only: no grant is refused. */
const GRANT_V2 = withVersion(GRANT_RULES, "test only: every grant passes", () => []);

let dir: string;
let n = 0;
let store: EventLog;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-check-verdicts-"));
  await loadSchemaChecks();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
beforeEach(async () => {
  store = await openStore({ file: join(dir, `log-${++n}.db`) });
  return () => store.close();
});

const ev = (name: string, type: string, data: object): NewEvent => ({ stream: `plugin/${name}`, type, actor: "test", data });
const spec = (config: JsonValue, image = IMAGE): JsonValue => ({ image, manifest: MANIFEST, config });

/** Observes `name` with `config` and appends the config verdict the reconciler's step gives, edited by `edit`. */
async function configVerdict(name: string, config: JsonValue, edit: (d: Record<string, unknown>) => Record<string, unknown> = (d) => d): Promise<number> {
  await store.append([ev(name, "plugin.observed", { name, spec: spec(config) })]);
  const parsed = parsePlugin({ name, spec: spec(config) });
  if (!parsed.ok) throw new Error("the fixture must parse");
  const data = nextConfigVerdict(name, parsed.value.spec, null);
  if (data === null) throw new Error("a first verdict is always recorded");
  const [e] = await store.append([ev(name, "config.verdict", edit({ ...data }))]);
  return e?.seq ?? 0;
}

/**
 * Installs `first` (its default Secret `first-token`), then `second` whose grant maps its role to
 * `first-token` (another instance's), and appends the grant verdict the reconciler's step gives.
 */
async function grantVerdict(edit: (d: Record<string, unknown>) => Record<string, unknown> = (d) => d): Promise<number> {
  await store.append([ev("first", "plugin.observed", { name: "first", spec: spec({}) }), ev("first", "grant.observed", { name: "first", spec: GRANT })]);
  const [, g] = await store.append([
    ev("second", "plugin.observed", { name: "second", spec: spec({}) }),
    ev("second", "grant.observed", { name: "second", spec: FOREIGN }),
  ]);
  const grantSeq = g?.seq ?? 0;
  const self: InstanceSecrets = { name: "second", installedSeq: grantSeq - 1, roles: ["token"], grant: FOREIGN };
  const others: InstanceSecrets[] = [{ name: "first", installedSeq: 1, roles: ["token"], grant: GRANT }];
  const data = nextGrantVerdict("second", grantSeq, grantProblems(self, others), null);
  if (data === null) throw new Error("a refused grant is always recorded");
  const [e] = await store.append([ev("second", "grant.verdict", edit({ ...data }))]);
  return e?.seq ?? 0;
}

describe("config and grant verdicts re-decided under the rules they name", () => {
  it.each<[string, () => Promise<number>, DeciderRules, { field: string; family: string } | null]>([
    ["a config verdict that holds reproduces", () => configVerdict("fx", { base: "PLN" }), {}, null],
    ["a config verdict that refuses reproduces", () => configVerdict("fx", { base: 1 }), {}, null],
    ["a refused config edited to ok is a divergence", () => configVerdict("fx", { base: 1 }, (d) => ({ ...d, ok: true, errors: [] })), {}, { family: "config", field: "config.verdict" }],
    ["a config verdict naming another image is a divergence of its inputs", () => configVerdict("fx", { base: "PLN" }, (d) => ({ ...d, image: OTHER_IMAGE })), {}, { family: "config", field: "config.inputs" }],
    ["a config verdict naming unknown rules is reported", () => configVerdict("fx", { base: "PLN" }, (d) => ({ ...d, rules: 9 })), {}, { family: "config", field: "config.rules" }],
    ["a grant refused for another instance's Secret reproduces", () => grantVerdict(), {}, null],
    ["a refused grant edited to ok is a divergence", () => grantVerdict((d) => ({ ...d, ok: true, errors: [] })), {}, { family: "grant", field: "grant.verdict" }],
    ["a grant verdict naming another grant is a divergence of its inputs", () => grantVerdict((d) => ({ ...d, grant: 1 })), {}, { family: "grant", field: "grant.inputs" }],
    ["a config verdict under rules 1 stays reproduced when rules 2 come", () => configVerdict("fx", { base: "EUR" }), { config: CONFIG_V2 }, null],
    ["a grant verdict under rules 1 stays reproduced when rules 2 come", () => grantVerdict(), { grant: GRANT_V2 }, null],
  ])("%s", async (_name, record, rules, divergence) => {
    const seq = await record();
    const r = await checkDecisions(store, { rules });
    expect(r.divergences.map((d) => ({ seq: d.seq, family: d.family, field: d.field }))).toEqual(divergence === null ? [] : [{ seq, ...divergence }]);
    const family = divergence?.family ?? (r.verdictRules.config.decisions["1"] === undefined ? "grant" : "config");
    expect(r.verdictRules[family as "config" | "grant"].decisions).toEqual({ [divergence?.field.endsWith(".rules") === true ? "9" : "1"]: 1 });
  });

  it("shows a config verdict today's rules decide otherwise apart, as an upgrade's effect", async () => {
    const seq = await configVerdict("fx", { base: "EUR" });
    const r = await checkDecisions(store, { rules: { config: CONFIG_V2 } });
    expect(r.divergences).toEqual([]);
    expect(r.verdictRules.config).toEqual({ today: 2, decisions: { 1: 1 } });
    expect(r.upgrades).toEqual([{
      seq, name: "fx", family: "config", rules: 1, today: 2, field: "config.verdict",
      before: { ok: true, errors: [] }, after: { ok: false, errors: [{ code: "config_mismatch", path: "spec.config.base", message: "test only: not EUR" }] },
    }]);
    // A verdict made under rules 2 is re-decided under rules 2: the same answer, nothing apart.
    await store.append([ev("fx", "config.verdict", { name: "fx", image: IMAGE, rules: 2, ok: false, errors: [{ code: "config_mismatch", path: "spec.config.base", message: "test only: not EUR" }] })]);
    const again = await checkDecisions(store, { rules: { config: CONFIG_V2 } });
    expect(again.divergences).toEqual([]);
    expect(again.upgrades).toHaveLength(1);
    expect(again.verdictRules.config.decisions).toEqual({ 1: 1, 2: 1 });
  });

  it("shows a refused grant today's rules would pass apart, as an upgrade's effect", async () => {
    const seq = await grantVerdict();
    const r = await checkDecisions(store, { rules: { grant: GRANT_V2 } });
    expect(r.divergences).toEqual([]);
    expect(r.upgrades.map((u) => [u.seq, u.family, u.field, u.rules, u.today, (u.after as { ok: boolean }).ok])).toEqual([[seq, "grant", "grant.verdict", 1, 2, true]]);
  });

  it("re-decides a grant verdict against the instances installed then, not later ones", async () => {
    // `second` refused; `first` uninstalled afterwards: the verdict still reproduces from the log before it.
    await grantVerdict();
    await store.append([ev("first", "plugin.deleted", { name: "first" })]);
    expect((await checkDecisions(store)).divergences).toEqual([]);
  });
});
