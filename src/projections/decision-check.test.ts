/**
 * The decision check kept as events arrive must find what the full check finds: on random logs of
 * two plugins (observations, grants, signature, config and grant verdicts right and wrong,
 * allow-lists, honest and dishonest rollout decisions, egress decisions right and wrong, each under
 * rules 1 or a test-only rules 2), caught up at random
 * points by fresh checkers (as a new process would), it reports the same decisions checked, the same
 * differences and the same upgrade effects as `checkDecisions`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DIGEST_A, DIGEST_B, GRANT, IMAGE_A, IMAGE_B, MANIFEST, MANIFEST_WIDER } from "../../test/events/helpers.js";
import { openStore } from "../events/index.js";
import type { EventLog, NewEvent, VerdictOutcome } from "../events/index.js";
import { CONFIG_RULES, decideEgress, EGRESS_RULES, GRANT_RULES, SIGNATURE_RULES, withVersion } from "../plugins/index.js";
import { checkDecisions, type DeciderRules } from "./check-decisions.js";
import type { AddressRecheck } from "./check-egress.js";
import { decideRolloutV1, emptyFacts, ROLLOUT_RULES } from "./decide-rollout.js";
import { DecisionCheck } from "./decision-check.js";
import { loadDeciderState } from "./decider-state.js";

const PLUGINS = ["echo", "ping"] as const;
const IMAGES = [IMAGE_A, IMAGE_B] as const;
const DIGESTS = [DIGEST_A, DIGEST_B] as const;
const MANIFESTS = [MANIFEST, MANIFEST_WIDER] as const;
const HOSTS = ["api.example.com", "extra.example.com"] as const;
const ADDRESSES = [["93.184.215.14"], ["10.1.2.3", "93.184.215.14"], []] as const;

/** The address step: private 10/8 is refused; the first other address is dialed. */
const recheck: AddressRecheck = (addresses) => {
  const refused = addresses.find((a) => a.startsWith("10."));
  if (refused !== undefined) return { ok: false, code: "forbidden_address", refusedAddress: refused, addressRefusal: "private" };
  const first = addresses[0];
  return first === undefined ? { ok: false, code: "dns_no_addresses" } : { ok: true, address: first };
};

/**
 * A second version of each family's rules, for this test only (ADR 0150): rollout rules 2 hold
 * back an image whose signatures are merely unverified; egress rules 2 refuse extra.example.com.
 */
const CONFIG_V1 = CONFIG_RULES.today.decide;
const RULES: Required<DeciderRules> = {
  signature: withVersion(SIGNATURE_RULES, "test only: the catalog verifies nothing", (c, d, ids) => ({ ...SIGNATURE_RULES.today.decide(c, d, ids), entry: null })),
  // Config rules 2 refuse a config of a plugin whose manifest names more than one destination; grant rules 2 refuse no grant.
  config: withVersion(CONFIG_RULES, "test only", (m, config, check) => (m.egress.length > 1 ? [{ code: "config_mismatch", path: "spec.config", message: "test only" }] : CONFIG_V1(m, config, check))),
  grant: withVersion(GRANT_RULES, "test only", () => []),
  rollout: withVersion(ROLLOUT_RULES, "test only", (state) => decideRolloutV1({ ...state, verdicts: new Map([...state.verdicts].map(([k, v]) => [k, v === "unverified" ? "refused" : v])) })),
  egress: withVersion(EGRESS_RULES, "test only", (lists, plugin, host, port) => (host === "extra.example.com" ? { allowed: false, reason: "not_listed" } : decideEgress(lists, plugin, host, port))),
};

type Step =
  | { kind: "plugin"; p: number; image: number; manifest: number }
  | { kind: "deleted"; p: number }
  | { kind: "grant"; p: number }
  | { kind: "config"; p: number; image: number; ok: boolean; rules: 1 | 2 }
  | { kind: "grantVerdict"; p: number; ok: boolean; rules: 1 | 2 }
  | { kind: "verdict"; image: number; outcome: VerdictOutcome }
  | { kind: "decide"; p: number; honest: boolean; rules: 1 | 2 }
  | { kind: "workload"; p: number; running: boolean; hosts: number }
  | { kind: "egress"; p: number; host: number; allowed: boolean; addresses: number; rules: 1 | 2 }
  | { kind: "check" };

const ix = (n: number) => fc.integer({ min: 0, max: n - 1 });
const p = ix(PLUGINS.length);
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("plugin" as const), p, image: ix(2), manifest: ix(2) }),
  fc.record({ kind: fc.constant("deleted" as const), p }),
  fc.record({ kind: fc.constant("grant" as const), p }),
  fc.record({ kind: fc.constant("config" as const), p, image: ix(2), ok: fc.boolean(), rules: fc.constantFrom<1 | 2>(1, 2) }),
  fc.record({ kind: fc.constant("grantVerdict" as const), p, ok: fc.boolean(), rules: fc.constantFrom<1 | 2>(1, 2) }),
  fc.record({ kind: fc.constant("verdict" as const), image: ix(2), outcome: fc.constantFrom<VerdictOutcome>("verified", "unverified", "refused") }),
  fc.record({ kind: fc.constant("decide" as const), p, honest: fc.boolean(), rules: fc.constantFrom<1 | 2>(1, 2) }),
  fc.record({ kind: fc.constant("workload" as const), p, running: fc.boolean(), hosts: ix(3) }),
  fc.record({ kind: fc.constant("egress" as const), p, host: ix(2), allowed: fc.boolean(), addresses: ix(ADDRESSES.length), rules: fc.constantFrom<1 | 2>(1, 2) }),
  fc.constant({ kind: "check" as const }),
);

