/**
 * The words every face prints, as tables over every code: each table enumerates the codes where
 * they are defined (the event catalog, the planner's reasons, the blockers, the image check's
 * refusal reasons, the statuses and problems) and fails when one has no words — or words that
 * are only the code again.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createCatalog } from "../events/index.js";
import type { KnownEvent } from "../events/index.js";
import { RolloutReason } from "../plugins/index.js";
import type { JsonValue } from "../plugins/index.js";
import { BLOCKER_CODES } from "../projections/index.js";
import type { Blocker } from "../projections/index.js";
import { REFUSAL_REASONS } from "../trust/index.js";
import { APP_ERRORS } from "./errors.js";
import { BLOCKER_REFUSAL } from "./owner-edits.js";
import { PLUGIN_STATUSES, PROBLEM_CODES } from "./plugins.js";
import type { PluginProblem, SignatureView } from "./plugins.js";
import {
  blockerSubject, blockerText, containerText, DESCRIBED_TYPES, describeEvent, grantChange, objectsOnlyNote, OUTCOME_TEXT, outcomeText, problemText, reasonText,
  refusalText, runtimeText, shortRefs, statusText, verdictCell, verdictHelp, verdictText, verdictWord,
} from "./wording.js";

const V1 = `localhost/openfief-demo/nbp-fx@sha256:${"3".repeat(64)}`;
const V2 = `localhost/openfief-demo/nbp-fx@sha256:${"a".repeat(64)}`;
const MANIFEST = { capabilities: ["connector"], egress: [{ host: "api.nbp.pl", port: 443 }], secrets: [], dataTiers: [] };

let seq = 0;
/** A stored event as the log hands it over (only what a sentence reads is meaningful). */
function ev(type: string, data: unknown, actor = "reconciler"): KnownEvent {
  seq += 1;
  return { seq, stream: "plugin/nbp-fx", version: seq, type, schemaVersion: 1, time: "2026-12-01T12:00:00.000Z", actor, causedBy: null, data, prevHash: "", hash: "" } as KnownEvent;
}

/** Words that are only a code again ("untrusted_signer", "held_back") say nothing. */
function isWords(text: string, code: string): boolean {
  return text.trim() !== "" && text !== code && !/^[a-z]+(_[a-z]+)+$/.test(text);
}

describe("every code has words", () => {
  it("has a sentence for every event type of the catalog, and none for a type it does not define", () => {
    expect([...DESCRIBED_TYPES].sort()).toEqual(createCatalog().types().sort());
  });

  it.each(Object.values(RolloutReason))("words the rollout reason %s", (r) => {
    expect(isWords(reasonText(r), r)).toBe(true);
  });

  it.each([...BLOCKER_CODES])("words the blocker %s and names what it is about", (code) => {
    const samples: Record<Blocker["code"], Blocker> = {
      plugin_missing: { code: "plugin_missing" },
      plugin_deleted: { code: "plugin_deleted" },
      spec_invalid: { code: "spec_invalid", errors: [{ code: "invalid_egress_host", path: "spec.manifest.egress[0].host", message: "not a host name" }] },
      config_verdict_missing: { code: "config_verdict_missing", image: V2 },
      config_mismatch: { code: "config_mismatch", image: V2, errors: [{ code: "config_mismatch", path: "spec.config.startDate", message: "must be string" }] },
      signature_verdict_missing: { code: "signature_verdict_missing", image: V2 },
      signature_refused: { code: "signature_refused", digest: `sha256:${"a".repeat(64)}`, reason: "untrusted_signer" },
    };
    const b = samples[code];
    expect(isWords(blockerText(b), code)).toBe(true);
    expect(["spec", "signature", "config"]).toContain(blockerSubject(b));
  });

  it.each(Object.entries(BLOCKER_REFUSAL))("refuses an approval blocked by %s with the registered code %s", (_blocker, code) => {
    expect(APP_ERRORS[code]).toEqual({ exit: 1, status: 409 });
  });

  it.each([...REFUSAL_REASONS])("words the refusal reason %s as what it means, with the code", (r) => {
    const text = refusalText(r);
    expect(text.endsWith(`(${r})`)).toBe(true);
    expect(isWords(text.slice(0, -(r.length + 2)).trim(), r)).toBe(true);
  });

  it("words each refusal reason differently", () => {
    const texts = REFUSAL_REASONS.map((r) => refusalText(r));
    expect(new Set(texts).size).toBe(texts.length);
  });

  it.each([...PLUGIN_STATUSES])("words the status %s in plain words", (s) => {
    expect(statusText(s)).toMatch(/^[a-z]+( [a-z]+)*$/);
  });

  it("words each status differently", () => {
    expect(new Set(PLUGIN_STATUSES.map(statusText)).size).toBe(PLUGIN_STATUSES.length);
  });

  it.each([...PROBLEM_CODES])("words the problem %s", (code) => {
    const p = (code === "signature_refused" ? { code, reason: "unsigned" } : code === "reconcile_failed" ? { code, error: "boom" } : { code }) as PluginProblem;
    expect(isWords(problemText(p), code)).toBe(true);
  });

  it.each(Object.keys(OUTCOME_TEXT))("words the outcome %s", (o) => {
    expect(isWords(outcomeText(o), o)).toBe(true);
  });

  it("words a plugin not decided yet", () => {
    expect(outcomeText(null)).toBe("not decided yet");
  });
});

