/**
 * Decider versions (ADR 0150), on both stores: every decision names the rules that made it, is
 * re-decided under them (a difference is a divergence), and, when they are older, under today's
 * too (a difference is an upgrade's effect, reported apart). No rule has changed since the first
 * release, so a second version is made here, in the test only: rules whose answer really differs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { decisionsCheckLines } from "../../src/app/index.js";
import { ADDRESS_RULES, decisionRecord, recheckAddresses } from "../../src/egress/index.js";
import { canonicalJson } from "../../src/events/canonical.js";
import { chainHash } from "../../src/events/hash.js";
import type { EventLog, NewEvent, VerdictOutcome } from "../../src/events/index.js";
import type { RawEventRow } from "../../src/events/port.js";
import { GATEWAY_RULES_VERSION, GENESIS_HASH, openStore } from "../../src/events/index.js";
import { openPostgresLog } from "../../src/events/postgres/index.js";
import { decideEgress, EGRESS_RULES, rulesRegistry, withVersion, type EgressListStep } from "../../src/plugins/index.js";
import {
  checkDecisions, DecisionCheck, decideRollout, decideRolloutV1, loadDeciderState, ROLLOUT_RULES,
  type DeciderRules, type RolloutDecider,
} from "../../src/projections/index.js";
import { configVerdict, DIGEST_A, grantObserved, IMAGE_A, pluginObserved, verdict } from "./helpers.js";
import { recordedDecision, StoreDecisionRecorder } from "../../src/views/index.js";
import { startLogDatabases, type LogDatabases } from "./postgres-support.js";

/** Test-only rollout rules 2: an image whose signatures are merely `unverified` no longer runs (only `verified` passes). */
const rolloutV2: RolloutDecider = (state) => {
  const verdicts = new Map<string, VerdictOutcome>([...state.verdicts].map(([k, v]) => [k, v === "unverified" ? "refused" : v]));
  return decideRolloutV1({ ...state, verdicts });
};
/** Test-only egress rules 2: only port 443 is allowed, whatever the list says. */
const egressV2: EgressListStep = (lists, plugin, host, port) => (port === 443 ? decideEgress(lists, plugin, host, port) : { allowed: false, reason: "not_listed" });

const RULES: Required<Pick<DeciderRules, "rollout" | "egress">> = {
  rollout: withVersion(ROLLOUT_RULES, "test only: unverified images no longer run", rolloutV2),
  egress: withVersion(EGRESS_RULES, "test only: port 443 only", egressV2),
};
const ADDRESSES = withVersion(ADDRESS_RULES, "test only: the address step unchanged", recheckAddresses);

type Family = "rollout" | "egress";
/** One decision to record: its family, the rules it names, whether it is honest under them, and what its facts are. */
interface Case {
  readonly family: Family;
  /** The rules the decision is made with (3: rules nobody released). */
  readonly rules: 1 | 2 | 3;
  readonly honest: boolean;
  /** Rollout: the image's signature verdict. Egress: the port asked for. */
  readonly verdict?: VerdictOutcome;
  readonly port?: number;
}

const NAME = "echo";
const LIST = ["api.example.com:443", "api.example.com:8443"];

/** Appends the facts and the decision of a case; returns the decision's seq. */
function record(store: EventLog, c: Case): Promise<number> {
  return c.family === "rollout" ? recordRollout(store, c) : recordEgress(store, c);
}

async function recordRollout(store: EventLog, c: Case): Promise<number> {
  await store.append([pluginObserved(NAME), grantObserved(NAME), configVerdict(NAME, IMAGE_A), verdict(DIGEST_A, IMAGE_A, c.verdict ?? "verified")]);
  const { state } = await loadDeciderState(store, NAME);
  const decider = RULES.rollout.get(c.rules)?.decide ?? decideRolloutV1;
  const made = decider(state);
  // A dishonest decision claims the version ran that the facts refuse (or refuses what they allow).
  const plan = c.honest ? made.plan : { ...made.plan, outcome: made.plan.outcome === "current" ? "none" : "current" };
  const [e] = await store.append([{ stream: `plugin/${NAME}`, type: "rollout.decided", actor: "reconciler", data: { ...made, plan, rules: c.rules } }]);
  return e?.seq ?? 0;
}