/** A rollout decision under the rules `s` names; a dishonest one is what a plugin with no facts at all would get: it differs whenever the facts matter. */
async function decision(store: EventLog, name: string, s: { honest: boolean; rules: 1 | 2 }): Promise<object> {
  const decide = RULES.rollout.get(s.rules)?.decide ?? decideRolloutV1;
  const made = decide(s.honest ? (await loadDeciderState(store, name)).state : { ...emptyFacts(name), verdicts: new Map() });
  return { ...made, rules: s.rules };
}

/** A grant verdict, right or wrong, about the plugin's last grant (or a made-up one). */
async function grantVerdict(store: EventLog, name: string, s: { ok: boolean; rules: 1 | 2 }): Promise<object> {
  const grant = await store.lookups.lastOf(`plugin/${name}`, ["grant.observed"], Number.MAX_SAFE_INTEGER);
  return { name, grant: grant?.seq ?? 1, rules: s.rules, ok: s.ok, errors: s.ok ? [] : [{ code: "foreign_secret", path: "spec.secrets[0]", message: "test only" }] };
}

async function eventOf(store: EventLog, s: Exclude<Step, { kind: "check" }>): Promise<NewEvent> {
  if (s.kind === "verdict") {
    return { stream: "trust", type: "signature.verdict", actor: "test", data: { digest: DIGESTS[s.image], image: IMAGES[s.image], outcome: s.outcome, signers: [], identities: [], trustRoot: "r".repeat(64), catalog: "c".repeat(64), rules: 1 } };
  }
  const name = PLUGINS[s.p] as string;
  const e = (type: string, data: object): NewEvent => ({ stream: `plugin/${name}`, type, actor: "test", data });
  switch (s.kind) {
    case "plugin": return e("plugin.observed", { name, spec: { image: IMAGES[s.image], manifest: MANIFESTS[s.manifest] } });
    case "deleted": return e("plugin.deleted", { name });
    case "grant": return e("grant.observed", { name, spec: GRANT });
    case "config": return e("config.verdict", { name, image: IMAGES[s.image], rules: s.rules, ok: s.ok, errors: s.ok ? [] : [{ code: "config_mismatch", path: "spec.config", message: "test only" }] });
    case "grantVerdict": return e("grant.verdict", await grantVerdict(store, name, s));
    case "decide": return e("rollout.decided", await decision(store, name, s));
    case "workload": {
      const allowList = [[], ["api.example.com:443"], ["api.example.com:443", "extra.example.com:443"]][s.hosts] as string[];
      return e("workload.desired", { name, running: s.running, image: IMAGE_A, objects: [], allowList });
    }
    case "egress": {
      const addresses = [...(ADDRESSES[s.addresses] as readonly string[])];
      const data = s.allowed
        ? { plugin: name, host: HOSTS[s.host], port: 443, allowed: true, reason: "listed", rules: s.rules, addresses, ...(addresses[0] === undefined ? {} : { address: addresses[0] }) }
        : { plugin: name, host: HOSTS[s.host], port: 443, allowed: false, reason: "not_listed", rules: s.rules };
      return { stream: `egress/${name}`, type: "egress.decision", actor: "egress", data };
    }
  }
}

let dir: string;
let n = 0;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), "openfief-decision-check-")); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function agree(steps: readonly Step[]): Promise<void> {
  const store = await openStore({ file: join(dir, `log-${n++}.db`) });
  try {
        for (const s of steps) {
          if (s.kind === "check") await new DecisionCheck(store, recheck, RULES).catchUp();
          else await store.append([await eventOf(store, s)]);
        }
        const kept = await new DecisionCheck(store, recheck, RULES).catchUp();
        const full = await checkDecisions(store, { egressAddresses: recheck, rules: RULES });
        expect(kept.upTo).toBe(await store.head());
        expect(kept.checked).toBe(full.checked);
        expect(kept.divergences).toEqual(full.divergences);
        expect(kept.upgrades).toEqual(full.upgrades);
        expect([kept.diverged, kept.more]).toEqual([new Set(full.divergences.map((d) => d.seq)).size, 0]);
        expect(await new DecisionCheck(store, recheck, RULES).rebuild()).toEqual(kept);
      } finally {
        await store.close();
      }
}

describe("the decision check kept as events arrive", () => {
  it.each<[string, Step[]]>([
    ["an egress decision checked against the list its plugin had before the last check", [
      { kind: "workload", p: 0, running: true, hosts: 1 }, { kind: "check" }, { kind: "egress", p: 0, host: 1, allowed: true, addresses: 0, rules: 1 },
    ]],
    ["a rollout decision checked against facts recorded before the last check", [
      { kind: "plugin", p: 1, image: 0, manifest: 0 }, { kind: "grant", p: 1 }, { kind: "check" }, { kind: "decide", p: 1, honest: false, rules: 1 },
    ]],
    ["an egress decision under older rules that today's decide otherwise", [
      { kind: "workload", p: 0, running: true, hosts: 2 }, { kind: "check" }, { kind: "egress", p: 0, host: 1, allowed: true, addresses: 0, rules: 1 },
    ]],
  ])("finds what the full check finds: %s", async (_what, steps) => {
    await agree(steps);
  });

  it("finds what the full check finds, however often and by whichever process it was caught up", async () => {
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), agree), { numRuns: 60 });
  });
});
