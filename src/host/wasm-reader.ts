/**
 * A small reader of the WebAssembly binary format (core spec 1.0 + the memory limit flags of the
 * threads and memory64 proposals): just enough to list a module's sections, function types,
 * imports, functions, memories and exports before anything compiles it. Linear in the module's
 * size, no recursion, every count bounded by the bytes left; a malformed module is a
 * {@link WasmFormatError}, never a crash.
 */

/** Why the bytes are not a module this reader understands. `offset` is where it stopped. */
export class WasmFormatError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = "WasmFormatError";
  }
}

/** Section ids of the core format (plus tags, 13, from exception handling). */
export const SectionId = {
  Custom: 0, Type: 1, Import: 2, Function: 3, Table: 4, Memory: 5, Global: 6, Export: 7, Start: 8,
  Element: 9, Code: 10, Data: 11, DataCount: 12, Tag: 13,
} as const;

/** One section: its id and where its content lies in the module. */
export interface Section {
  readonly id: number;
  /** Offset of the section's id byte. */
  readonly start: number;
  /** Offset of its content (after the size). */
  readonly contentStart: number;
  /** Offset just past its content. */
  readonly end: number;
}

/** A value type, by name. */
export type ValueType = "i32" | "i64" | "f32" | "f64" | "v128" | "funcref" | "externref";

/** A function type. */
export interface FuncType {
  readonly params: readonly ValueType[];
  readonly results: readonly ValueType[];
}

/** What an import brings in. */
export type ImportKind = "func" | "table" | "memory" | "global" | "tag";

/** One import. `type` is the function type index for a function import. */
export interface Import {
  readonly module: string;
  readonly name: string;
  readonly kind: ImportKind;
  readonly type?: number;
}

/** An export's kind. */
export type ExportKind = "func" | "table" | "memory" | "global" | "tag";

/** One export. */
export interface Export {
  readonly name: string;
  readonly kind: ExportKind;
  readonly index: number;
}

/** A memory's limits as the flags byte declares them. */
export interface MemoryLimits {
  readonly flags: number;
  /** Pages. Only read when the flags are 0 or 1 (32-bit, unshared). */
  readonly min: number;
  readonly max?: number;
}

/** The parts of a module the host checks. */
export interface ModuleInfo {
  readonly sections: readonly Section[];
  readonly types: readonly FuncType[];
  readonly imports: readonly Import[];
  /** Type index of each function the module defines, in order. */
  readonly functions: readonly number[];
  readonly memories: readonly MemoryLimits[];
  readonly exports: readonly Export[];
}

const MAGIC = [0x00, 0x61, 0x73, 0x6d];
const VERSION = [0x01, 0x00, 0x00, 0x00];

const VALUE_TYPES: Readonly<Record<number, ValueType>> = {
  0x7f: "i32", 0x7e: "i64", 0x7d: "f32", 0x7c: "f64", 0x7b: "v128", 0x70: "funcref", 0x6f: "externref",
};
const IMPORT_KINDS: readonly ImportKind[] = ["func", "table", "memory", "global", "tag"];
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** A cursor over a byte range. */
class Cursor {
  constructor(
    private readonly bytes: Uint8Array,
    public pos: number,
    private readonly end: number,
  ) {}

  get left(): number {
    return this.end - this.pos;
  }

  fail(message: string): never {
    throw new WasmFormatError(message, this.pos);
  }

  byte(): number {
    if (this.pos >= this.end) this.fail("unexpected end");
    return this.bytes[this.pos++] as number;
  }

  /** An unsigned LEB128 of at most 32 bits (5 bytes, no stray high bits). */
  u32(): number {
    let result = 0;
    for (let i = 0; i < 5; i++) {
      const b = this.byte();
      if (i === 4 && (b & 0xf0) !== 0) this.fail("integer too large");
      result += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) return result;
    }
    return this.fail("integer too long");
  }

  /** A vector's length, refused when it could not fit in the bytes left (each entry ≥ `min` bytes). */
  count(min = 1): number {
    const n = this.u32();
    if (n * min > this.left) this.fail("vector longer than its section");
    return n;
  }

  name(): string {
    const len = this.count();
    const start = this.pos;
    this.pos += len;
    try {
      return UTF8.decode(this.bytes.subarray(start, start + len));
    } catch {
      throw new WasmFormatError("a name is not UTF-8", start);
    }
  }

  skip(n: number): void {
    if (n > this.left) this.fail("unexpected end");
    this.pos += n;
  }
}

function valueType(c: Cursor): ValueType {
  const b = c.byte();
  const t = VALUE_TYPES[b];
  if (t === undefined) c.fail(`unsupported value type 0x${b.toString(16)}`);
  return t;
}

function limitsAt(c: Cursor): MemoryLimits {
  const flags = c.byte();
  // Only the 32-bit, unshared forms are read further; the caller refuses the others by flag.
  if (flags !== 0x00 && flags !== 0x01) return { flags, min: 0 };
  const min = c.u32();
  return flags === 0x01 ? { flags, min, max: c.u32() } : { flags, min };
}

function skipTableType(c: Cursor): void {
  valueType(c);
  const flags = c.byte();
  if (flags > 0x07) c.fail("unsupported table limits");
  // Table limits are LEB u32 (u64 for table64, flags ≥ 4); a u32 read of a u64 is still bounded.
  c.u32();
  if ((flags & 0x01) !== 0) c.u32();
}

function skipGlobalType(c: Cursor): void {
  valueType(c);
  const mut = c.byte();
  if (mut > 1) c.fail("bad global mutability");
}

