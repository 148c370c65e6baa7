/**
 * The decider's state is gathered two ways: by indexed lookups (`loadDeciderState`, which the
 * reconciler and `why` use) and by folding the whole log (`evolveFacts`, which the decision check
 * uses). On random logs of one plugin, at every point, both must give the decider the same answer.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DIGEST_A, DIGEST_B, IMAGE_A, IMAGE_B, MANIFEST, MANIFEST_WIDER } from "../../test/events/helpers.js";
import { openStore, verdictKey } from "../events/index.js";
import type { EventLog, NewEvent, VerdictOutcome } from "../events/index.js";
import { decideRollout, emptyFacts, evolveFacts } from "./decide-rollout.js";
import type { PluginFacts } from "./decide-rollout.js";
import { loadDeciderState } from "./decider-state.js";

const NAME = "echo";
const STREAM = `plugin/${NAME}`;
const IMAGES = [IMAGE_A, IMAGE_B] as const;
const DIGESTS = [DIGEST_A, DIGEST_B] as const;
const MANIFESTS = [MANIFEST, MANIFEST_WIDER] as const;
const GRANTS = [
  { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }], secrets: [], dataTiers: [] },
  { capabilities: ["connector"], egress: [{ host: "api.example.com", port: 443 }, { host: "extra.example.com", port: 443 }], secrets: [], dataTiers: [] },
  { capabilities: [], egress: [], secrets: [], dataTiers: [] },
  { capabilities: "not a list" },
] as const;

/** A step of a random log: an observation or fact, or "decide" (append the decider's honest answer). */
type Step =
  | { readonly kind: "plugin"; readonly image: number; readonly manifest: number; readonly config: boolean }
  | { readonly kind: "deleted" }
  | { readonly kind: "grant"; readonly grant: number }
  | { readonly kind: "grantDeleted" }
  | { readonly kind: "config"; readonly image: number; readonly ok: boolean }
  | { readonly kind: "verdict"; readonly image: number; readonly outcome: VerdictOutcome }
  | { readonly kind: "previous"; readonly image: number; readonly manifest: number }
  | { readonly kind: "decide" };

const ix = (n: number) => fc.integer({ min: 0, max: n - 1 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("plugin" as const), image: ix(2), manifest: ix(2), config: fc.boolean() }),
  fc.constant({ kind: "deleted" as const }),
  fc.record({ kind: fc.constant("grant" as const), grant: ix(GRANTS.length) }),
  fc.constant({ kind: "grantDeleted" as const }),
  fc.record({ kind: fc.constant("config" as const), image: ix(2), ok: fc.boolean() }),
  fc.record({ kind: fc.constant("verdict" as const), image: ix(2), outcome: fc.constantFrom<VerdictOutcome>("verified", "unverified", "refused") }),
  fc.record({ kind: fc.constant("previous" as const), image: ix(2), manifest: ix(2) }),
  fc.constant({ kind: "decide" as const }),
);

function toEvent(s: Exclude<Step, { kind: "decide" }>): NewEvent {
  const e = (type: string, data: object, stream = STREAM): NewEvent => ({ stream, type, actor: "test", data });
  switch (s.kind) {
    case "plugin": return e("plugin.observed", { name: NAME, spec: { image: IMAGES[s.image], manifest: MANIFESTS[s.manifest], ...(s.config ? { config: { region: "eu" } } : {}) } });
    case "deleted": return e("plugin.deleted", { name: NAME });
    case "grant": return e("grant.observed", { name: NAME, spec: GRANTS[s.grant] });
    case "grantDeleted": return e("grant.deleted", { name: NAME });
    case "config": return e("config.verdict", { name: NAME, image: IMAGES[s.image], rules: 1, ok: s.ok, errors: [] });
    case "verdict": return e("signature.verdict", {
      digest: DIGESTS[s.image], image: IMAGES[s.image], outcome: s.outcome, signers: [], identities: [], trustRoot: "r".repeat(64), catalog: "c".repeat(64), rules: 1,
    }, "trust");
    case "previous": return e("previous.observed", { name: NAME, deployed: { image: IMAGES[s.image], manifest: MANIFESTS[s.manifest] } });
  }
}

let dir: string;
let n = 0;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), "openfief-decider-state-")); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function agreeOn(steps: readonly Step[]): Promise<void> {
  const store: EventLog = await openStore({ file: join(dir, `log-${n++}.db`) });
  try {
    let facts: PluginFacts = emptyFacts(NAME);
    const verdicts = new Map<string, VerdictOutcome>();
    for (const s of steps) {
      const fromFold = decideRollout({ ...facts, verdicts });
      const fromLookups = decideRollout((await loadDeciderState(store, NAME)).state);
      expect(fromLookups).toEqual(fromFold);
      const event: NewEvent = s.kind === "decide" ? { stream: STREAM, type: "rollout.decided", actor: "test", data: fromFold } : toEvent(s);
      const [stored] = await store.append([event]);
      if (stored === undefined) throw new Error("nothing appended");
      if (stored.type === "signature.verdict") verdicts.set(verdictKey(stored.data.digest, stored.data.manifest), stored.data.outcome);
      else facts = evolveFacts(facts, stored) ?? facts;
    }
  } finally {
    await store.close();
  }
}

describe("the decider's state", () => {
  it("is the same whether gathered by indexed lookups or by folding the log, at every point of a random log", async () => {
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), agreeOn), { numRuns: 60 });
  });
});
