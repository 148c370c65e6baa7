/**
 * The Merkle tree over the log, kept beside it as tiles (docs/adr/0141): one implementation of
 * {@link LogTree} over the port, so both stores keep the same tree the same way.
 *
 * The tree is extended in batches from the log, never per event inside an append: {@link catchUp}
 * reads the events after the stored size in pages, appends their leaves to an in-memory
 * {@link MerkleTree} resumed from the stored right edge, and writes every tile a batch made or
 * widened together with the new size, by compare-and-set, in one transaction. A crash between two
 * batches leaves tiles and size that agree; the next catch-up resumes from them. Full tiles never
 * change and are cached.
 */
import { Buffer } from "node:buffer";
import {
  encodeEntryBundle, fail, hashFromTile, HASH_SIZE, leafHash, MerkleTree, partialTiles, rightEdge, rootAt, TILE_HEIGHT, TILE_WIDTH, tileCoordinates, TlogErrorCode,
} from "../tlog/index.js";
import type { BundleId, Hash, HashReader, Result, TileId } from "../tlog/index.js";
import type { RawEventRow } from "./chain.js";
import { StoreError, StoreErrorCode } from "./errors.js";
import { chainBytes, GENESIS_HASH } from "./hash.js";
import type { EventLog, LogTree } from "./port.js";
import type { StoredCheckpoint, StoredTile, TreeTable } from "./tables.js";
import { treeHasher } from "./tree-hasher.js";
import type { Extended, LeafFeed } from "./tree-hasher.js";

/** Events read per page while catching up, and leaves per transaction that stores tiles. */
const PAGE = 4_096;
const BATCH = 8_192;
/**
 * Full tiles kept in memory, level 0 apart from the levels above (32 bytes × 256 each: 8 MiB at most
 * each): a proof's many reads of random leaf tiles never push out the few upper tiles every proof reads.
 */
const CACHE_TILES = 1_024;

const key = (level: number, index: number): string => `${level}/${index}`;

/** The tree in memory between catch-ups: its right edge, the hashes of its partial tiles, and the last row's hash. */
interface Resumed {
  tree: MerkleTree;
  /** The hashes of each partial tile of the tree, by level/index. */
  readonly open: Map<string, OpenTile>;
  /** The chain hash of the event at the tree's size (what the next row must link to). */
  lastHash: string;
}

/** A tile being filled: its first `width` hashes, in a buffer that holds all 256. */
type OpenTile = { level: number; index: number; bytes: Buffer; width: number };

const openTile = (level: number, index: number): OpenTile => ({ level, index, bytes: Buffer.allocUnsafe(TILE_WIDTH * HASH_SIZE), width: 0 });

/**
 * Told, by a store that writes them as it appends, the entries (each row's bytes after a 0x00,
 * ending at `ends`) and chain hashes (32 bytes each) of the rows an append of this process
 * committed, from seq `first`: the tree then need not read them back (docs/adr/0146).
 */
export type LeafSink = (first: number, entries: Uint8Array, ends: Uint32Array, hashes: Uint8Array) => void;

/** Appends a row's leaf to the resumed tree; `touched` gets the tiles it changes. */
function appendRow(resumed: Resumed, row: RawEventRow, touched: Map<string, OpenTile>): void {
  appendLeaf(resumed, leafHash(chainBytes(row)), touched);
  resumed.lastHash = row.hash;
}

/** Appends a leaf to the resumed tree; `touched` gets the tiles it changes. */
function appendLeaf(resumed: Resumed, leaf: Hash, touched: Map<string, OpenTile>): void {
  const appended = resumed.tree.append(leaf);
  for (const e of appended.tileEntries) place(resumed, e.tile.level, e.tile.index * TILE_WIDTH + e.position, e.hash, touched);
}

/**
 * Puts hashes (32 bytes each) at positions [first, first + count) of tile level `level`, tile by
 * tile; `touched` gets the tiles they change.
 */