function readTypes(c: Cursor): FuncType[] {
  const n = c.count(3);
  const out: FuncType[] = [];
  for (let i = 0; i < n; i++) {
    const form = c.byte();
    if (form !== 0x60) c.fail(`type ${i} is not a function type (GC types are not supported)`);
    const np = c.count();
    const params: ValueType[] = [];
    for (let j = 0; j < np; j++) params.push(valueType(c));
    const nr = c.count(0);
    const results: ValueType[] = [];
    for (let j = 0; j < nr; j++) results.push(valueType(c));
    out.push({ params, results });
  }
  return out;
}

function readImports(c: Cursor): Import[] {
  const n = c.count(4);
  const out: Import[] = [];
  for (let i = 0; i < n; i++) {
    const module = c.name();
    const name = c.name();
    const k = c.byte();
    const kind = IMPORT_KINDS[k];
    if (kind === undefined) c.fail(`import ${i} has an unknown kind`);
    if (kind === "func") {
      out.push({ module, name, kind, type: c.u32() });
      continue;
    }
    if (kind === "table") skipTableType(c);
    else if (kind === "memory") limitsAt(c);
    else if (kind === "global") skipGlobalType(c);
    else {
      c.byte();
      c.u32();
    }
    out.push({ module, name, kind });
  }
  return out;
}

function readExports(c: Cursor): Export[] {
  const n = c.count(3);
  const out: Export[] = [];
  for (let i = 0; i < n; i++) {
    const name = c.name();
    const k = c.byte();
    const kind = IMPORT_KINDS[k];
    if (kind === undefined) c.fail(`export ${i} has an unknown kind`);
    out.push({ name, kind, index: c.u32() });
  }
  return out;
}

function expectEnd(c: Cursor, what: string): void {
  if (c.left !== 0) c.fail(`the ${what} section has trailing bytes`);
}

function readFunctions(s: Cursor): number[] {
  const n = s.count();
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(s.u32());
  return out;
}

function readMemories(s: Cursor): MemoryLimits[] {
  const n = s.count(2);
  const out: MemoryLimits[] = [];
  for (let i = 0; i < n; i++) {
    const m = limitsAt(s);
    out.push(m);
    // Past an unsupported form the rest cannot be read; the caller refuses it by its flags.
    if (m.flags > 0x01) return out;
  }
  return out;
}

type Parts = { -readonly [K in Exclude<keyof ModuleInfo, "sections">]: ModuleInfo[K] };

/** The readers of the sections the host checks, each reading its whole content. */
const SECTION_READERS: Readonly<Partial<Record<number, (s: Cursor, parts: Parts) => void>>> = {
  [SectionId.Type]: (s, p) => void (p.types = readTypes(s)),
  [SectionId.Import]: (s, p) => void (p.imports = readImports(s)),
  [SectionId.Function]: (s, p) => void (p.functions = readFunctions(s)),
  [SectionId.Memory]: (s, p) => void (p.memories = readMemories(s)),
  [SectionId.Export]: (s, p) => void (p.exports = readExports(s)),
};

const SECTION_NAMES: Readonly<Record<number, string>> = { [SectionId.Type]: "type", [SectionId.Import]: "import", [SectionId.Function]: "function", [SectionId.Memory]: "memory", [SectionId.Export]: "export" };

/** Reads one section header at the cursor, refusing an unknown id or a repeated one. */
function sectionAt(c: Cursor, seen: Set<number>): Section {
  const start = c.pos;
  const id = c.byte();
  const size = c.u32();
  const contentStart = c.pos;
  if (size > c.left) c.fail(`section ${id} is longer than the module`);
  if (id > SectionId.Tag) throw new WasmFormatError(`unknown section id ${id}`, start);
  if (id !== SectionId.Custom) {
    if (seen.has(id)) throw new WasmFormatError(`section ${id} appears twice`, start);
    seen.add(id);
  }
  return { id, start, contentStart, end: contentStart + size };
}

/** Reads the module's header and sections. Throws {@link WasmFormatError}. */
export function readModule(bytes: Uint8Array): ModuleInfo {
  const c = new Cursor(bytes, 0, bytes.length);
  for (const b of MAGIC) if (c.byte() !== b) throw new WasmFormatError("not a WebAssembly module (no \\0asm magic)", 0);
  for (const b of VERSION) if (c.byte() !== b) throw new WasmFormatError("not WebAssembly version 1", 4);
  const sections: Section[] = [];
  const seen = new Set<number>();
  const parts: Parts = { types: [], imports: [], functions: [], memories: [], exports: [] };
  while (c.left > 0) {
    const section = sectionAt(c, seen);
    sections.push(section);
    const read = SECTION_READERS[section.id];
    if (read !== undefined) {
      const s = new Cursor(bytes, section.contentStart, section.end);
      read(s, parts);
      // A memory section stopped at an unsupported form is refused by its flags, not here.
      if (parts.memories.every((m) => m.flags <= 0x01) || section.id !== SectionId.Memory) expectEnd(s, SECTION_NAMES[section.id] ?? `${section.id}`);
    }
    c.pos = section.end;
  }
  return { sections, ...parts };
}

/** The unsigned LEB128 encoding of `n` (a u32). */
export function encodeU32(n: number): number[] {
  const out: number[] = [];
  let v = n >>> 0;
  do {
    let b = v & 0x7f;
    v >>>= 7;
    if (v !== 0) b |= 0x80;
    out.push(b);
  } while (v !== 0);
  return out;
}