async function recordEgress(store: EventLog, c: Case): Promise<number> {
  await store.append([{ stream: `plugin/${NAME}`, type: "workload.desired", actor: "reconciler", data: { name: NAME, running: true, image: IMAGE_A, objects: [], allowList: LIST } }]);
  const port = c.port ?? 443;
  // Both ports are on the list: rules 1 allow either, rules 2 only 443.
  const listed = c.rules === 2 ? port === 443 : true;
  const decision = (c.honest ? listed : !listed)
    ? decisionRecord(NAME, "api.example.com", port, { allowed: true, reason: "listed", dial: { address: "93.184.215.14", family: 4, port }, addresses: ["93.184.215.14"] })
    : decisionRecord(NAME, "api.example.com", port, { allowed: false, reason: "not_listed" });
  const [e] = await store.append([{ stream: `egress/${NAME}`, type: "egress.decision", actor: "egress", data: { ...decision, rules: c.rules } }]);
  return e?.seq ?? 0;
}

/** What the check says of a log holding one case's decision: the parts that diverge, and those an upgrade changes. */
interface Expected {
  readonly divergences: readonly string[];
  readonly upgrades: readonly string[];
}

const CASES: readonly [string, Case, Expected][] = [
  // rollout.decided
  ["a rollout decision reproduced under its rules 1, which today's rules 2 decide the same", { family: "rollout", rules: 1, honest: true, verdict: "verified" }, { divergences: [], upgrades: [] }],
  ["a rollout decision reproduced under its rules 1, which today's rules 2 decide otherwise", { family: "rollout", rules: 1, honest: true, verdict: "unverified" }, { divergences: [], upgrades: ["plan", "inputs"] }],
  ["a rollout decision made under today's rules 2, reproduced", { family: "rollout", rules: 2, honest: true, verdict: "unverified" }, { divergences: [], upgrades: [] }],
  ["a rollout decision under rules 2 that they do not reproduce", { family: "rollout", rules: 2, honest: false, verdict: "unverified" }, { divergences: ["plan"], upgrades: [] }],
  ["a rollout decision under rules 1 that they do not reproduce, which rules 2 also decide otherwise", { family: "rollout", rules: 1, honest: false, verdict: "unverified" }, { divergences: ["plan"], upgrades: ["plan", "inputs"] }],
  ["a rollout decision naming rules no release has", { family: "rollout", rules: 3, honest: true }, { divergences: ["rules"], upgrades: [] }],
  // egress.decision
  ["an egress decision reproduced under its rules 1, which today's rules 2 decide the same", { family: "egress", rules: 1, honest: true, port: 443 }, { divergences: [], upgrades: [] }],
  ["an egress decision reproduced under its rules 1, which today's rules 2 decide otherwise", { family: "egress", rules: 1, honest: true, port: 8443 }, { divergences: [], upgrades: ["egress.list"] }],
  ["an egress decision made under today's rules 2, reproduced", { family: "egress", rules: 2, honest: true, port: 8443 }, { divergences: [], upgrades: [] }],
  ["an egress decision under rules 2 that they do not reproduce", { family: "egress", rules: 2, honest: false, port: 8443 }, { divergences: ["egress.list"], upgrades: [] }],
  ["an egress decision under rules 1 that they do not reproduce", { family: "egress", rules: 1, honest: false, port: 443 }, { divergences: ["egress.list"], upgrades: [] }],
  ["an egress decision naming rules no release has", { family: "egress", rules: 3, honest: true, port: 443 }, { divergences: ["egress.rules"], upgrades: [] }],
];

let dbs: LogDatabases;
let dir: string;
let n = 0;
const logs: EventLog[] = [];
beforeAll(async () => { dbs = await startLogDatabases(); dir = mkdtempSync(join(tmpdir(), "openfief-deciders-")); }, 60_000);
afterEach(async () => { for (const l of logs.splice(0)) await l.close(); });
afterAll(async () => { await dbs?.stop(); rmSync(dir, { recursive: true, force: true }); });

type Store = "sqlite" | "postgres";
async function open(store: Store): Promise<EventLog> {
  const log = store === "sqlite" ? await openStore({ file: join(dir, `log${++n}.db`) }) : await openPostgresLog({ url: await dbs.fresh() });
  logs.push(log);
  return log;
}

