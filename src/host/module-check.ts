/**
 * The checks a module passes before anything compiles it (issue 13, "The host"): its size, the
 * WebAssembly magic and version, every import a function on the host's list with its signature,
 * no imported memory, table or global, exactly one 32-bit unshared memory no larger than the cap
 * at start, and the ABI's exports. The memory section is then rewritten so its maximum is the
 * cap: a worker's heap limits do not bound wasm memory, the module's own maximum is the only one.
 */
import { createHash } from "node:crypto";
import { hostError, HostErrorCode, type HostResult } from "./errors.js";
import { allowedImport, formatType, sameType } from "./imports.js";
import type { Caps, Limits } from "./limits.js";
import { WASM_PAGE } from "./limits.js";
import { encodeU32, readModule, SectionId, WasmFormatError, type FuncType, type ModuleInfo } from "./wasm-reader.js";

/** The ABI version this host serves. */
export const ABI_VERSION = 1;

/** The exports of ABI version 1 and their signatures; `_initialize` is optional. */
export const ABI_EXPORTS: Readonly<Record<string, { readonly type: FuncType; readonly required: boolean }>> = {
  openfief_abi_version: { type: { params: [], results: ["i32"] }, required: true },
  openfief_alloc: { type: { params: ["i32"], results: ["i32"] }, required: true },
  openfief_call: { type: { params: ["i32", "i32"], results: ["i64"] }, required: true },
  _initialize: { type: { params: [], results: [] }, required: false },
};

/** A module that passed the checks. */
export interface CheckedModule {
  /** Lowercase hex SHA-256 of the module as given (what identifies it; ValidDigest). */
  readonly digest: string;
  /** The bytes to compile: the module with its memory maximum rewritten to the cap. */
  readonly bytes: Uint8Array;
  /** The memory's pages at start and its maximum after the rewrite. */
  readonly memory: { readonly initial: number; readonly maximum: number };
  /** Whether the module exports `_initialize`. */
  readonly initialize: boolean;
}

const DIGEST = /^[0-9a-f]{64}$/;

/** Seed 003's ValidDigest: the lowercase hexadecimal SHA-256 digest that identifies plugin code. */
export function validDigest(digest: unknown): digest is string {
  return typeof digest === "string" && DIGEST.test(digest);
}

/** The lowercase hex SHA-256 of some bytes. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function invalid(message: string, field: string): HostResult<never> {
  return { ok: false, error: hostError(HostErrorCode.ModuleInvalid, message, field) };
}

function functionType(info: ModuleInfo, index: number): FuncType | undefined {
  const imported = info.imports.filter((i) => i.kind === "func");
  if (index < imported.length) {
    const t = imported[index]?.type;
    return t === undefined ? undefined : info.types[t];
  }
  const t = info.functions[index - imported.length];
  return t === undefined ? undefined : info.types[t];
}

/** A refusal: why, and which part of the module. */
type Problem = { readonly message: string; readonly field: string };

/** Every import a function the host provides, with its exact type. */
function importProblem(info: ModuleInfo): Problem | undefined {
  for (const [i, imp] of info.imports.entries()) {
    const field = `imports[${i}]`;
    const what = `${imp.module}.${imp.name}`;
    if (imp.kind !== "func") return { message: `import ${what} is a ${imp.kind}; a plugin may import only functions`, field };
    const want = allowedImport(imp.module, imp.name);
    if (want === undefined) return { message: `import ${what} is not provided by the host (only openfief.host_call and wasi_snapshot_preview1)`, field };
    const got = imp.type === undefined ? undefined : info.types[imp.type];
    if (got === undefined) return { message: `import ${what} names a type the module does not define`, field };
    if (!sameType(got, want)) return { message: `import ${what} has type ${formatType(got)}, not ${formatType(want)}`, field };
  }
  return undefined;
}

