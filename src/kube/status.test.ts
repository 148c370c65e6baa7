import { describe, expect, it } from "vitest";
import { EMPTY_PENDING } from "../plugins/index.js";
import type { Pending } from "../plugins/index.js";
import { keepTransitionTimes, pluginStatus, reasonFromCode } from "./status.js";
import type { Condition, SignatureState } from "./status.js";

const NOW = "2026-11-01T10:00:00Z";
const IMAGE = `ghcr.io/acme/nbp-fx@sha256:${"a".repeat(64)}`;
const PENDING_HOST: Pending = { capabilities: [], egress: [{ host: "api.example.com", port: 443 }], secrets: ["creds"], dataTiers: [] };

function condition(status: ReturnType<typeof pluginStatus>, type: Condition["type"]): Condition | undefined {
  return status.conditions.find((c) => c.type === type);
}

describe("pluginStatus", () => {
  it.each<[string, SignatureState, Condition["status"], string]>([
    ["a catalog-pinned image is verified", { kind: "verified", signer: "acme" }, "True", "Verified"],
    ["an image signed by a trusted signer only is signed, not verified", { kind: "signed" }, "True", "Signed"],
    ["an unsigned image is refused with its code as the reason", { kind: "refused", code: "unsigned" }, "False", "Unsigned"],
    ["an untrusted signer is refused", { kind: "refused", code: "untrusted_signer" }, "False", "UntrustedSigner"],
    ["a manifest mismatch is refused", { kind: "refused", code: "manifest_mismatch" }, "False", "ManifestMismatch"],
    ["an image not yet checked is unknown", { kind: "unknown" }, "Unknown", "NotChecked"],
  ])("%s", (_name, signature, status, reason) => {
    const s = pluginStatus({ generation: 3, deployed: null, pending: EMPTY_PENDING, signature, now: NOW });
    expect(condition(s, "SignatureVerified")).toMatchObject({ status, reason, observedGeneration: 3 });
  });

  it.each<[string, Pending, Condition["status"], string | null]>([
    ["nothing pending means no approval is required", EMPTY_PENDING, "False", null],
    ["a new host and Secret require approval and are listed", PENDING_HOST, "True", "egress api.example.com:443; secrets creds"],
    ["a missing capability requires approval", { ...EMPTY_PENDING, capabilities: ["view"] }, "True", "capabilities view"],
    ["a new data tier requires approval", { ...EMPTY_PENDING, dataTiers: ["t1"] }, "True", "data tiers t1"],
  ])("%s", (_name, pending, status, listed) => {
    const s = pluginStatus({ generation: 1, deployed: null, pending, signature: { kind: "signed" }, now: NOW });
    const c = condition(s, "ApprovalRequired");
    expect(c?.status).toBe(status);
    if (listed === null) expect(s.pendingApproval).toBeNull();
    else {
      expect(c?.message).toContain(listed);
      expect(s.pendingApproval).toEqual({
        capabilities: [...pending.capabilities],
        egress: pending.egress.map((h) => ({ ...h })),
        secrets: [...pending.secrets],
        dataTiers: [...pending.dataTiers],
      });
    }
  });

  it("reports the running image as deployed and the generation it looked at", () => {
    const s = pluginStatus({ generation: 7, deployed: { image: IMAGE }, pending: PENDING_HOST, signature: { kind: "signed" }, now: NOW });
    expect(s.deployed).toEqual({ image: IMAGE });
    expect(s.observedGeneration).toBe(7);
  });

  it("keeps a condition's transition time while its status stays the same and stamps a new one when it changes", () => {
    const first = pluginStatus({ generation: 1, deployed: null, pending: PENDING_HOST, signature: { kind: "signed" }, now: "2026-01-01T00:00:00Z" });
    const later = pluginStatus({ generation: 2, deployed: null, pending: EMPTY_PENDING, signature: { kind: "signed" }, now: NOW, previous: first.conditions });
    expect(condition(later, "SignatureVerified")?.lastTransitionTime).toBe("2026-01-01T00:00:00Z");
    expect(condition(later, "ApprovalRequired")?.lastTransitionTime).toBe(NOW);
  });

  it.each([
    ["unsigned", "Unsigned"],
    ["no_capability_granted", "NoCapabilityGranted"],
    ["9lives", "Refused9lives"],
  ])("turns the error code %s into the condition reason %s", (code, reason) => {
    expect(reasonFromCode(code)).toBe(reason);
  });
});

describe("keepTransitionTimes", () => {
  const EARLIER = "2026-01-01T00:00:00Z";
  const held = pluginStatus({ generation: 2, deployed: { image: IMAGE }, pending: PENDING_HOST, signature: { kind: "signed" }, now: EARLIER });
  const again = pluginStatus({ generation: 2, deployed: { image: IMAGE }, pending: PENDING_HOST, signature: { kind: "signed" }, now: NOW });
  const approved = pluginStatus({ generation: 2, deployed: { image: IMAGE }, pending: EMPTY_PENDING, signature: { kind: "signed" }, now: NOW });

  it("makes a status derived again from the same facts equal to the one the cluster holds", () => {
    expect(keepTransitionTimes(again, JSON.parse(JSON.stringify(held)))).toEqual(held);
  });

  it.each<[string, unknown]>([
    ["no status yet", undefined],
    ["a status without conditions", { observedGeneration: 1 }],
    ["conditions that are not a list", { conditions: "x" }],
  ])("stamps the new time when the cluster holds %s", (_name, current) => {
    expect(keepTransitionTimes(again, current)).toEqual(again);
  });

  it("keeps the time of the unchanged condition and stamps the one whose status changed", () => {
    const s = keepTransitionTimes(approved, JSON.parse(JSON.stringify(held)));
    expect(condition(s, "SignatureVerified")?.lastTransitionTime).toBe(EARLIER);
    expect(condition(s, "ApprovalRequired")).toMatchObject({ status: "False", lastTransitionTime: NOW });
  });
});
