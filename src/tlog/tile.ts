/**
 * C2SP tlog-tiles: the tree served as static files. A tile at level L and index N holds up to 256
 * consecutive hashes of tree level 8·L, from index 256·N; level 0 holds the leaf hashes, and each
 * hash of level L ≥ 1 is the root of a full tile of level L - 1. The rightmost tiles of a tree are
 * partial (1 to 255 hashes) and named `.p/<width>`. Entry bundles hold the entries themselves, in
 * the layout of level 0, each as a big-endian uint16 length then its bytes.
 */
import { Buffer } from "node:buffer";
import { isIndex, shr } from "./bits.js";
import { HASH_SIZE, nodeHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { fail, ok, TlogErrorCode } from "./errors.js";
import type { Result } from "./errors.js";
import type { NodeId, TreeNode } from "./tree.js";

/** Tree levels per tile level: a tile is a subtree of height 8. */
export const TILE_HEIGHT = 8;
/** Hashes in a full tile (and entries in a full bundle). */
export const TILE_WIDTH = 256;
/** The highest tile level a path may name. */
export const MAX_TILE_LEVEL = 63;
/** The largest entry an entry bundle can hold (its length is a uint16). */
export const MAX_ENTRY_SIZE = 0xffff;

/** A tile of hashes. `width` is 256 for a full tile, 1 to 255 for a partial one. */
export interface TileId {
  readonly level: number;
  readonly index: number;
  readonly width: number;
}

/** An entry bundle: the entries whose leaf hashes are level-0 tile `index`. */
export interface BundleId {
  readonly index: number;
  readonly width: number;
}

/** What a tile path names. */
export type TileRef = { readonly kind: "hashes"; readonly tile: TileId } | { readonly kind: "entries"; readonly bundle: BundleId };

/** A hash that belongs in a tile, as an append reports it. */
export interface TileEntry {
  readonly tile: { readonly level: number; readonly index: number };
  /** Its place in the tile, 0 to 255: the tile is now `position + 1` hashes wide. */
  readonly position: number;
  readonly hash: Hash;
  /** This hash is the tile's 256th: the tile is full and will not change again. */
  readonly completesTile: boolean;
}

/** Where a tree node's hash is found: tile level and index, and the hash positions it spans. */
export interface TileCoordinates {
  readonly level: number;
  readonly index: number;
  /** The node's hash is the root of the tile's hashes at positions `[start, end)`. */
  readonly start: number;
  readonly end: number;
}

/** The tile entry a node is, when its level is a tile level (0, 8, 16, …); `null` otherwise. */
export function tileEntryFor(node: TreeNode): TileEntry | null {
  if (node.level % TILE_HEIGHT !== 0) return null;
  const position = node.index % TILE_WIDTH;
  return {
    tile: { level: node.level / TILE_HEIGHT, index: (node.index - position) / TILE_WIDTH },
    position,
    hash: node.hash,
    completesTile: position === TILE_WIDTH - 1,
  };
}

/** The tile that holds (or, for levels between tile levels, lets one compute) a node's hash. */
export function tileCoordinates(node: NodeId): TileCoordinates {
  const level = Math.floor(node.level / TILE_HEIGHT);
  const span = 2 ** (node.level - level * TILE_HEIGHT);
  const first = node.index * span;
  const start = first % TILE_WIDTH;
  return { level, index: (first - start) / TILE_WIDTH, start, end: start + span };
}

/** The width of tile (level, index) in a tree of `size` leaves: 256 when full, 0 when it does not exist. */
export function tileWidth(size: number, level: number, index: number): number {
  const hashes = shr(size, TILE_HEIGHT * level);
  const before = index * TILE_WIDTH;
  return hashes <= before ? 0 : Math.min(TILE_WIDTH, hashes - before);
}

/**
 * The tiles to write when the tree grows from `oldSize` to `newSize` leaves: every tile that is new
 * or wider, full or partial. From 0, every tile of the tree. Entry bundles follow level 0.
 */
export function tilesToPublish(oldSize: number, newSize: number): TileId[] {
  const tiles: TileId[] = [];
  for (let level = 0; shr(newSize, TILE_HEIGHT * level) > 0; level++) {
    const oldHashes = shr(oldSize, TILE_HEIGHT * level);
    const newHashes = shr(newSize, TILE_HEIGHT * level);
    if (oldHashes >= newHashes) continue;
    const full = shr(newHashes, TILE_HEIGHT);
    for (let index = shr(oldHashes, TILE_HEIGHT); index < full; index++) tiles.push({ level, index, width: TILE_WIDTH });
    const width = newHashes % TILE_WIDTH;
    if (width > 0) tiles.push({ level, index: full, width });
  }
  return tiles;
}

/** The partial tiles of a tree of `size` leaves (at most one per level): what a checkpoint at that size needs served. */
export function partialTiles(size: number): TileId[] {
  const tiles: TileId[] = [];
  for (let level = 0; shr(size, TILE_HEIGHT * level) > 0; level++) {
    const hashes = shr(size, TILE_HEIGHT * level);
    const width = hashes % TILE_WIDTH;
    if (width > 0) tiles.push({ level, index: shr(hashes, TILE_HEIGHT), width });
  }
  return tiles;
}

// --- paths ------------------------------------------------------------------------------------

/** N in 3-digit path elements, all but the last prefixed with `x`: 1234067 → `x001/x234/067`. */
function indexPath(n: number): string {
  let out = String(n % 1000).padStart(3, "0");
  for (n = Math.floor(n / 1000); n > 0; n = Math.floor(n / 1000)) out = `x${String(n % 1000).padStart(3, "0")}/${out}`;
  return out;
}

const widthSuffix = (width: number): string => (width === TILE_WIDTH ? "" : `.p/${width}`);

/** `tile/<L>/<N>[.p/<W>]`. */
export function tilePath(tile: TileId): string {
  return `tile/${tile.level}/${indexPath(tile.index)}${widthSuffix(tile.width)}`;
}

/** `tile/entries/<N>[.p/<W>]`. */
export function entriesPath(bundle: BundleId): string {
  return `tile/entries/${indexPath(bundle.index)}${widthSuffix(bundle.width)}`;
}

/** A path of tlog-tiles is under 80 characters; anything longer is refused before it is split. */
const MAX_PATH = 128;

function digits(s: string): number | null {
  if (s.length === 0 || s.length > 16) return null;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return null;
  }
  return Number(s);
}