/** Exactly one 32-bit, unshared memory that starts within the cap. */
function memoryProblem(info: ModuleInfo, capPages: number): Problem | undefined {
  if (info.memories.length > 1) return { message: "the module defines more than one memory", field: "memory" };
  const mem = info.memories[0];
  if (mem === undefined) return { message: "the module defines no memory", field: "memory" };
  if ((mem.flags & 0x04) !== 0) return { message: "the module's memory is 64-bit", field: "memory" };
  if ((mem.flags & 0x02) !== 0) return { message: "the module's memory is shared", field: "memory" };
  if (mem.flags > 0x01) return { message: `the module's memory has unsupported limit flags 0x${mem.flags.toString(16)}`, field: "memory" };
  if (mem.min > capPages) return { message: `the module's memory starts at ${mem.min} pages, more than the cap of ${capPages} (${capPages * WASM_PAGE} bytes)`, field: "memory.initial" };
  if (mem.max !== undefined && mem.max < mem.min) return { message: "the module's memory maximum is below its minimum", field: "memory.maximum" };
  return undefined;
}

/** The memory exported as `memory`, and every ABI function export with its type. */
function exportProblem(info: ModuleInfo): Problem | undefined {
  const exports = new Map(info.exports.map((e) => [e.name, e]));
  const memExport = exports.get("memory");
  if (memExport === undefined || memExport.kind !== "memory" || memExport.index !== 0) return { message: "the module does not export its memory as \"memory\"", field: "exports.memory" };
  for (const [name, spec] of Object.entries(ABI_EXPORTS)) {
    const e = exports.get(name);
    if (e === undefined) {
      if (spec.required) return { message: `the module does not export ${name}`, field: `exports.${name}` };
      continue;
    }
    const t = e.kind === "func" ? functionType(info, e.index) : undefined;
    if (t === undefined) return { message: `export ${name} is not a function`, field: `exports.${name}` };
    if (!sameType(t, spec.type)) return { message: `export ${name} has type ${formatType(t)}, not ${formatType(spec.type)}`, field: `exports.${name}` };
  }
  return undefined;
}

/** `bytes` with the memory section replaced by one memory of `min` pages and maximum `max`. */
function withMemoryLimits(bytes: Uint8Array, section: { readonly start: number; readonly end: number }, min: number, max: number): Uint8Array {
  const content = [0x01, 0x01, ...encodeU32(min), ...encodeU32(max)];
  const head = [SectionId.Memory, ...encodeU32(content.length), ...content];
  const out = new Uint8Array(section.start + head.length + (bytes.length - section.end));
  out.set(bytes.subarray(0, section.start), 0);
  out.set(head, section.start);
  out.set(bytes.subarray(section.end), section.start + head.length);
  return out;
}

/** Checks `bytes` against `limits` and `caps` and rewrites its memory maximum; never throws. */
export function checkModule(bytes: Uint8Array, limits: Limits, caps: Caps): HostResult<CheckedModule> {
  if (bytes.length > caps.moduleBytes) return invalid(`the module is ${bytes.length} bytes, more than the cap of ${caps.moduleBytes}`, "module");
  let info: ModuleInfo;
  try {
    info = readModule(bytes);
  } catch (err) {
    if (err instanceof WasmFormatError) return invalid(`${err.message} (at byte ${err.offset})`, "module");
    return invalid("the module could not be read", "module");
  }
  const capPages = limits.memory / WASM_PAGE;
  const problem = importProblem(info) ?? memoryProblem(info, capPages) ?? exportProblem(info);
  if (problem !== undefined) return invalid(problem.message, problem.field);
  const mem = info.memories[0];
  const section = info.sections.find((s) => s.id === SectionId.Memory);
  if (mem === undefined || section === undefined) return invalid("the module defines no memory section", "memory");
  const maximum = Math.min(mem.max ?? capPages, capPages);
  return {
    ok: true,
    value: {
      digest: sha256Hex(bytes), bytes: withMemoryLimits(bytes, section, mem.min, maximum), memory: { initial: mem.min, maximum },
      initialize: info.exports.some((e) => e.name === "_initialize"),
    },
  };
}
