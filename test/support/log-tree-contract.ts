/**
 * The Merkle tree over the log, as part of the event log's contract (event-log-contract.ts runs it
 * for every store): the stored tree equals an independent computation over every event's chain
 * bytes, its tiles survive a reopen and are shared by every handle on the log, and signed
 * checkpoints are stored once per size with the event that records them.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { TestContext } from "vitest";
import type { RawEventRow } from "../../src/events/chain.js";
import type { EventLog } from "../../src/events/port.js";
import { writeCheckpoint } from "../../src/events/tree-checkpoints.js";
import {
  formatHash, noteSignerFromSeed, openCheckpoint, parseTile, proveConsistency, proveInclusion, rootOf, TILE_WIDTH, tilesToPublish, verifyConsistency, verifyInclusion,
  decodeEntryBundle,
} from "../../src/tlog/index.js";
import type { Ed25519NoteSigner, Hash } from "../../src/tlog/index.js";
import type { NewEvent } from "../../src/events/types.js";
import { egressDecision, pluginObserved } from "../events/helpers.js";

type Open = () => Promise<EventLog>;
type Reopen = (log: EventLog) => Promise<EventLog>;

/** A fixed test key (never a real one). */
export const TEST_LOG_SIGNER: Ed25519NoteSigner = (() => {
  const s = noteSignerFromSeed("example.com/openfief-test", new Uint8Array(32).fill(7));
  if (!s.ok) throw new Error(s.error.message);
  return s.value;
})();

/** The bytes the chain hashes for a row, written out here again (not the store's function). */
function entryOf(r: RawEventRow): Buffer {
  return Buffer.from(`${JSON.stringify([r.prevHash, r.seq, r.stream, r.version, r.type, r.schemaVersion, r.time, r.actor, r.causedBy])}\n${r.data}`, "utf8");
}

/** Every event's leaf hash, computed here from the raw rows: SHA-256(0x00 ‖ entry). */
export async function independentLeaves(log: EventLog): Promise<Hash[]> {
  const out: Hash[] = [];
  for await (const page of log.rawPages({ pageSize: 1000 })) {
    for (const r of page) {
      const h = createHash("sha256");
      h.update(Uint8Array.of(0));
      h.update(entryOf(r));
      out.push(new Uint8Array(h.digest()) as Hash);
    }
  }
  return out;
}

function treeOf(log: EventLog, ctx: TestContext): EventLog["tree"] {
  const tree = log.tree as EventLog["tree"] | undefined;
  if (tree === undefined) ctx.skip("this log keeps no tree");
  return tree;
}

/** `n` events in batches of 1 to 97. */
async function appendMany(log: EventLog, n: number): Promise<void> {
  let made = 0;
  for (let b = 1; made < n; b = (b * 7) % 97 + 1) {
    const batch: NewEvent[] = [];
    for (let i = 0; i < b && made < n; i++, made++) batch.push(made % 5 === 0 ? pluginObserved(`p${made}`) : egressDecision("echo"));
    await log.append(batch);
  }
}

const codeOf = async (p: Promise<unknown>): Promise<unknown> => p.then(() => "no error", (err: unknown) => (err as { code?: unknown }).code);

