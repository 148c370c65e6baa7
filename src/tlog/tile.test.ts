import { Buffer } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { leafHash } from "./hash.js";
import type { Hash } from "./hash.js";
import { TlogErrorCode } from "./errors.js";
import { proveConsistency, proveConsistencySync, proveInclusion, proveInclusionSync } from "./proof.js";
import {
  decodeEntryBundle,
  encodeEntryBundle,
  entriesPath,
  hashFromTile,
  parseTile,
  parseTilePath,
  partialTiles,
  tileBytes,
  tileCoordinates,
  tileHashReader,
  tilePath,
  tilesToPublish,
  tileWidth,
} from "./tile.js";
import type { TileId } from "./tile.js";
import { MerkleTree } from "./tree.js";
import { storedTree, toHex, value } from "./test-support.js";

const name = (t: TileId) => tilePath(t);

describe("tile paths", () => {
  it.each([
    [{ level: 0, index: 0, width: 256 }, "tile/0/000"],
    [{ level: 0, index: 1, width: 5 }, "tile/0/001.p/5"],
    [{ level: 1, index: 999, width: 256 }, "tile/1/999"],
    [{ level: 2, index: 1000, width: 256 }, "tile/2/x001/000"],
    // The example of the tlog-tiles specification: index 1234067.
    [{ level: 0, index: 1_234_067, width: 256 }, "tile/0/x001/x234/067"],
    [{ level: 2, index: 123_456_078, width: 2 }, "tile/2/x123/x456/078.p/2"],
    [{ level: 63, index: 0, width: 1 }, "tile/63/000.p/1"],
  ])("writes %o as %s and reads it back", (tile, path) => {
    expect(tilePath(tile)).toBe(path);
    expect(value(parseTilePath(path))).toEqual({ kind: "hashes", tile });
  });

  it.each([
    [{ index: 0, width: 256 }, "tile/entries/000"],
    [{ index: 1_234_067, width: 112 }, "tile/entries/x001/x234/067.p/112"],
  ])("writes the entry bundle %o as %s and reads it back", (bundle, path) => {
    expect(entriesPath(bundle)).toBe(path);
    expect(value(parseTilePath(path))).toEqual({ kind: "entries", bundle });
  });

  it.each([
    ["groups without the x prefix", "tile/5/123/456/078"],
    ["a negative level", "tile/-1/000"],
    ["a level with a leading zero", "tile/01/000"],
    ["a level above 63", "tile/64/000"],
    ["a leading zero group", "tile/0/x000/001"],
    ["an index of one digit", "tile/0/1"],
    ["an index of four digits", "tile/0/0001"],
    ["an x on the last group", "tile/0/x001"],
    ["a width of 0", "tile/0/001.p/0"],
    ["a width of 256", "tile/0/001.p/256"],
    ["a width with a leading zero", "tile/0/001.p/05"],
    ["a partial marker without a width", "tile/0/001.p"],
    ["a trailing slash", "tile/0/001/"],
    ["a leading slash", "/tile/0/001"],
    ["the height of the Go checksum database's paths", "tile/8/0/001"],
    ["the data level of the Go checksum database", "tile/data/000"],
    ["an entries bundle with an empty width", "tile/entries/000.p/"],
    ["a plus sign", "tile/+1/000"],
    ["non-ASCII digits", "tile/٠/000"],
    ["a tile past 2^53 leaves", "tile/6/x001/000"],
    ["a path far too long", `tile/0/${"x001/".repeat(40)}000`],
    ["no tile prefix", "0/000"],
  ])("refuses %s: %s", (_why, path) => {
    const r = parseTilePath(path);
    expect(r.ok ? null : r.error.code).toBe(TlogErrorCode.MalformedTilePath);
  });

  it("reads back every path it writes, and nothing else parses to a different path (property)", () => {
    const tiles = fc.record({ level: fc.integer({ min: 0, max: 3 }), index: fc.integer({ min: 0, max: 2 ** 20 }), width: fc.integer({ min: 1, max: 256 }) });
    fc.assert(
      fc.property(tiles, (t) => {
        expect(value(parseTilePath(tilePath(t)))).toEqual({ kind: "hashes", tile: t });
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        const r = parseTilePath(`tile/${s}`);
        if (r.ok) expect(r.value.kind === "hashes" ? tilePath(r.value.tile) : entriesPath(r.value.bundle)).toBe(`tile/${s}`);
      }),
    );
  });
});