describe("the demo's view words an outcome as the CLI and the console do", () => {
  it("holds ledger-view's outcome words equal to the wording module's", () => {
    const app = readFileSync(fileURLToPath(new URL("../../plugins/ledger-view/ui/app.js", import.meta.url)), "utf8");
    const literal = /const OUTCOMES = \{([^}]*)\};/.exec(app)?.[1] ?? "";
    const view = Object.fromEntries([...literal.matchAll(/(\w+): "([^"]*)"/g)].map((m) => [m[1], m[2]]));
    expect(view).toEqual({ ...OUTCOME_TEXT, undecided: outcomeText(null) });
  });
});

describe("a signature verdict reads as what it means", () => {
  const owner = [{ name: "demo-owner", kind: "owner" }];
  it.each<[string, SignatureView | null, string, string, RegExp]>([
    ["a signer you trust, not in the catalog", { outcome: "unverified", reason: null, signers: owner }, "signed by demo-owner, a signer you trust; not in the catalog", "signed by demo-owner", /may run/],
    ["a catalog publisher", { outcome: "verified", reason: null, signers: [{ name: "acme", kind: "publisher" }] }, "signed by acme, the catalog's publisher; in the catalog", "in the catalog (acme)", /catalog entry pins/],
    ["OpenFief's CI", { outcome: "verified", reason: null, signers: [{ name: "ci", kind: "openfief-ci" }] }, "signed by OpenFief's CI; in the catalog", "in the catalog (ci)", /catalog entry pins/],
    ["a refusal", { outcome: "refused", reason: "untrusted_signer", signers: [] }, "refused: it is signed, but by no signer you trust (untrusted_signer)", "refused: untrusted signer", /does not run/],
  ])("words %s", (_what, v, sentence, cell, help) => {
    if (v === null) return;
    expect(verdictText(v)).toBe(sentence);
    expect(verdictCell(v)).toBe(cell);
    expect(verdictHelp(v.outcome)).toMatch(help);
  });

  it("never shows the code unverified, which reads like a failure", () => {
    const v: SignatureView = { outcome: "unverified", reason: null, signers: owner };
    for (const text of [verdictText(v), verdictCell(v), verdictHelp("unverified"), verdictWord("unverified")]) expect(text).not.toMatch(/unverified/);
  });

  it("says a verdict not checked yet as such", () => {
    expect([verdictCell(null), verdictHelp(null)]).toEqual(["not checked yet", expect.stringMatching(/checked at the next reconcile/)]);
  });
});

