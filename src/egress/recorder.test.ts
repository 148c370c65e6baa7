import { describe, expect, it } from "vitest";
import type { EgressDecisionRecord } from "./decision.js";
import { BatchingDecisionRecorder, StoreDecisionRecorder } from "./recorder.js";

const d = (host: string): EgressDecisionRecord => ({ plugin: "alpha", host, port: 443, allowed: true, reason: "listed", rules: 1, address: "8.8.4.4" });

describe("BatchingDecisionRecorder", () => {
  it("writes the decisions of one tick in one batch and resolves every caller after it", async () => {
    const batches: EgressDecisionRecord[][] = [];
    const r = new BatchingDecisionRecorder((b) => void batches.push([...b]));
    await Promise.all([r.record(d("a")), r.record(d("b")), r.record(d("c"))]);
    await r.record(d("e"));
    expect(batches.map((b) => b.map((x) => x.host))).toEqual([["a", "b", "c"], ["e"]]);
  });

  it("rejects every caller of a batch whose write fails", async () => {
    const r = new BatchingDecisionRecorder(() => {
      throw new Error("disk full");
    });
    const results = await Promise.allSettled([r.record(d("a")), r.record(d("b"))]);
    expect(results.map((x) => x.status)).toEqual(["rejected", "rejected"]);
  });

  it("resolves only once an asynchronous write has finished", async () => {
    let finished = false;
    const r = new BatchingDecisionRecorder(async () => {
      await new Promise((res) => setTimeout(res, 20));
      finished = true;
    });
    await r.record(d("a"));
    expect(finished).toBe(true);
  });
});

describe("StoreDecisionRecorder", () => {
  it("appends egress.decision events to egress/<plugin> in one call per batch", async () => {
    const calls: unknown[][] = [];
    const r = new StoreDecisionRecorder({ append: async (events) => void calls.push([...events]) });
    await Promise.all([r.record(d("a")), r.record({ plugin: "beta", host: "b", port: 8443, allowed: false, reason: "not_listed", rules: 1 })]);
    expect(calls).toEqual([[
      { stream: "egress/alpha", type: "egress.decision", actor: "egress-proxy", data: { plugin: "alpha", host: "a", port: 443, allowed: true, reason: "listed", rules: 1, address: "8.8.4.4" } },
      { stream: "egress/beta", type: "egress.decision", actor: "egress-proxy", data: { plugin: "beta", host: "b", port: 8443, allowed: false, reason: "not_listed", rules: 1 } },
    ]]);
  });
});