describe("which tiles a tree has", () => {
  it("has, at 70,000 leaves, the tiles the specification lists", () => {
    // tlog-tiles: 273 full level-0 tiles, one partial of width 112, one full level-1 tile, one
    // partial of width 17, and one partial level-2 tile of width 1.
    const tiles = tilesToPublish(0, 70_000);
    expect(tiles.filter((t) => t.level === 0 && t.width === 256)).toHaveLength(273);
    expect(tiles.filter((t) => t.width < 256).map(name)).toEqual(["tile/0/273.p/112", "tile/1/001.p/17", "tile/2/000.p/1"]);
    expect(tiles.filter((t) => t.level === 1 && t.width === 256).map(name)).toEqual(["tile/1/000"]);
    expect(tiles).toHaveLength(277);
    expect(partialTiles(70_000).map(name)).toEqual(["tile/0/273.p/112", "tile/1/001.p/17", "tile/2/000.p/1"]);
  });

  it("has, at 256 leaves, one full level-0 tile and a level-1 tile of width 1", () => {
    expect(tilesToPublish(0, 256).map(name)).toEqual(["tile/0/000", "tile/1/000.p/1"]);
    expect(tilesToPublish(0, 0)).toEqual([]);
  });

  it.each([
    [1, 1, []],
    [100, 101, ["tile/0/000.p/101"]],
    [255, 257, ["tile/0/000", "tile/0/001.p/1", "tile/1/000.p/1"]],
    [256, 300, ["tile/0/001.p/44"]],
    [300, 1000, ["tile/0/001", "tile/0/002", "tile/0/003.p/232", "tile/1/000.p/3"]],
  ])("publishes, from %d to %d leaves, the tiles that are new or wider", (from, to, want) => {
    expect(tilesToPublish(from, to).map(name)).toEqual(want);
  });

  it("gives each tile the width it has at a size", () => {
    expect([tileWidth(70_000, 0, 272), tileWidth(70_000, 0, 273), tileWidth(70_000, 0, 274), tileWidth(70_000, 2, 0)]).toEqual([256, 112, 0, 1]);
  });

  it("finds a node in the tile of its level, spanning 2^(level mod 8) hashes", () => {
    expect(tileCoordinates({ level: 0, index: 70_000 })).toEqual({ level: 0, index: 273, start: 112, end: 113 });
    expect(tileCoordinates({ level: 3, index: 33 })).toEqual({ level: 0, index: 1, start: 8, end: 16 });
    expect(tileCoordinates({ level: 8, index: 256 })).toEqual({ level: 1, index: 1, start: 0, end: 1 });
    expect(tileCoordinates({ level: 15, index: 1 })).toEqual({ level: 1, index: 0, start: 128, end: 256 });
  });
});

describe("tiles built as the tree grows", () => {
  const N = 70_000;
  const { leaves, read } = storedTree(N);
  // Tiles written the way a store would: each tile entry an append reports, added to its tile.
  const tiles = new Map<string, Uint8Array[]>();
  const tree = new MerkleTree();
  for (const h of leaves) {
    for (const e of tree.append(h).tileEntries) {
      const key = `${e.tile.level}/${e.tile.index}`;
      const row = tiles.get(key) ?? [];
      expect(row).toHaveLength(e.position);
      row.push(e.hash);
      tiles.set(key, row);
    }
  }
  const readTile = (t: TileId) => Buffer.concat((tiles.get(`${t.level}/${t.index}`) ?? []).slice(0, t.width));

  it("holds, in every tile a size has, the hashes the tree stored", () => {
    for (const size of [1, 255, 256, 257, 65_535, 65_536, 70_000]) {
      for (const t of tilesToPublish(0, size)) {
        const want = Array.from({ length: t.width }, (_, i) => read(8 * t.level, t.index * 256 + i) as Hash);
        expect(toHex(readTile(t))).toBe(toHex(tileBytes(want)));
      }
    }
  });

  it("gives every node's hash from its tile, at every level up to 16", () => {
    for (let level = 0; level <= 16; level++) {
      const step = Math.max(1, Math.floor(N / 2 ** level / 50));
      for (let index = 0; (index + 1) * 2 ** level <= N; index += step) {
        const at = tileCoordinates({ level, index });
        const tile = { level: at.level, index: at.index, width: tileWidth(N, at.level, at.index) };
        expect(toHex(value(hashFromTile(tile, readTile(tile), { level, index })))).toBe(toHex(read(level, index) as Hash));
      }
    }
  });

  it("serves the same proofs from tiles as from stored hashes", async () => {
    for (const [m, n] of [
      [0, 1],
      [300, 70_000],
      [65_535, 65_536],
      [69_999, 70_000],
      [12_345, 54_321],
    ] as const) {
      const fromTiles = tileHashReader(n, readTile);
      expect(value(await proveInclusion(m, n, fromTiles)).map(toHex)).toEqual(value(proveInclusionSync(m, n, read)).map(toHex));
      if (m > 0) expect(value(await proveConsistency(m, n, fromTiles)).map(toHex)).toEqual(value(proveConsistencySync(m, n, read)).map(toHex));
    }
  });

  it("refuses a node the tree does not have yet, a tile of the wrong length, and the wrong tile", async () => {
    const fromTiles = tileHashReader(1000, readTile);
    expect(await fromTiles(0, 1000)).toMatchObject({ ok: false, error: { code: TlogErrorCode.InvalidArgument } });
    expect(await fromTiles(10, 0)).toMatchObject({ ok: false, error: { code: TlogErrorCode.InvalidArgument } });
    const short = tileHashReader(1000, () => new Uint8Array(64));
    expect(await short(0, 5)).toMatchObject({ ok: false, error: { code: TlogErrorCode.MalformedTile } });
    expect(hashFromTile({ level: 0, index: 1, width: 256 }, readTile({ level: 0, index: 1, width: 256 }), { level: 0, index: 5 })).toMatchObject({ ok: false });
  });
});