describe.each<Store>(["sqlite", "postgres"])("decider versions on %s", (kind) => {
  it.each(CASES)("%s", async (_what, c, expected) => {
    const store = await open(kind);
    const seq = await record(store, c);
    const r = await checkDecisions(store, { rules: RULES, egressAddresses: ADDRESSES });
    expect(r.divergences.map((d) => d.field)).toEqual(expected.divergences);
    expect(r.divergences.every((d) => d.seq === seq && d.rules === c.rules && d.family === c.family)).toBe(true);
    expect(r.upgrades.map((u) => u.field).sort()).toEqual([...expected.upgrades].sort());
    expect(r.upgrades.every((u) => u.seq === seq && u.rules === c.rules && u.today === 2 && u.family === c.family)).toBe(true);
    expect(r.rules[c.family]).toEqual({ today: 2, decisions: { [String(c.rules)]: 1 } });
    // The check kept as events arrive (the integrity page's) finds the same, in the log's own tables.
    const kept = await new DecisionCheck(store, ADDRESSES, RULES).catchUp();
    expect(kept.divergences).toEqual(r.divergences);
    expect(kept.upgrades).toEqual(r.upgrades);
    expect(kept.diverged).toBe(expected.divergences.length === 0 ? 0 : 1);
  });

  it("reports the upgrade's effect with both answers, and the released rules alone see none", async () => {
    const store = await open(kind);
    const seq = await record(store, { family: "rollout", rules: 1, honest: true, verdict: "unverified" });
    const r = await checkDecisions(store, { rules: RULES, egressAddresses: ADDRESSES });
    const plan = r.upgrades.find((u) => u.field === "plan");
    expect(plan).toMatchObject({ seq, name: NAME, before: { outcome: "current" }, after: { outcome: "none" } });
    const released = await checkDecisions(store, { egressAddresses: ADDRESS_RULES });
    expect(released).toMatchObject({ checked: 1, divergences: [], upgrades: [], rules: { rollout: { today: 1, decisions: { 1: 1 } } } });
  });

  it("reads a decision an older release recorded (no rules named) as made by rules 1, without rewriting its row", async () => {
    // Today's log, then the same rows as a release before decisions named their rules wrote them.
    const today = await open(kind);
    await record(today, { family: "rollout", rules: 1, honest: true, verdict: "unverified" });
    await record(today, { family: "egress", rules: 1, honest: true, port: 8443 });
    const rows: RawEventRow[] = [];
    for await (const page of today.rawPages()) rows.push(...page);
    let prev = GENESIS_HASH;
    // The versions before each type named its rules: decisions (ADR 0150) and verdicts (ADR 0191).
    const before: Readonly<Record<string, number>> = { "rollout.decided": 2, "egress.decision": 2, "signature.verdict": 3, "config.verdict": 1, "grant.verdict": 1 };
    const older = rows.map((r): RawEventRow => {
      const decision = before[r.type] !== undefined;
      const { rules: _rules, ...data } = JSON.parse(r.data) as Record<string, unknown>;
      const text = decision ? canonicalJson(data) : r.data;
      const schemaVersion = before[r.type] ?? r.schemaVersion;
      const hash = chainHash(prev, r.seq, r.stream, r.version, r.type, schemaVersion, r.time, r.actor, r.causedBy, text);
      const row = { ...r, schemaVersion, data: text, prevHash: prev, hash };
      prev = hash;
      return row;
    });
    const store = await open(kind);
    await store.importRaw(older);
    expect(await store.verify()).toMatchObject({ ok: true });
    const decisions = await store.read({ type: ["rollout.decided", "egress.decision"] as const });
    expect(decisions.map((e) => [e.schemaVersion, e.data.rules])).toEqual([[2, 1], [2, 1]]);
    // The stored rows are as they were written: no `rules` in their text.
    const stored: RawEventRow[] = [];
    for await (const page of store.rawPages()) stored.push(...page);
    expect(stored.filter((r) => before[r.type] !== undefined).every((r) => r.schemaVersion === before[r.type] && !r.data.includes("\"rules\""))).toBe(true);
    const verdicts = await store.read({ type: ["signature.verdict", "config.verdict"] as const });
    expect(verdicts.length).toBeGreaterThan(0);
    expect(verdicts.map((e) => e.data.rules)).toEqual(verdicts.map(() => 1));
    const r = await checkDecisions(store, { rules: RULES, egressAddresses: ADDRESSES });
    expect(r.divergences).toEqual([]);
    expect(r.upgrades.map((u) => u.field).sort()).toEqual(["egress.list", "inputs", "plan"]);
  });

  it("counts the gateway's decisions by the rules they name, apart: they are not re-decided", async () => {
    const store = await open(kind);
    const decision = recordedDecision({
      route: "runtime", user: "alice", installation: "i-1", installationName: NAME, plugin: NAME, version: "1.0.0", definitionHash: "d", pinnedHash: null,
      cluster: "c-1", method: "GET", path: "/runtime/x", attributes: null, served: null, decision: "allow", gate: "upstream", status: null,
    });
    expect(decision.rules).toBe(GATEWAY_RULES_VERSION);
    await new StoreDecisionRecorder(store).record(decision);
    const r = await checkDecisions(store);
    expect(r).toMatchObject({ checked: 0, divergences: [], notRedecided: { gateway: { today: 1, decisions: { 1: 1 } } } });
    const def = store.registry.get("gateway.decision");
    const { rules: _rules, ...v2 } = decision;
    expect(def?.upcast(2, v2)).toEqual(decision);
  });

  it("refuses a decision that names no rules", async () => {
    const store = await open(kind);
    const data = { ...decideRollout({ name: NAME, spec: null, grant: null, configOk: new Map(), deployed: null, decided: false, verdicts: new Map() }) } as Record<string, unknown>;
    delete data["rules"];
    const bad: NewEvent = { stream: `plugin/${NAME}`, type: "rollout.decided", actor: "reconciler", data };
    await expect(store.append([bad])).rejects.toMatchObject({ code: "invalid_data" });
  });
});