const badPath = (why: string) => fail(TlogErrorCode.MalformedTilePath, "path", `not a tile path: ${why}`);

/** Takes a `.p/<W>` suffix off the index groups: the width, 256 without one, or `null` when malformed. */
function takeWidth(groups: string[]): number | null {
  const penultimate = groups[groups.length - 2];
  if (penultimate === undefined || !penultimate.endsWith(".p")) return TILE_WIDTH;
  const w = digits(groups.pop() as string);
  groups[groups.length - 1] = penultimate.slice(0, -2);
  return w === null || w < 1 || w >= TILE_WIDTH ? null : w;
}

/** The index written as 3-digit groups, all but the last prefixed with `x`, or `null`. */
function indexOfGroups(groups: readonly string[]): number | null {
  let index = 0;
  for (const [i, g] of groups.entries()) {
    const last = i === groups.length - 1;
    const n = g.length === (last ? 3 : 4) && (last || g[0] === "x") ? digits(last ? g : g.slice(1)) : null;
    if (n === null) return null;
    index = index * 1000 + n;
  }
  return index;
}

/**
 * Parses a tile or entry-bundle path (without the log's prefix), strictly: the only path accepted
 * for a tile is the one {@link tilePath} writes for it — no leading zeros, no `x000` group, no
 * width outside 1..255, no level above 63, no index past 2^53 leaves.
 */