/** The tree's part of the contract, on logs that `open` and `reopen` give (closed by the caller's suite). */
export function describeLogTree(open: Open, reopen: Reopen, asOwner: (log: EventLog, sql: string) => Promise<void>): void {
  describe("the Merkle tree over the log", () => {
    it("is empty for an empty log, and covers every event once caught up", async (ctx) => {
      const log = await open();
      const tree = treeOf(log, ctx);
      expect(await tree.catchUp()).toBe(0);
      expect(formatHash(await tree.root())).toBe(formatHash(rootOf([])));
      await appendMany(log, 600);
      expect(await tree.size()).toBe(0);
      expect(await tree.catchUp(300)).toBe(300);
      expect(await tree.catchUp()).toBe(600);
      const leaves = await independentLeaves(log);
      for (const n of [1, 2, 255, 256, 257, 300, 511, 512, 513, 600]) {
        expect(formatHash(await tree.root(n)), `root at ${n}`).toBe(formatHash(rootOf(leaves.slice(0, n))));
      }
      expect(await codeOf(tree.root(601))).toBe("invalid_event");
    });

    it("covers every event when appends keep arriving while it catches up over many batches", async (ctx) => {
      const log = await open();
      const tree = treeOf(log, ctx);
      // More than two catch-up transactions' worth (8,192 leaves each), appended while catch-ups run.
      const catchUps: Promise<number>[] = [];
      for (const n of [5_000, 7_000, 6_000, 1]) {
        await appendMany(log, n);
        catchUps.push(tree.catchUp());
      }
      await Promise.all(catchUps);
      expect(await tree.catchUp()).toBe(18_001);
      const leaves = await independentLeaves(log);
      for (const n of [5_000, 8_192, 12_000, 16_384, 18_000, 18_001]) {
        expect(formatHash(await tree.root(n)), `root at ${n}`).toBe(formatHash(rootOf(leaves.slice(0, n))));
      }
    });

    it("keeps tiles of height 8 that hold the leaves and the roots of full tiles", async (ctx) => {
      const log = await open();
      const tree = treeOf(log, ctx);
      await appendMany(log, 700);
      await tree.catchUp();
      const leaves = await independentLeaves(log);
      for (const t of tilesToPublish(0, 700)) {
        const bytes = await tree.tile(t);
        expect(bytes, `tile ${t.level}/${t.index}`).not.toBeNull();
        const hashes = parseTile(bytes as Uint8Array, t.width);
        if (!hashes.ok) throw new Error(hashes.error.message);
        const want = t.level === 0
          ? leaves.slice(t.index * TILE_WIDTH, t.index * TILE_WIDTH + t.width)
          : Array.from({ length: t.width }, (_, i) => rootOf(leaves.slice((t.index * TILE_WIDTH + i) * TILE_WIDTH, (t.index * TILE_WIDTH + i + 1) * TILE_WIDTH)));
        expect(hashes.value.map(formatHash)).toEqual(want.map(formatHash));
      }
      // A narrower partial tile is a prefix; a wider one than the tree holds is not there.
      expect(await tree.tile({ level: 0, index: 2, width: 100 })).toEqual((await tree.tile({ level: 0, index: 2, width: 188 }))?.subarray(0, 100 * 32));
      expect(await tree.tile({ level: 0, index: 2, width: 189 })).toBeNull();
      expect(await tree.tile({ level: 0, index: 3, width: 256 })).toBeNull();
      // Entry bundles are the events' chain bytes.
      const bundle = await tree.entries({ index: 1, width: 256 });
      if (bundle === null || !bundle.ok) throw new Error("no bundle");
      const entries = decodeEntryBundle(bundle.value, 256);
      if (!entries.ok) throw new Error(entries.error.message);
      const rows: RawEventRow[] = [];
      for await (const page of log.rawPages({ afterSeq: 256, toSeq: 512 })) rows.push(...page);
      expect(entries.value.map((e) => Buffer.from(e).toString("utf8"))).toEqual(rows.map((r) => entryOf(r).toString("utf8")));
      expect(await tree.entries({ index: 2, width: 256 })).toBeNull();
      expect(Buffer.from((await tree.entry(300)) ?? []).toString("utf8")).toBe(entryOf(rows[300 - 257] as RawEventRow).toString("utf8"));
      expect(await tree.entry(701)).toBeNull();
    });

    it("gives inclusion and consistency proofs that verify against the independent roots", async (ctx) => {
      const log = await open();
      const tree = treeOf(log, ctx);
      await appendMany(log, 520);
      await tree.catchUp();
      const leaves = await independentLeaves(log);
      for (const [index, size] of [[0, 1], [0, 520], [255, 256], [256, 520], [519, 520], [300, 400]] as const) {
        const proof = await proveInclusion(index, size, tree.hashes);
        if (!proof.ok) throw new Error(proof.error.message);
        expect(verifyInclusion(leaves[index] as Hash, index, size, proof.value, rootOf(leaves.slice(0, size))).ok).toBe(true);
      }
      for (const [from, to] of [[1, 520], [256, 257], [300, 520], [511, 513]] as const) {
        const proof = await proveConsistency(from, to, tree.hashes);
        if (!proof.ok) throw new Error(proof.error.message);
        expect(verifyConsistency(from, to, rootOf(leaves.slice(0, from)), rootOf(leaves.slice(0, to)), proof.value).ok).toBe(true);
      }
    });

    it("resumes after a reopen from the stored tiles, and every handle on the log extends one tree", async (ctx) => {
      const log = await open();
      treeOf(log, ctx);
      await appendMany(log, 270);
      await log.tree.catchUp(260);
      const other = await reopen(log);
      expect(await other.tree.size()).toBe(260);
      await appendMany(other, 400);
      // Both catch up at once: each batch is stored by one of them, and both see the same tree.
      const [a, b] = await Promise.all([log.tree.catchUp(), other.tree.catchUp()]);
      expect([a, b]).toEqual([670, 670]);
      await appendMany(log, 30);
      expect(await other.tree.catchUp()).toBe(700);
      expect(await log.tree.catchUp()).toBe(700);
      const want = formatHash(rootOf(await independentLeaves(log)));
      expect(formatHash(await log.tree.root())).toBe(want);
      expect(formatHash(await other.tree.root())).toBe(want);
    });

    it("signs checkpoints stored once per size with the event that records them, and a quiet log writes none", async (ctx) => {
      const log = await open();
      const tree = treeOf(log, ctx);
      expect(await writeCheckpoint(log, TEST_LOG_SIGNER)).toBeNull();
      await appendMany(log, 10);
      const first = await writeCheckpoint(log, TEST_LOG_SIGNER);
      expect(first).toMatchObject({ size: 10, seq: 11 });
      const opened = openCheckpoint((first as { note: string }).note, [TEST_LOG_SIGNER.verifier]);
      if (!opened.ok) throw new Error(opened.error.message);
      expect(opened.value.checkpoint).toMatchObject({ origin: "example.com/openfief-test", size: 10 });
      expect(formatHash(opened.value.checkpoint.root)).toBe(formatHash(rootOf((await independentLeaves(log)).slice(0, 10))));
      const event = await log.get(11);
      expect(event).toMatchObject({ stream: "log", type: "log.checkpoint", actor: "log", data: { origin: "example.com/openfief-test", size: 10, root: first?.root, note: first?.note } });
      // Its own record is all that is new: nothing to sign.
      expect(await writeCheckpoint(log, TEST_LOG_SIGNER)).toEqual(first);
      expect(await log.head()).toBe(11);
      // Another event: the next checkpoint covers the record of the first too.
      await log.append([pluginObserved("late")]);
      expect(await writeCheckpoint(log, TEST_LOG_SIGNER)).toMatchObject({ size: 12, seq: 13 });
      expect(await tree.latestCheckpoint()).toMatchObject({ size: 12, seq: 13 });
      expect(await tree.checkpointAt(10)).toEqual(first);
      // Never two for one size.
      expect(await log.tables.tree.addCheckpoint({ size: 10, root: formatHash(rootOf([])), note: "x" }, {
        stream: "log", type: "log.checkpoint", actor: "log", data: { origin: "o", size: 10, root: formatHash(rootOf([])), note: "x" },
      })).toBeNull();
      expect(await tree.checkpointAt(10)).toEqual(first);
      expect(await log.head()).toBe(13);
    });

    it("refuses to sign over tiles changed behind its back", async (ctx) => {
      const log = await open();
      treeOf(log, ctx);
      await appendMany(log, 600);
      expect(await writeCheckpoint(log, TEST_LOG_SIGNER)).toMatchObject({ size: 600 });
      // The level-1 tile's two hashes replaced by two leaf hashes, as someone holding the database could.
      await asOwner(log, "UPDATE tlog_tiles SET hashes = (SELECT substr(t.hashes, 1, 64) FROM tlog_tiles t WHERE t.level = 0 AND t.idx = 1) WHERE level = 1 AND idx = 0");
      const other = await reopen(log);
      await other.append([pluginObserved("after")]);
      expect(await codeOf(writeCheckpoint(other, TEST_LOG_SIGNER))).toBe("tampered");
      expect(await other.tree.latestCheckpoint()).toMatchObject({ size: 600 });
    });

    it("signs the same checkpoint from two handles at once, storing it once", async (ctx) => {
      const log = await open();
      treeOf(log, ctx);
      await appendMany(log, 40);
      const other = await reopen(log);
      const [a, b] = await Promise.all([writeCheckpoint(log, TEST_LOG_SIGNER), writeCheckpoint(other, TEST_LOG_SIGNER)]);
      expect(a).toEqual(b);
      expect((await log.read({ type: "log.checkpoint" })).length).toBe(1);
    });
  });
}