function place(resumed: Resumed, level: number, first: number, hashes: Uint8Array, touched: Map<string, OpenTile>): void {
  const count = hashes.length / HASH_SIZE;
  let i = 0;
  while (i < count) {
    const at = first + i;
    const position = at % TILE_WIDTH;
    const index = (at - position) / TILE_WIDTH;
    const end = Math.min(TILE_WIDTH, position + count - i);
    const k = key(level, index);
    let t = resumed.open.get(k);
    if (t === undefined) resumed.open.set(k, (t = openTile(level, index)));
    t.bytes.set(hashes.subarray(i * HASH_SIZE, (i + end - position) * HASH_SIZE), position * HASH_SIZE);
    t.width = Math.max(t.width, end);
    touched.set(k, t);
    if (end === TILE_WIDTH) resumed.open.delete(k);
    i += end - position;
  }
}

/**
 * Appends leaves to the resumed tree of `size` leaves in one step: the level-0 tiles take the
 * leaves, and the hashing thread gave the new right edge and the nodes of the upper tile levels.
 */
function appendLeaves(resumed: Resumed, size: number, leaves: Uint8Array, r: Extended, touched: Map<string, OpenTile>): void {
  const count = leaves.length / HASH_SIZE;
  const tree = MerkleTree.resume(size + count, r.edge);
  if (!tree.ok) throw new StoreError(StoreErrorCode.Tampered, `the tree cannot grow to ${size + count}: ${tree.error.message}`);
  place(resumed, 0, size, leaves, touched);
  for (const u of r.upper) place(resumed, u.level / TILE_HEIGHT, u.index, u.hash, touched);
  resumed.tree = tree.value;
}

/** {@link LogTree} over a log's port and its tree table. */
export class StoredTree implements LogTree {
  readonly #log: EventLog;
  readonly #table: () => TreeTable;
  readonly #full = new Map<string, Uint8Array>();
  readonly #upper = new Map<string, Uint8Array>();
  /** The widest partial tiles read, by level/index: their first `width` hashes never change. */
  readonly #partial = new Map<string, StoredTile>();
  #resumed: Resumed | null = null;
  /** This process's own appends not yet in the stored tree: their leaves (hashed off this thread) and chain hashes. */
  readonly #own: LeafFeed | null = null;
  /** Catch-ups run one at a time. */
  #running: Promise<unknown> = Promise.resolve();
  readonly hashes: HashReader;