describe("the rules registries", () => {
  it("number their versions 1, 2, … and refuse a gap", () => {
    expect(ROLLOUT_RULES.versions.map((v) => v.version)).toEqual([1]);
    expect(RULES.rollout.today.version).toBe(2);
    expect(RULES.rollout.get(1)?.decide).toBe(decideRolloutV1);
    expect(RULES.rollout.get(3)).toBeUndefined();
    expect(RULES.rollout.get(0)).toBeUndefined();
    expect(RULES.rollout.get(1.5)).toBeUndefined();
    expect(() => rulesRegistry("x", [{ version: 2, change: "", decide: 0 }])).toThrow(/version 2 at place 1/);
    expect(() => rulesRegistry("x", [])).toThrow(/no version/);
  });

  it("keep the egress steps under the same numbers, and the released deciders record today's", () => {
    expect(ADDRESS_RULES.versions.map((v) => v.version)).toEqual(EGRESS_RULES.versions.map((v) => v.version));
    expect(decisionRecord("a", "h", 443, { allowed: false, reason: "not_listed" }).rules).toBe(EGRESS_RULES.today.version);
    expect(decideRollout({ name: "a", spec: null, grant: null, configOk: new Map(), deployed: null, decided: false, verdicts: new Map() }).rules).toBe(ROLLOUT_RULES.today.version);
  });
});

describe("check-decisions in words", () => {
  it("says what reproduces, what diverges, and an upgrade's effect apart", async () => {
    const store = await openStore({ file: join(dir, `words${++n}.db`) });
    logs.push(store);
    await record(store, { family: "rollout", rules: 1, honest: true, verdict: "unverified" });
    const r = await checkDecisions(store, { rules: RULES, egressAddresses: ADDRESSES });
    const lines = decisionsCheckLines({ ...r, reproduced: 1, diverged: 0, verdictsDiverged: 0, upgraded: 1 });
    expect(lines[0]).toBe("1 decisions re-checked: every one reproduces");
    expect(lines[1]).toBe("  rollout: rules 2 today, 1 decisions made under rules 1; egress: rules 2 today, no decision");
    // The config verdict the decision rests on, re-decided under its own rules (docs/adr/0191).
    expect(lines.slice(2, 4)).toEqual(["1 verdicts re-checked (config verdicts): every one reproduces", "  config: rules 1 today, 1 under rules 1"]);
    expect(lines[4]).toMatch(/^1 decisions made under older rules would be decided differently under today's \(an upgrade's effect, not a fault\):$/);
    expect(lines.slice(5)).toEqual([
      expect.stringMatching(/^ {2}event \d+ \(echo\): its (plan|inputs) under rollout rules 1, another under today's 2$/),
      expect.stringMatching(/^ {2}event \d+ \(echo\): its (plan|inputs) under rollout rules 1, another under today's 2$/),
    ]);
  });
});