describe("a grant edit reads as what it changed", () => {
  const grant = (egress: string[], capabilities = ["connector"]): JsonValue => ({ capabilities, egress: egress.map((host) => ({ host, port: 443 })), secrets: [], dataTiers: [] });
  it.each<[string, JsonValue | null, JsonValue | null, string[]]>([
    ["a first grant adds everything", null, grant(["api.nbp.pl"]), ["+capability connector", "+egress api.nbp.pl:443"]],
    ["an approval adds one host", grant(["api.nbp.pl"]), grant(["api.nbp.pl", "static.nbp.pl"]), ["+egress static.nbp.pl:443"]],
    ["a narrowing takes one away", grant(["api.nbp.pl", "static.nbp.pl"]), grant(["api.nbp.pl"]), ["\u2212egress static.nbp.pl:443"]],
    ["a swap shows both", grant(["a.example"], ["connector"]), grant(["a.example"], ["view"]), ["+capability view", "\u2212capability connector"]],
    ["a deletion takes everything away", grant(["api.nbp.pl"]), null, ["\u2212capability connector", "\u2212egress api.nbp.pl:443"]],
    ["the same grant changes nothing", grant(["api.nbp.pl"]), grant(["api.nbp.pl"]), []],
  ])("%s", (_what, before, after, change) => {
    expect(grantChange(before, after)).toEqual(change);
  });

  it.each<[string, KnownEvent, JsonValue | null | undefined, string]>([
    ["an approval in the console", ev("grant.observed", { name: "nbp-fx", spec: grant(["api.nbp.pl", "static.nbp.pl"]) }, "owner:web:root"), grant(["api.nbp.pl"]), "the grant was set by owner:web:root: +egress static.nbp.pl:443"],
    ["a grant applied again unchanged", ev("grant.observed", { name: "nbp-fx", spec: grant(["api.nbp.pl"]) }, "owner:cli"), grant(["api.nbp.pl"]), "the grant was set by owner:cli, changing no permission"],
    ["a grant deleted", ev("grant.deleted", { name: "nbp-fx" }, "owner:cli"), grant(["api.nbp.pl"]), "the grant was deleted by owner:cli: \u2212capability connector, \u2212egress api.nbp.pl:443"],
    ["a grant without what came before", ev("grant.observed", { name: "nbp-fx", spec: grant(["api.nbp.pl"]) }, "cluster"), undefined, "the grant was set by cluster: +capability connector, +egress api.nbp.pl:443"],
  ])("says %s", (_what, e, before, sentence) => {
    expect(describeEvent(e, before === undefined ? {} : { grantBefore: before })).toBe(sentence);
  });
});

