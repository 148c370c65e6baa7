import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openStore } from "../events/index.js";
import type { ImageVerdict } from "./image-check.js";
import { VerdictRecorder, storeVerdictLog } from "./verdict-recorder.js";

const DIGEST = `sha256:${"ab".repeat(32)}`;
const inputs = { trustRoot: "6494e21e", catalog: "c0ffee" };

function verdict(outcome: ImageVerdict["outcome"], reason?: string): ImageVerdict {
  return {
    image: `127.0.0.1:5000/p@${DIGEST}`,
    digest: DIGEST,
    outcome,
    ...(reason === undefined ? {} : { reason }),
    signers: outcome === "refused" ? [] : [{ name: "me", kind: "owner" }],
    identities: [{ kind: "key", publicKey: "-----BEGIN PUBLIC KEY-----\nAA==\n-----END PUBLIC KEY-----\n" }],
    rejectedBundles: [],
  };
}

describe("recording signature verdicts", () => {
  it("appends a changed verdict and skips an unchanged one, across a reopen", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "openfief-verdicts-")), "events.db");
    const store = await openStore({ file, clock: () => new Date("2026-01-01T00:00:00Z") });
    const recorder = new VerdictRecorder(storeVerdictLog(store), inputs);
    expect(await recorder.record(verdict("refused", "unsigned"))).toBe(1);
    expect(await recorder.record(verdict("refused", "unsigned"))).toBeUndefined();
    expect(await recorder.record(verdict("unverified"))).toBe(2);
    await store.close();

    const reopened = await openStore({ file });
    const again = new VerdictRecorder(storeVerdictLog(reopened), inputs);
    expect(await again.record(verdict("unverified"))).toBeUndefined();
    expect(await new VerdictRecorder(storeVerdictLog(reopened), { ...inputs, catalog: "changed" }).record(verdict("unverified"))).toBe(3);
    const events = await reopened.read({ stream: "trust", type: "signature.verdict" });
    expect(events.map((e) => (e.data as { outcome: string }).outcome)).toEqual(["refused", "unverified", "unverified"]);
    expect(events[0]?.data).toMatchObject({ digest: DIGEST, outcome: "refused", reason: "unsigned", signers: [], trustRoot: "6494e21e", catalog: "c0ffee" });
    expect(await reopened.verify()).toMatchObject({ ok: true });
    await reopened.close();
  });
});