export function parseTilePath(path: string): Result<TileRef> {
  if (path.length > MAX_PATH) return badPath("too long");
  const parts = path.split("/");
  if (parts[0] !== "tile" || parts.length < 3) return badPath("it has the form tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>]");
  const entries = parts[1] === "entries";
  const level = entries ? 0 : digits(parts[1] as string);
  if (level === null || level > MAX_TILE_LEVEL) return badPath("the level is a decimal from 0 to 63");
  const groups = parts.slice(2);
  const width = takeWidth(groups);
  if (width === null) return badPath("a partial width is a decimal from 1 to 255");
  const index = indexOfGroups(groups);
  if (index === null) return badPath("the index is 3-digit groups, all but the last prefixed with x");
  if (!Number.isSafeInteger(index) || index * TILE_WIDTH * 2 ** (TILE_HEIGHT * level) > Number.MAX_SAFE_INTEGER) return badPath("the tile starts past 2^53 leaves");
  const ref: TileRef = entries ? { kind: "entries", bundle: { index, width } } : { kind: "hashes", tile: { level, index, width } };
  const canonical = ref.kind === "entries" ? entriesPath(ref.bundle) : tilePath(ref.tile);
  return canonical === path ? ok(ref) : badPath(`its canonical form is ${canonical}`);
}

// --- tile bytes ------------------------------------------------------------------------------

/** A tile's bytes: its hashes, concatenated. */
export function tileBytes(hashes: readonly Hash[]): Uint8Array {
  if (hashes.length < 1 || hashes.length > TILE_WIDTH) throw new RangeError(`a tile holds 1 to ${TILE_WIDTH} hashes, not ${hashes.length}`);
  return Buffer.concat(hashes);
}

/** A tile's hashes, when its bytes are `width` hashes (1 to 256; any when not given). */
export function parseTile(bytes: Uint8Array, width?: number): Result<Hash[]> {
  const n = bytes.length / HASH_SIZE;
  if (!Number.isInteger(n) || n < 1 || n > TILE_WIDTH || (width !== undefined && n !== width)) {
    return fail(TlogErrorCode.MalformedTile, "tile", `a tile of ${width ?? "1 to 256"} hashes is ${width === undefined ? "a multiple of 32" : width * HASH_SIZE} bytes, not ${bytes.length}`);
  }
  const hashes: Hash[] = [];
  for (let i = 0; i < n; i++) hashes.push(bytes.slice(i * HASH_SIZE, (i + 1) * HASH_SIZE) as Hash);
  return ok(hashes);
}

/** The root of the tile's hashes at positions `[start, end)`, a perfect subtree (end - start a power of two). */
function foldTile(bytes: Uint8Array, start: number, end: number): Hash {
  let row: Hash[] = [];
  for (let i = start; i < end; i++) row.push(bytes.subarray(i * HASH_SIZE, (i + 1) * HASH_SIZE) as Hash);
  while (row.length > 1) {
    const up: Hash[] = [];
    for (let i = 0; i < row.length; i += 2) up.push(nodeHash(row[i] as Hash, row[i + 1] as Hash));
    row = up;
  }
  return Uint8Array.from(row[0] as Hash) as Hash;
}

/** The hash of `node` from the bytes of `tile`, which must be the tile {@link tileCoordinates} names for it. */
export function hashFromTile(tile: TileId, bytes: Uint8Array, node: NodeId): Result<Hash> {
  const at = tileCoordinates(node);
  if (at.level !== tile.level || at.index !== tile.index) return fail(TlogErrorCode.InvalidArgument, "node", `node (${node.level}, ${node.index}) is in tile ${at.level}/${at.index}, not ${tile.level}/${tile.index}`);
  if (at.end > tile.width) return fail(TlogErrorCode.InvalidArgument, "node", `node (${node.level}, ${node.index}) needs ${at.end} hashes of its tile, which has ${tile.width}`);
  if (bytes.length !== tile.width * HASH_SIZE) return fail(TlogErrorCode.MalformedTile, "tile", `tile ${tilePath(tile)} is ${tile.width * HASH_SIZE} bytes, not ${bytes.length}`);
  return ok(foldTile(bytes, at.start, at.end));
}

