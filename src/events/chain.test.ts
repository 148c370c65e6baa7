import { describe, expect, it } from "vitest";
import { chainBatch, ChainWalk, walkFrom } from "./chain.js";
import type { RawEventRow } from "./chain.js";
import { catalog } from "./catalog.js";
import { GENESIS_HASH, rowHash } from "./hash.js";
import { BatchPreparer } from "./prepare.js";

const prepared = new BatchPreparer(catalog).prepare([
  { stream: "plugin/echo", type: "plugin.observed", actor: "cluster", data: { spec: { b: 1, a: 2 }, name: "echo" } },
  { stream: "egress/echo", type: "egress.decision", actor: "egress", data: { plugin: "echo", host: "h", port: 443, allowed: true, reason: "listed", rules: 1 }, causedBy: 1 },
  { stream: "plugin/echo", type: "plugin.deleted", actor: "cluster", data: { name: "echo" } },
]);

function rows(): RawEventRow[] {
  return chainBatch(prepared, { seq: 0, hash: GENESIS_HASH }, new Map(), "2026-01-01T00:00:00.000Z").rows;
}

describe("chaining a batch", () => {
  it("gives seqs after the head, versions after each stream's, links and hashes of the canonical text", () => {
    const versions = new Map([["plugin/echo", 4]]);
    const { rows: r, events } = chainBatch(prepared, { seq: 10, hash: "a".repeat(64) }, versions, "2026-01-01T00:00:00.000Z");
    expect(r.map((x) => [x.seq, x.stream, x.version])).toEqual([[11, "plugin/echo", 5], [12, "egress/echo", 1], [13, "plugin/echo", 6]]);
    expect(r[0]?.prevHash).toBe("a".repeat(64));
    expect(r[0]?.data).toBe('{"name":"echo","spec":{"a":2,"b":1}}');
    for (const x of r) expect(x.hash).toBe(rowHash(x));
    expect(r[1]?.prevHash).toBe(r[0]?.hash);
    expect(events.map((e) => e.data)).toEqual([{ name: "echo", spec: { a: 2, b: 1 } }, expect.objectContaining({ host: "h" }), { name: "echo" }]);
    expect(versions.get("plugin/echo")).toBe(6);
  });

  it("refuses a cause that is not an earlier seq", () => {
    const [bad] = new BatchPreparer(catalog).prepare([{ stream: "plugin/echo", type: "plugin.deleted", actor: "c", data: { name: "echo" }, causedBy: 3 }]);
    expect(() => chainBatch([bad!], { seq: 2, hash: GENESIS_HASH }, new Map(), "t")).toThrow(/causedBy 3/);
  });
});

describe("walking the chain", () => {
  it.each<[string, (r: RawEventRow[]) => RawEventRow[], number | null, RegExp | null]>([
    ["holds as written", (r) => r, null, null],
    ["names a row whose data changed", (r) => r.map((x) => (x.seq === 2 ? { ...x, data: x.data.replace("443", "444") } : x)), 2, /edited/],
    ["names the row after a deleted one", (r) => r.filter((x) => x.seq !== 2), 3, /gap/],
    ["names a row linked to another", (r) => r.map((x) => (x.seq === 3 ? { ...x, prevHash: GENESIS_HASH } : x)), 3, /prev_hash/],
  ])("%s", (_what, change, seq, reason) => {
    const walk = new ChainWalk();
    const broke = change(rows()).map((x) => walk.step(x)).find((b) => b !== null) ?? null;
    expect(broke === null ? null : broke.seq).toBe(seq);
    if (reason !== null) expect(broke?.reason).toMatch(reason);
    else expect(walk.result()).toEqual({ ok: true, count: 3 });
  });

  it("starts from a verified point only when its row still has the hash it had", () => {
    const r = rows();
    const at2 = r[1] as RawEventRow;
    expect(walkFrom({ seq: 2, hash: at2.hash }, undefined)).toMatchObject({ ok: false, seq: 2, reason: expect.stringMatching(/gone/) });
    expect(walkFrom({ seq: 2, hash: "f".repeat(64) }, at2)).toMatchObject({ ok: false, seq: 2, reason: expect.stringMatching(/rewritten/) });
    const walk = walkFrom({ seq: 2, hash: at2.hash }, at2);
    expect(walk).toBeInstanceOf(ChainWalk);
    const w = walk as ChainWalk;
    expect([w.step(at2), w.step(r[2] as RawEventRow)]).toEqual([null, null]);
    expect([w.count, w.point]).toEqual([3, { seq: 3, hash: r[2]?.hash }]);
  });
});