  constructor(log: EventLog, table: () => TreeTable, feed?: (sink: LeafSink) => void) {
    this.#log = log;
    this.#table = table;
    this.hashes = (level, index) => this.#hash(level, index);
    if (feed !== undefined) {
      const own = (this.#own = treeHasher.feed());
      feed((first, entries, ends, hashes) => own.take(first, entries, ends, hashes));
    }
  }

  async size(): Promise<number> {
    return this.#table().size();
  }

  catchUp(toSeq?: number): Promise<number> {
    const run = this.#running.then(() => this.#catchUp(toSeq));
    this.#running = run.catch(() => undefined);
    return run;
  }

  async root(size?: number): Promise<Hash> {
    const stored = await this.size();
    const at = size ?? stored;
    if (!Number.isSafeInteger(at) || at < 0 || at > stored) throw new StoreError(StoreErrorCode.InvalidEvent, `the tree holds ${stored} leaves: no root at ${String(size)}`);
    const r = await rootAt(at, this.hashes);
    if (!r.ok) throw new StoreError(StoreErrorCode.Tampered, `the tree's tiles do not give a root at ${at}: ${r.error.message}`);
    return r.value;
  }

  async tile(tile: TileId): Promise<Uint8Array | null> {
    const stored = await this.#tile(tile.level, tile.index);
    if (stored === null || stored.width < tile.width) return null;
    return stored.width === tile.width ? stored.hashes : stored.hashes.subarray(0, tile.width * HASH_SIZE);
  }

  async entries(bundle: BundleId): Promise<Result<Uint8Array> | null> {
    const first = bundle.index * TILE_WIDTH;
    const rows = await this.#rows(first, first + bundle.width);
    if (rows.length !== bundle.width) return null;
    return encodeEntryBundle(rows.map((r) => chainBytes(r)));
  }

  async entry(seq: number): Promise<Uint8Array | null> {
    if (!Number.isSafeInteger(seq) || seq < 1) return null;
    const [row] = await this.#rows(seq - 1, seq);
    return row === undefined ? null : chainBytes(row);
  }

  async latestCheckpoint(): Promise<StoredCheckpoint | null> {
    return this.#table().latestCheckpoint();
  }

  async checkpointAt(size: number): Promise<StoredCheckpoint | null> {
    return this.#table().checkpointAt(size);
  }

  /** The raw rows of seqs (after, to], in order. */
  async #rows(after: number, to: number): Promise<RawEventRow[]> {
    const out: RawEventRow[] = [];
    for await (const page of this.#log.rawPages({ afterSeq: after, toSeq: to, pageSize: TILE_WIDTH })) out.push(...page);
    return out;
  }

  /**
   * A stored tile (full ones from the cache), or null. With `need`, a partial tile read before that
   * is at least `need` hashes wide is taken from memory too (a node's hash reads no further).
   */
  async #tile(level: number, index: number, need?: number): Promise<StoredTile | null> {
    const k = key(level, index);
    const cached = (level === 0 ? this.#full : this.#upper).get(k);
    if (cached !== undefined) return { level, index, width: TILE_WIDTH, hashes: cached };
    const partial = need === undefined ? undefined : this.#partial.get(k);
    if (partial !== undefined && need !== undefined && partial.width >= need) return partial;
    const [stored] = await this.#table().tiles([{ level, index }]);
    if (stored === undefined) return null;
    if (stored.width === TILE_WIDTH) {
      this.#remember(k, level, stored.hashes);
      this.#partial.delete(k);
    } else if ((this.#partial.get(k)?.width ?? 0) < stored.width) {
      if (this.#partial.size >= CACHE_TILES) this.#partial.delete(this.#partial.keys().next().value as string);
      this.#partial.set(k, stored);
    }
    return stored;
  }

  #remember(k: string, level: number, hashes: Uint8Array): void {
    const cache = level === 0 ? this.#full : this.#upper;
    if (cache.size >= CACHE_TILES) cache.delete(cache.keys().next().value as string);
    cache.set(k, hashes);
  }

  /** A node's hash from the stored tiles. */
  async #hash(level: number, index: number): Promise<Result<Hash>> {
    if (!Number.isSafeInteger(level) || !Number.isSafeInteger(index) || level < 0 || level > 53 || index < 0) {
      return fail(TlogErrorCode.InvalidArgument, "node", `no node (${level}, ${index})`);
    }
    const at = tileCoordinates({ level, index });
    const stored = await this.#tile(at.level, at.index, at.end);
    if (stored === null || stored.width < at.end) return fail(TlogErrorCode.ReadFailed, "node", `node (${level}, ${index}) is past the stored tree`);
    return hashFromTile({ level: at.level, index: at.index, width: stored.width }, stored.hashes, { level, index });
  }

  async #catchUp(toSeq: number | undefined): Promise<number> {
    const table = this.#table();
    const target = toSeq ?? (await this.#log.head());
    for (;;) {
      const size = await table.size();
      if (size >= target) return size;
      const resumed = await this.#resume(size);
      const to = Math.min(target, size + BATCH);
      const touched = new Map<string, OpenTile>();
      await this.#extend(resumed, size, to, touched);
      const tiles: StoredTile[] = [...touched.values()].map((t) => ({ level: t.level, index: t.index, width: t.width, hashes: t.bytes.subarray(0, t.width * HASH_SIZE) }));
      // SQLite answers synchronously: between batches, the process's other work gets its turn.
      await new Promise((r) => setImmediate(r));
      if (await table.advance(size, to, tiles)) {
        for (const t of tiles) if (t.width === TILE_WIDTH) this.#remember(key(t.level, t.index), t.level, t.hashes);
      } else {
        // Another process extended the tree meanwhile: start again from what it stored.
        this.#resumed = null;
      }
    }
  }

  /** Appends the leaves of seqs (size, to] to the resumed tree; `touched` gets every tile they change. */
  async #extend(resumed: Resumed, size: number, to: number, touched: Map<string, OpenTile>): Promise<void> {
    // The rows before this process's own kept appends (another process's, or before the tree asked) are read back.
    const first = this.#own?.first ?? Number.POSITIVE_INFINITY;
    const from = first > size + 1 && first <= to ? first - 1 : size;
    if (from > size) await this.#extendFromRows(resumed, size, from, touched);
    const kept = this.#own === null ? null : await this.#own.extend(from, resumed.tree.edge().map((n) => n.hash), to);
    if (kept !== null) {
      // This process's own appends, written as they were appended: nothing to read back, and the
      // leaves and interior hashes computed on the hashing thread (docs/adr/0146).
      appendLeaves(resumed, from, kept.leaves, kept.extended, touched);
      resumed.lastHash = kept.last;
    } else if (from < to) {
      await this.#extendFromRows(resumed, from, to, touched);
    }
    // Tiles written now are copies: a partial tile keeps growing in memory (a full one never changes again).
    for (const [k, t] of touched) if (t.width < TILE_WIDTH) touched.set(k, { ...t, bytes: Buffer.from(t.bytes.subarray(0, t.width * HASH_SIZE)) });
  }

