import { describe, expect, it } from "vitest";
import { parseImageRef } from "../plugins/index.js";
import type { ImageVerdict } from "./image-check.js";
import { ImageSourceError } from "./oci.js";
import { ImageVerifier } from "./verifier.js";

const ref = parseImageRef(`127.0.0.1:5000/p@sha256:${"cd".repeat(32)}`);
if (!ref.ok) throw new Error("bad ref");
const image = ref.value;

function verdict(outcome: ImageVerdict["outcome"]): ImageVerdict {
  return { image: image.toString(), digest: image.digest, outcome, signers: [], identities: [], rejectedBundles: [], ...(outcome === "refused" ? { reason: "unsigned" } : {}) };
}

describe("the verifier cache", () => {
  it("checks an admitted digest once and records it once", async () => {
    let calls = 0;
    const recorded: ImageVerdict[] = [];
    const v = new ImageVerifier({ check: async () => (calls++, verdict("unverified")), clock: () => 0, onVerdict: (x) => void recorded.push(x) });
    await v.verify(image);
    await v.verify(image);
    expect(calls).toBe(1);
    expect(recorded).toHaveLength(1);
  });

  it("keeps the last verdict while unreachable and retries only once a minute has passed", async () => {
    let now = 0;
    let reachable = true;
    let calls = 0;
    const v = new ImageVerifier({
      check: async () => {
        calls++;
        if (!reachable) throw new ImageSourceError("unreachable", "down");
        return verdict("refused");
      },
      clock: () => now,
    });
    expect((await v.verify(image)).verdict.outcome).toBe("refused");
    reachable = false;
    now = 59_999;
    await v.verify(image);
    expect(calls).toBe(1);
    now = 60_000;
    const kept = await v.verify(image);
    expect(calls).toBe(2);
    expect(kept).toMatchObject({ verdict: { outcome: "refused", reason: "unsigned" }, stale: true, retryAt: 120_000, checkedAt: 0 });
  });

  it("refuses an image it never reached (fail closed)", async () => {
    const v = new ImageVerifier({ check: async () => Promise.reject(new ImageSourceError("unreachable", "down")), clock: () => 5 });
    expect(await v.verify(image)).toMatchObject({ verdict: { outcome: "refused", reason: "unreachable" }, retryAt: 60_005 });
  });
});
