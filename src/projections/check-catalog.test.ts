/**
 * `check-decisions` re-decides the catalog part of signature verdicts from the catalog each cites
 * (docs/adr/0158): a verdict the recorded catalog reproduces passes; one citing another catalog,
 * naming publishers the catalog does not hold, or calling an image verified (or not) against the
 * catalog's word, is a divergence. Each under the signature rules it names (docs/adr/0191): rules
 * this release does not know are reported, and a test-only rules 2 that decides otherwise shows the
 * older verdict apart, as an upgrade's effect. The entries are the project's own catalog (catalog/plugins.json).
 */
import { createHash } from "node:crypto";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { EventLog, SignatureVerdict } from "../events/index.js";
import { SIGNATURE_RULES, withVersion } from "../plugins/index.js";
import type { JsonValue } from "../plugins/index.js";
import { checkDecisions } from "./check-decisions.js";

const TEXT = readFileSync(new URL("../../catalog/plugins.json", import.meta.url), "utf8");
const FILE = JSON.parse(TEXT) as { plugins: { name: string; image: string; publisher: { name: string; publicKey: string } }[] };
const SHA = createHash("sha256").update(TEXT).digest("hex");
const NBP = FILE.plugins.find((p) => p.name === "nbp-fx");
if (NBP === undefined) throw new Error("catalog/plugins.json lists no nbp-fx");
const DIGEST = NBP.image.slice(NBP.image.indexOf("@") + 1);
const RELEASE = { kind: "key", publicKey: NBP.publisher.publicKey };
const OWNER_KEY = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ type: "spki", format: "pem" }).toString();
const OWNER = { kind: "key", publicKey: OWNER_KEY };

let dir: string;
let store: EventLog;
let catalogSeq: number;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-check-catalog-"));
  store = await openStore({ file: join(dir, "log.db") });
  const [c] = await store.append([{ stream: "trust", type: "catalog.observed", actor: "reconciler", data: { sha256: SHA, entries: FILE.plugins as unknown as JsonValue[] } }]);
  catalogSeq = c?.seq ?? 0;
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function verdict(over: Partial<SignatureVerdict> = {}): SignatureVerdict {
  return {
    digest: DIGEST, image: NBP?.image ?? "", outcome: "verified",
    signers: [{ name: "openfief-release", kind: "publisher" }], identities: [RELEASE],
    trustRoot: "a".repeat(64), catalog: SHA, catalogEvent: catalogSeq, rules: 1, ...over,
  };
}

/** Signature rules 2, for this test only: the catalog verifies nothing. */
const SIGNATURE_V2 = withVersion(SIGNATURE_RULES, "test only: the catalog verifies nothing", (catalog, digest, ids) => ({ ...SIGNATURE_RULES.today.decide(catalog, digest, ids), entry: null }));

async function check(v: SignatureVerdict, rules: { signature?: typeof SIGNATURE_V2 } = {}) {
  const [e] = await store.append([{ stream: "trust", type: "signature.verdict", actor: "reconciler", data: v as unknown as JsonValue }]);
  const r = await checkDecisions(store, { rules });
  return { seq: e?.seq, r, found: r.divergences.filter((d) => d.family === "signature").map((d) => [d.field, d.recorded, d.expected]) };
}

describe("the catalog part of a signature verdict, re-decided", () => {
  it("reproduces a verified verdict from the catalog it cites, and counts it", async () => {
    const { r, found } = await check(verdict());
    expect(found).toEqual([]);
    expect([r.checked, r.verdicts]).toEqual([0, 1]);
  });

  it("reproduces an unverified one: signed by the owner only, and a publisher signing a digest the catalog does not pin", async () => {
    expect((await check(verdict({ outcome: "unverified", signers: [{ name: "me", kind: "owner" }], identities: [OWNER] }))).found).toEqual([]);
    expect((await check(verdict({ digest: `sha256:${"e".repeat(64)}`, outcome: "unverified" }))).found).toEqual([]);
  });

  it("finds a verdict citing a catalog event of another SHA-256, or one not recorded before it", async () => {
    expect((await check(verdict({ catalog: "f".repeat(64) }))).found).toEqual([["catalog.event", { catalogEvent: catalogSeq, catalog: "f".repeat(64) }, { catalogEvent: null, catalog: "f".repeat(64) }]]);
    expect((await check(verdict({ catalogEvent: 999 }))).found.at(-1)).toEqual(["catalog.event", { catalogEvent: 999, catalog: SHA }, { catalogEvent: catalogSeq, catalog: SHA }]);
  });

  it("finds a verdict called verified that no publisher of the recorded catalog signed", async () => {
    const { seq, r, found } = await check(verdict({ signers: [{ name: "openfief-release", kind: "publisher" }], identities: [OWNER] }));
    expect(found).toEqual([["catalog.publishers", ["openfief-release"], []], ["catalog.outcome", "verified", "unverified"]]);
    expect(r.divergences.map((d) => [d.seq, d.name, d.family, d.rules])).toContainEqual([seq, NBP?.image, "signature", 1]);
  });

  it("finds a pinned, publisher-signed image recorded as only unverified", async () => {
    expect((await check(verdict({ outcome: "unverified" }))).found).toEqual([["catalog.outcome", "unverified", "verified"]]);
  });

  it("finds a refusal for want of a trusted signer when a publisher of the recorded catalog signed", async () => {
    expect((await check(verdict({ outcome: "refused", reason: "untrusted_signer", signers: [] }))).found).toEqual([["catalog.outcome", "refused (untrusted_signer)", "signed by openfief-release, a publisher of the recorded catalog"]]);
  });

  it("does not re-decide a refusal for a reason the catalog does not decide (the signed label)", async () => {
    expect((await check(verdict({ outcome: "refused", reason: "manifest_mismatch", signers: [] }))).found).toEqual([]);
  });

  it("leaves a verdict that cites no catalog event as it was (recorded before catalogs were)", async () => {
    const { catalogEvent: _c, ...old } = verdict({ outcome: "unverified" });
    const { r, found } = await check(old);
    expect(found).toEqual([]);
    expect(r.verdicts).toBe(0);
  });

  it("reports a verdict naming signature rules this release does not know", async () => {
    expect((await check(verdict({ rules: 9 }))).found).toEqual([["catalog.rules", 9, "rules 1 to 1"]]);
  });

  it("shows a verified verdict that today's rules would leave unverified apart, as an upgrade's effect, not a divergence", async () => {
    const { seq, r, found } = await check(verdict(), { signature: SIGNATURE_V2 });
    expect(found).toEqual([]);
    expect(r.verdictRules.signature).toEqual({ today: 2, decisions: { 1: 1 } });
    expect(r.upgrades).toEqual([{ seq, name: NBP?.image, family: "signature", rules: 1, today: 2, field: "catalog.outcome", before: "verified", after: "unverified" }]);
    // Under rules 2 it would have been unverified: recorded so, it reproduces; recorded verified, it diverges.
    expect((await check(verdict({ rules: 2, outcome: "unverified" }), { signature: SIGNATURE_V2 })).found).toEqual([]);
    expect((await check(verdict({ rules: 2 }), { signature: SIGNATURE_V2 })).found).toEqual([["catalog.outcome", "verified", "unverified"]]);
  });
});