  async #extendFromRows(resumed: Resumed, size: number, to: number, touched: Map<string, OpenTile>): Promise<void> {
    let expected = size + 1;
    try {
      for await (const page of this.#log.rawPages({ afterSeq: size, toSeq: to, pageSize: PAGE })) {
        for (const row of page) {
          if (row.seq !== expected || row.prevHash !== resumed.lastHash) {
            throw new StoreError(StoreErrorCode.Tampered, `the tree stops at ${expected - 1}: seq ${row.seq} does not follow the row before (the chain is broken there)`);
          }
          appendRow(resumed, row, touched);
          expected++;
        }
      }
      if (expected !== to + 1) throw new StoreError(StoreErrorCode.Tampered, `the tree stops at ${expected - 1}: the log has no event ${expected} (a row was deleted)`);
    } catch (err) {
      this.#resumed = null;
      throw err;
    }
  }

  /** The hashes of the partial tiles of a tree of `size` leaves, read from the stored tiles. */
  async #partialTiles(size: number): Promise<Map<string, OpenTile>> {
    const open = new Map<string, OpenTile>();
    for (const t of partialTiles(size)) {
      const stored = await this.#tile(t.level, t.index);
      if (stored === null || stored.width < t.width) throw new StoreError(StoreErrorCode.Tampered, `the tree's tile ${t.level}/${t.index} is missing or narrower than ${t.width} at size ${size}`);
      const tile = openTile(t.level, t.index);
      tile.bytes.set(stored.hashes.subarray(0, t.width * HASH_SIZE));
      tile.width = t.width;
      open.set(key(t.level, t.index), tile);
    }
    return open;
  }

  /** The in-memory tree at the stored `size`: kept from the last catch-up, or read back from the tiles. */
  async #resume(size: number): Promise<Resumed> {
    if (this.#resumed !== null && this.#resumed.tree.size === size) return this.#resumed;
    this.#resumed = null;
    const edge: Hash[] = [];
    for (const node of rightEdge(size)) {
      const h = await this.#hash(node.level, node.index);
      if (!h.ok) throw new StoreError(StoreErrorCode.Tampered, `the tree's tiles at size ${size} are incomplete: ${h.error.message}`);
      edge.push(h.value);
    }
    const tree = MerkleTree.resume(size, edge);
    if (!tree.ok) throw new StoreError(StoreErrorCode.Tampered, `the tree cannot resume at ${size}: ${tree.error.message}`);
    const open = await this.#partialTiles(size);
    const last = size === 0 ? null : (await this.#rows(size - 1, size))[0];
    if (size > 0 && last === undefined) throw new StoreError(StoreErrorCode.Tampered, `the tree covers ${size} events but the log has no event ${size} (a row was deleted)`);
    this.#resumed = { tree: tree.value, open, lastHash: last?.hash ?? GENESIS_HASH };
    return this.#resumed;
  }
}