/** Reads a tile's bytes: from a file, a bucket, a cache. */
export type TileReader = (tile: TileId) => Uint8Array | Promise<Uint8Array>;

/**
 * A hash reader over the tiles of a tree of `size` leaves, for proofs served from tiles. It trusts
 * the tiles it reads (a log reading its own); a client checks what it builds against a checkpoint.
 */
export function tileHashReader(size: number, readTile: TileReader): (level: number, index: number) => Promise<Result<Hash>> {
  return async (level, index) => {
    if (!isIndex(index) || level < 0 || level > 53 || (index + 1) * 2 ** level > size) {
      return fail(TlogErrorCode.InvalidArgument, "node", `node (${level}, ${index}) is not a complete node of a tree of ${size} leaves`);
    }
    const at = tileCoordinates({ level, index });
    const tile = { level: at.level, index: at.index, width: tileWidth(size, at.level, at.index) };
    return hashFromTile(tile, await readTile(tile), { level, index });
  };
}

// --- entry bundles -----------------------------------------------------------------------------

/** The largest bundle: 256 entries of 65,535 bytes and their lengths. */
const MAX_BUNDLE = TILE_WIDTH * (2 + MAX_ENTRY_SIZE);

/** An entry bundle's bytes: each entry as a big-endian uint16 length then its bytes. */
export function encodeEntryBundle(entries: readonly Uint8Array[]): Result<Uint8Array> {
  if (entries.length < 1 || entries.length > TILE_WIDTH) return fail(TlogErrorCode.MalformedEntryBundle, "entries", `a bundle holds 1 to ${TILE_WIDTH} entries, not ${entries.length}`);
  let total = 0;
  for (const [i, e] of entries.entries()) {
    if (e.length > MAX_ENTRY_SIZE) return fail(TlogErrorCode.EntryTooLarge, `entries[${i}]`, `an entry is at most ${MAX_ENTRY_SIZE} bytes, not ${e.length}`);
    total += 2 + e.length;
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const e of entries) {
    out.writeUInt16BE(e.length, at);
    out.set(e, at + 2);
    at += 2 + e.length;
  }
  return ok(out);
}

/**
 * An entry bundle's entries, strictly: no truncated entry, no trailing byte, 1 to 256 entries, and
 * exactly `width` when given. Each entry is a view into `bytes`.
 */
export function decodeEntryBundle(bytes: Uint8Array, width?: number): Result<Uint8Array[]> {
  const bad = (path: string, why: string) => fail(TlogErrorCode.MalformedEntryBundle, path, why);
  if (bytes.length > MAX_BUNDLE) return bad("bundle", `a bundle is at most ${MAX_BUNDLE} bytes`);
  const entries: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (entries.length === TILE_WIDTH) return bad("bundle", `a bundle holds at most ${TILE_WIDTH} entries`);
    if (at + 2 > bytes.length) return bad(`entries[${entries.length}]`, "a length prefix is cut short");
    const len = ((bytes[at] as number) << 8) | (bytes[at + 1] as number);
    if (at + 2 + len > bytes.length) return bad(`entries[${entries.length}]`, `an entry of ${len} bytes is cut short`);
    entries.push(bytes.subarray(at + 2, at + 2 + len));
    at += 2 + len;
  }
  if (entries.length === 0) return bad("bundle", "a bundle holds at least one entry");
  if (width !== undefined && entries.length !== width) return bad("bundle", `the bundle holds ${entries.length} entries, not ${width}`);
  return ok(entries);
}