describe("a rollout decision reads as what happened", () => {
  const decided = (outcome: string, o: { current?: string | null; previous?: string | null; deployable?: boolean; pending?: string[]; run?: string | null; reasons?: string[] }) => ev("rollout.decided", {
    name: "nbp-fx",
    inputs: { current: o.current === null ? null : { image: o.current ?? V2, manifest: MANIFEST }, currentDeployable: o.deployable ?? true, previous: o.previous === undefined || o.previous === null ? null : { image: o.previous, manifest: MANIFEST }, grant: {} },
    plan: { outcome, run: o.run === null || o.run === undefined ? null : { image: o.run, manifest: MANIFEST, permissions: {} }, pending: { capabilities: [], egress: (o.pending ?? []).map((host) => ({ host, port: 443 })), secrets: [], dataTiers: [] }, reasons: o.reasons ?? [] },
  });
  it.each<[string, KnownEvent, string]>([
    ["the version asked for runs", decided("current", { run: V2 }), `runs ${V2}, the version asked for`],
    ["an upgrade waits for an approval", decided("previous", { previous: V1, run: V1, pending: ["static.nbp.pl"], reasons: ["approval_pending"] }), `keeps ${V1} running under the current grant; ${V2} waits for approval of egress static.nbp.pl:443`],
    ["an upgrade did not pass its checks", decided("previous", { previous: V1, run: V1, deployable: false, reasons: ["current_not_deployable"] }), `keeps ${V1} running under the current grant; ${V2} cannot run: it did not pass its signature or config check`],
    ["the same version keeps running under a narrower grant", decided("previous", { current: V1, previous: V1, run: V1, pending: ["static.nbp.pl"] }), `keeps ${V1} running as it ran before; ${V1} waits for approval of egress static.nbp.pl:443`],
    ["a first install waits", decided("none", { pending: ["api.nbp.pl"], reasons: ["approval_pending", "no_previous_version"] }), `runs nothing; ${V2} waits for approval of egress api.nbp.pl:443`],
    ["a deleted Plugin", decided("none", { current: null, reasons: ["no_current_version", "no_previous_version"] }), "runs nothing: the Plugin asks for no valid version (deleted, or its spec is invalid)"],
  ])("when %s", (_what, e, sentence) => {
    expect(describeEvent(e)).toBe(sentence);
  });

  it("words its signature verdicts and config verdicts by what they found", () => {
    const sig = ev("signature.verdict", { digest: `sha256:${"a".repeat(64)}`, image: V2, outcome: "unverified", signers: [{ name: "demo-owner", kind: "owner" }], identities: [], trustRoot: "r", catalog: "c", rules: 1 });
    const bad = ev("config.verdict", { name: "nbp-fx", image: V2, rules: 1, ok: false, errors: [{ code: "config_mismatch", path: "spec.config.startDate", message: "must be string" }] });
    expect(describeEvent(sig)).toBe(`the signature check of ${V2}: signed by demo-owner, a signer you trust; not in the catalog`);
    expect(describeEvent(bad)).toBe(`the config does not match the schema of ${V2}: spec.config.startDate: must be string`);
  });
});

describe("the embedded mode says what it does with a container plugin", () => {
  it.each<[string, { runtime: "container" | "wasm" | null; module: string | null; target: string | null }, string]>([
    ["in a cluster", { runtime: "container", module: null, target: "kubernetes" }, "container"],
    ["embedded, written to a folder", { runtime: "container", module: null, target: "directory:/data/cluster" }, "objects only"],
    ["a WebAssembly plugin", { runtime: "wasm", module: "1750a4f19745aa", target: "directory:/data/cluster" }, "wasm 1750a4f19745"],
    ["nothing running", { runtime: null, module: null, target: null }, "-"],
  ])("as a table cell %s", (_what, row, cell) => {
    expect(runtimeText(row)).toBe(cell);
  });

  it("says where the objects are written, and that nothing runs them", () => {
    expect(containerText("directory:/data/cluster")).toBe("objects written to /data/cluster (no container runtime in the embedded mode)");
    expect(containerText("kubernetes")).toBe("as a container");
    expect(objectsOnlyNote([{ runtime: "container", module: null, target: "directory:/data/cluster" }])).toBe('RUNTIME "objects only": objects written to /data/cluster (no container runtime in the embedded mode).');
    expect(objectsOnlyNote([{ runtime: "container", module: null, target: "kubernetes" }])).toBeNull();
  });
});

describe("a sentence for a terminal", () => {
  it.each<[string, string, string]>([
    ["shortens an image reference as get plugins does", `keeps ${V1} running`, "keeps nbp-fx@sha256:333333333333 running"],
    ["shortens a bare digest", `refused sha256:${"b".repeat(64)}.`, `refused sha256:${"b".repeat(12)}….`],
    ["keeps what is no digest", "sha256:nothex and more", "sha256:nothex and more"],
  ])("%s", (_what, text, short) => {
    expect(shortRefs(text)).toBe(short);
  });
});
