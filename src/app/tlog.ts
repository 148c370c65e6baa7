/**
 * The verifiable log as static files (C2SP tlog-tiles; docs/adr/0143): what `/tlog/<path>` answers
 * and what `openfief export-tiles DIR` writes, from one function each, so the two are byte-equal.
 * Every path is parsed strictly (src/tlog) before anything is read; a tile is served only as far
 * as the newest signed checkpoint covers it.
 */
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeCheckpoint } from "../events/index.js";
import type { EventLog, StoredCheckpoint } from "../events/index.js";
import type { LogKey } from "./log-key.js";
import { entriesPath, parseTilePath, tilePath, tilesToPublish, tileWidth } from "../tlog/index.js";
import type { TileId } from "../tlog/index.js";
import { AppError } from "./errors.js";

/** The checkpoint changes: served for a couple of seconds at most. */
export const CHECKPOINT_CACHE = "public, max-age=2";
/** A tile or bundle at a path never changes (a partial one is named by its width): kept for good. */
export const TILE_CACHE = "public, max-age=31536000, immutable";
export const CHECKPOINT_TYPE = "text/plain; charset=utf-8";
export const TILE_TYPE = "application/octet-stream";

/** One answer of `/tlog/<path>`. */
export interface TlogFile {
  readonly status: 200 | 404;
  readonly contentType: string;
  readonly cacheControl: string;
  readonly body: Uint8Array;
}

const missing = (why: string): TlogFile => ({ status: 404, contentType: CHECKPOINT_TYPE, cacheControl: "no-store", body: Buffer.from(`${why}\n`, "utf8") });

/** The newest signed checkpoint, or null before the first. */
export function latestCheckpoint(store: EventLog): Promise<StoredCheckpoint | null> {
  return store.tree.latestCheckpoint();
}

/**
 * The file at `path` under `/tlog/` (`checkpoint`, `tile/<L>/<N>[.p/<W>]`, `tile/entries/<N>[.p/<W>]`):
 * 404 for a path that is not one of those exactly, for a tile or bundle the newest checkpoint does
 * not cover, and for a bundle holding an event over 65,535 bytes.
 */
export async function tlogFile(store: EventLog, path: string): Promise<TlogFile> {
  if (path === "checkpoint") {
    const c = await store.tree.latestCheckpoint();
    return c === null ? missing("no checkpoint yet") : { status: 200, contentType: CHECKPOINT_TYPE, cacheControl: CHECKPOINT_CACHE, body: Buffer.from(c.note, "utf8") };
  }
  const ref = parseTilePath(path);
  if (!ref.ok) return missing(ref.error.message);
  const c = await store.tree.latestCheckpoint();
  if (c === null) return missing("no checkpoint yet");
  if (ref.value.kind === "hashes") {
    const t = ref.value.tile;
    if (t.width > tileWidth(c.size, t.level, t.index)) return missing(`the newest checkpoint (size ${c.size}) does not cover ${path}`);
    const bytes = await store.tree.tile(t);
    return bytes === null ? missing(`${path} is not stored`) : { status: 200, contentType: TILE_TYPE, cacheControl: TILE_CACHE, body: bytes };
  }
  const b = ref.value.bundle;
  if (b.width > tileWidth(c.size, 0, b.index)) return missing(`the newest checkpoint (size ${c.size}) does not cover ${path}`);
  const bundle = await store.tree.entries(b);
  if (bundle === null) return missing(`${path} is not in the log`);
  if (!bundle.ok) return missing(`${path} cannot be served: ${bundle.error.message}`);
  return { status: 200, contentType: TILE_TYPE, cacheControl: TILE_CACHE, body: bundle.value };
}

/** What {@link exportTiles} wrote. */
export interface ExportedTiles {
  readonly dir: string;
  readonly checkpoint: StoredCheckpoint;
  /** Tiles of hashes written (full and partial). */
  readonly tiles: number;
  /** Entry bundles written. */
  readonly bundles: number;
  /** The bundles left out because an event in them is over 65,535 bytes. */
  readonly skipped: readonly string[];
}

/** Refuses (`usage`) a folder that cannot take the export: a file, or under a parent that does not exist. */
export function checkExportDir(dir: string): void {
  if (dir === "") throw new AppError("usage", "export-tiles needs a folder: openfief export-tiles DIR", "DIR");
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    st = null;
  }
  if (st !== null && !st.isDirectory()) throw new AppError("usage", `${dir} is not a folder`, "DIR");
  if (st === null) {
    let parent;
    try {
      parent = statSync(dirname(dir));
    } catch {
      parent = null;
    }
    if (parent === null || !parent.isDirectory()) throw new AppError("usage", `cannot make ${dir}: its parent folder ${dirname(dir)} does not exist`, "DIR");
  }
}

/** Writes `bytes` to `path` through a temporary file renamed into place (a server never serves half a file). */
function writeAtomically(path: string, bytes: Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w", 0o644);
  try {
    writeFileSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/**
 * Writes the newest checkpoint's tree to `dir` as a static server publishes it: every tile of
 * hashes and every entry bundle the checkpoint's size has (full and partial), then `checkpoint`
 * last, so a server publishing the folder never serves a checkpoint whose tiles are not there.
 * Each file holds exactly what `/tlog/<path>` answers. Refuses (`not_found`) a log without a checkpoint.
 */
export async function exportTiles(store: EventLog, dir: string): Promise<ExportedTiles> {
  checkExportDir(dir);
  const checkpoint = await store.tree.latestCheckpoint();
  if (checkpoint === null) throw new AppError("not_found", "the log has no signed checkpoint yet: append an event and run openfief up (or export again once it signed one)");
  const tiles = tilesToPublish(0, checkpoint.size);
  const skipped: string[] = [];
  let bundles = 0;
  const write = async (path: string): Promise<boolean> => {
    const file = await tlogFile(store, path);
    if (file.status !== 200) return false;
    writeAtomically(join(dir, ...path.split("/")), file.body);
    return true;
  };
  for (const t of tiles) {
    if (!(await write(tilePath(t)))) throw new AppError("internal", `tile ${tilePath(t)} of the checkpoint of size ${checkpoint.size} is not stored`);
    if (t.level === 0) {
      const path = entriesPath({ index: t.index, width: t.width });
      if (await write(path)) bundles++;
      else skipped.push(path);
    }
  }
  writeAtomically(join(dir, "checkpoint"), Buffer.from(checkpoint.note, "utf8"));
  return { dir, checkpoint, tiles: tiles.length, bundles, skipped };
}

/** Every path a checkpoint of `size` publishes under `/tlog/`, the checkpoint first. */
export function publishedPaths(size: number): string[] {
  const tiles: TileId[] = tilesToPublish(0, size);
  return ["checkpoint", ...tiles.map(tilePath), ...tiles.filter((t) => t.level === 0).map((t) => entriesPath({ index: t.index, width: t.width }))];
}

/** Signs a checkpoint of the whole log now with the log's key (none when nothing is new); the newest checkpoint. */
export function signCheckpointNow(store: EventLog, key: LogKey): Promise<StoredCheckpoint | null> {
  return writeCheckpoint(store, key.signer);
}
