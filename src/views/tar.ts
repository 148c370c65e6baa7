/**
 * A bounded reader of a view plugin's UI bundle: one uncompressed tar (ustar, with the pax and
 * GNU long-name records common tools write), read in one linear pass over bytes already in
 * memory and already size-capped. Only regular files and directories are taken; anything that
 * could make a path mean two things (a link, a device, a duplicate, `..`, a backslash, a NUL, a
 * control character, a dot file) refuses the whole bundle: a vendor's bundle is served exactly or
 * not at all (docs/adr/0070).
 */

/** Caps on a bundle's contents. */
export interface TarCaps {
  /** The most files a bundle may hold. */
  readonly files: number;
  /** The longest path inside it. */
  readonly pathLength: number;
}

/** The defaults: far above a UI's needs, far below what could hurt. */
export const DEFAULT_TAR_CAPS: TarCaps = { files: 2048, pathLength: 255 };

/** Why a bundle was refused. */
export type TarProblem =
  | "truncated"
  | "bad_header"
  | "bad_checksum"
  | "bad_size"
  | "unsupported_entry"
  | "bad_path"
  | "duplicate_path"
  | "too_many_files"
  | "bad_pax";

/** A bundle's files by path (`index.html`, `js/app.js`), or why it was refused. */
export type TarResult =
  | { readonly ok: true; readonly files: ReadonlyMap<string, Uint8Array> }
  | { readonly ok: false; readonly problem: TarProblem; readonly at: number };

const BLOCK = 512;
/** One path segment: letters, digits and `._~@+-`, not starting with a dot (no `.`, `..`, dot files). */
const SEGMENT = /^[A-Za-z0-9_~@+-][A-Za-z0-9._~@+-]*$/;

/** Whether `path` is a clean relative path a bundle may hold and a URL may name in one spelling only. */
export function isBundlePath(path: string, maxLength: number = DEFAULT_TAR_CAPS.pathLength): boolean {
  if (path.length === 0 || path.length > maxLength) return false;
  return path.split("/").every((s) => SEGMENT.test(s));
}

function field(header: Uint8Array, offset: number, length: number): string {
  let end = offset;
  while (end < offset + length && header[end] !== 0) end++;
  return Buffer.from(header.subarray(offset, end)).toString("latin1");
}

/** A numeric field: octal digits, optionally space- or NUL-padded. Null when it is not one. */
function octal(header: Uint8Array, offset: number, length: number): number | null {
  // Base-256 (a high bit set) is how tar writes sizes past 8 GiB: no bundle is that large.
  if (((header[offset] ?? 0) & 0x80) !== 0) return null;
  const text = field(header, offset, length).trim();
  if (!/^[0-7]{1,12}$/.test(text)) return null;
  return parseInt(text, 8);
}

function checksumOk(header: Uint8Array): boolean {
  const stored = octal(header, 148, 8);
  if (stored === null) return false;
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (header[i] as number);
  return sum === stored;
}

function isZeroBlock(block: Uint8Array): boolean {
  for (const b of block) if (b !== 0) return false;
  return true;
}

/** The `path` record of a pax extended header (`<len> path=<value>\n` records), or null when it has none. */
function paxPath(data: Uint8Array): string | null | "bad" {
  const text = Buffer.from(data).toString("utf8");
  let i = 0;
  let path: string | null = null;
  while (i < text.length) {
    const space = text.indexOf(" ", i);
    if (space < 0) return "bad";
    const len = Number(text.slice(i, space));
    if (!Number.isSafeInteger(len) || len <= space - i + 1 || i + len > text.length) return "bad";
    const record = text.slice(space + 1, i + len);
    if (!record.endsWith("\n")) return "bad";
    const eq = record.indexOf("=");
    if (eq < 0) return "bad";
    if (record.slice(0, eq) === "path") path = record.slice(eq + 1, -1);
    i += len;
  }
  return path;
}

/** Strips the `./` tools put in front and a directory's trailing `/`. */
function cleaned(raw: string): string {
  let p = raw;
  while (p.startsWith("./")) p = p.slice(2);
  return p;
}

/** One entry's header and data, or why it cannot be read. */
type Entry =
  | { readonly ok: true; readonly type: string; readonly name: string; readonly data: Uint8Array; readonly next: number }
  | { readonly ok: false; readonly problem: TarProblem }
  | { readonly ok: "end" };

function entryAt(bytes: Uint8Array, offset: number): Entry {
  if (offset + BLOCK > bytes.length) return offset === bytes.length && offset > 0 ? { ok: "end" } : { ok: false, problem: "truncated" };
  const header = bytes.subarray(offset, offset + BLOCK);
  // Two zero blocks end the archive; whatever padding follows is ignored.
  if (isZeroBlock(header)) return { ok: "end" };
  if (!checksumOk(header)) return { ok: false, problem: "bad_checksum" };
  const size = octal(header, 124, 12);
  if (size === null) return { ok: false, problem: "bad_size" };
  const dataStart = offset + BLOCK;
  if (dataStart + size > bytes.length) return { ok: false, problem: "truncated" };
  const prefix = field(header, 257, 6) === "ustar" ? field(header, 345, 155) : "";
  const base = field(header, 0, 100);
  return {
    ok: true,
    type: String.fromCharCode(header[156] ?? 0),
    name: prefix === "" ? base : `${prefix}/${base}`,
    data: bytes.subarray(dataStart, dataStart + size),
    next: dataStart + Math.ceil(size / BLOCK) * BLOCK,
  };
}

/** A directory entry is skipped, but its name must be clean too (or the archive's own `./`). */
function cleanDirectory(name: string, caps: TarCaps): boolean {
  const p = cleaned(name).replace(/\/$/, "");
  return p === "" || p === "." || isBundlePath(p, caps.pathLength);
}

/** Reads a bundle's files. Never throws; linear in the bundle's size. */
export function readTar(bytes: Uint8Array, caps: TarCaps = DEFAULT_TAR_CAPS): TarResult {
  const files = new Map<string, Uint8Array>();
  let offset = 0;
  let longName: string | null = null;
  for (;;) {
    const e = entryAt(bytes, offset);
    if (e.ok === "end") return { ok: true, files };
    if (!e.ok) return { ok: false, problem: e.problem, at: offset };
    const taken = take(e, files, caps, longName);
    if (typeof taken === "string") return { ok: false, problem: taken, at: offset };
    longName = taken === null ? null : taken.longName;
    offset = e.next;
  }
}

/** Takes one entry into `files`: a problem, null, or the long name it gives the next entry. */
function take(e: Extract<Entry, { ok: true }>, files: Map<string, Uint8Array>, caps: TarCaps, longName: string | null): TarProblem | null | { longName: string | null } {
  // The next entry's long path: a pax record or a GNU long name. Global pax records name no entry.
  if (e.type === "x" || e.type === "L") {
    const p = e.type === "x" ? paxPath(e.data) : field(e.data, 0, e.data.length);
    return p === "bad" ? "bad_pax" : { longName: p };
  }
  if (e.type === "g") return { longName };
  if (e.type === "5") return cleanDirectory(longName ?? e.name, caps) ? null : "bad_path";
  if (e.type !== "0" && e.type !== "\0") return "unsupported_entry";
  const path = cleaned(longName ?? e.name);
  if (!isBundlePath(path, caps.pathLength)) return "bad_path";
  if (files.has(path)) return "duplicate_path";
  if (files.size >= caps.files) return "too_many_files";
  files.set(path, e.data);
  return null;
}