describe("tile bytes", () => {
  it("reads a tile's hashes, strictly", () => {
    const hs = [leafHash(Buffer.from("a")), leafHash(Buffer.from("b"))];
    expect(value(parseTile(tileBytes(hs), 2)).map(toHex)).toEqual(hs.map(toHex));
    expect(parseTile(new Uint8Array(33)).ok).toBe(false);
    expect(parseTile(new Uint8Array(0)).ok).toBe(false);
    expect(parseTile(new Uint8Array(257 * 32)).ok).toBe(false);
    expect(parseTile(tileBytes(hs), 3)).toMatchObject({ ok: false, error: { code: TlogErrorCode.MalformedTile } });
  });
});

describe("entry bundles", () => {
  const entries = [Buffer.from(""), Buffer.from("hello"), Buffer.alloc(65_535, 1)];

  it("writes each entry as a big-endian uint16 length and its bytes, and reads them back", () => {
    const bytes = value(encodeEntryBundle(entries));
    expect(toHex(bytes.subarray(0, 9))).toBe("0000" + "0005" + Buffer.from("hello").toString("hex"));
    expect(toHex(bytes.subarray(9, 11))).toBe("ffff");
    expect(value(decodeEntryBundle(bytes, 3)).map(toHex)).toEqual(entries.map(toHex));
  });

  it("hashes a bundle's entries into its level-0 tile", () => {
    const data = Array.from({ length: 256 }, (_, i) => Buffer.from(`entry ${i}`));
    const tree = new MerkleTree();
    const tile = data.map((d) => tree.appendData(d).nodes[0]?.hash as Hash);
    const bundle = value(decodeEntryBundle(value(encodeEntryBundle(data)), 256));
    expect(toHex(tileBytes(bundle.map(leafHash)))).toBe(toHex(tileBytes(tile)));
  });

  it.each([
    ["a cut length prefix", Buffer.from("000568656c6c6f00", "hex")],
    ["a cut entry", Buffer.from("000668656c6c6f", "hex")],
    ["no entry at all", Buffer.alloc(0)],
    ["257 entries", Buffer.alloc(257 * 2)],
  ])("refuses a bundle with %s", (_why, bytes) => {
    const r = decodeEntryBundle(bytes);
    expect(r.ok ? null : r.error.code).toBe(TlogErrorCode.MalformedEntryBundle);
  });

  it("refuses a bundle of another width than the tile says", () => {
    expect(decodeEntryBundle(value(encodeEntryBundle(entries)), 4).ok).toBe(false);
  });

  it("refuses to write an entry over 65,535 bytes, or a bundle of no or too many entries", () => {
    expect(encodeEntryBundle([Buffer.alloc(65_536)])).toMatchObject({ ok: false, error: { code: TlogErrorCode.EntryTooLarge, path: "entries[0]" } });
    expect(encodeEntryBundle([]).ok).toBe(false);
    expect(encodeEntryBundle(Array.from({ length: 257 }, () => Buffer.alloc(0))).ok).toBe(false);
  });
});
