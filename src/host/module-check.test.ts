import { describe, expect, it } from "vitest";
import { BODY, guest, guestWat, wat } from "../../test/host/support/wat.js";
import { checkModule, validDigest } from "./module-check.js";
import { DEFAULT_CAPS, DEFAULT_LIMITS } from "./limits.js";
import { readModule } from "./wasm-reader.js";
import { wasm, type WasmMemory } from "./wasm-api.js";

const ok = guestWat({ body: BODY.echo });

async function check(text: string, limits = DEFAULT_LIMITS, caps = DEFAULT_CAPS) {
  return checkModule(await wat(text, { validate: !text.includes("shared") }), limits, caps);
}

describe("checkModule", () => {
  it("accepts a module that speaks the ABI and caps its memory at the limit", async () => {
    const r = await check(ok);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.memory).toEqual({ initial: 2, maximum: 1024 });
    expect(validDigest(r.value.digest)).toBe(true);
    const mem = readModule(r.value.bytes).memories;
    expect(mem).toEqual([{ flags: 1, min: 2, max: 1024 }]);
    const compiled = await wasm.compile(r.value.bytes);
    expect(wasm.Module.exports(compiled).map((e) => e.name)).toContain("openfief_call");
  });

  it("keeps a declared maximum below the cap", async () => {
    const r = await check(guestWat({ body: BODY.echo, memory: "2 8" }));
    expect(r.ok && r.value.memory).toEqual({ initial: 2, maximum: 8 });
  });

  it("lowers a declared maximum above the cap to the cap", async () => {
    const r = await check(guestWat({ body: BODY.echo, memory: "2 65536" }), { ...DEFAULT_LIMITS, memory: 16 * 65536 });
    expect(r.ok && r.value.memory).toEqual({ initial: 2, maximum: 16 });
  });

  it("rewrites the memory so that the compiled module cannot grow past the cap", async () => {
    const r = await check(guestWat({ body: BODY.echo }), { ...DEFAULT_LIMITS, memory: 4 * 65536 });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const inst = await wasm.instantiate(await wasm.compile(r.value.bytes), {
      wasi_snapshot_preview1: { fd_write: () => 0, proc_exit: () => undefined },
      openfief: { host_call: () => 0n },
    });
    const memory = inst.exports.memory as WasmMemory;
    expect(memory.grow(2)).toBe(2);
    expect(() => memory.grow(1)).toThrow(RangeError);
  });

  const refusals: [string, string, string, RegExp][] = [
    ["refuses a module whose memory is shared", `(module (memory (export "memory") 2 16 shared))`, "memory", /shared/],
    ["refuses a module whose memory is 64-bit", `(module (memory (export "memory") i64 2))`, "memory", /64-bit/],
    ["refuses a module with no memory", `(module (func (export "openfief_abi_version") (result i32) (i32.const 1)))`, "memory", /no memory/],
    ["refuses a module whose initial memory is above the cap", guestWat({ body: BODY.echo, memory: "1025" }), "memory.initial", /1025 pages/],
    ["refuses an import the host does not provide", guestWat({ body: BODY.echo, imports: '(import "env" "abort" (func (param i32 i32 i32 i32)))' }), "imports[3]", /env\.abort/],
    ["refuses an imported memory", ok.replace('(memory (export "memory") 2)', '(import "env" "memory" (memory 2)) (export "memory" (memory 0))'), "imports[3]", /memory/],
    ["refuses an imported global", guestWat({ body: BODY.echo, imports: '(import "env" "g" (global i32))' }), "imports[3]", /global/],
    ["refuses an imported table", guestWat({ body: BODY.echo, imports: '(import "env" "t" (table 1 funcref))' }), "imports[3]", /table/],
    ["refuses a WASI import with the wrong signature", guestWat({ body: BODY.echo, imports: '(import "wasi_snapshot_preview1" "random_get" (func (param i32) (result i32)))' }), "imports[3]", /random_get has type \(i32\) -> \(i32\)/],
    ["refuses host_call with the wrong signature", ok.replace('(func $host_call (param i32 i32) (result i64))', '(func $host_call (param i32 i32) (result i32))').replace(BODY.relay, "(i64.const 0)"), "imports[2]", /host_call/],
    ["refuses a module without openfief_call", ok.replace('(export "openfief_call")', ""), "exports.openfief_call", /does not export openfief_call/],
    ["refuses openfief_alloc of the wrong type", ok.replace('(func $alloc (export "openfief_alloc") (param $len i32) (result i32)', '(func (export "openfief_alloc") (param i64) (result i32) (i32.const 0)) (func $alloc (param $len i32) (result i32)'), "exports.openfief_alloc", /\(i64\)/],
    ["refuses a module that does not export its memory", ok.replace('(memory (export "memory") 2)', "(memory 2)"), "exports.memory", /memory/],
  ];
  it.each(refusals)("%s", async (_name, text, field, message) => {
    const r = await check(text);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ source: "host", code: "plugin_module_invalid", field });
    expect(r.error.message).toMatch(message);
  });

  it.each([
    ["bytes that are not WebAssembly", new TextEncoder().encode("#!/bin/sh\necho hi\n"), /magic/],
    ["a truncated module", new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 0x80]), /end|longer/],
    ["a module of another binary version", new Uint8Array([0, 0x61, 0x73, 0x6d, 2, 0, 0, 0]), /version/],
    ["a section that appears twice", new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 1, 0, 1, 1, 0]), /twice/],
    ["an unknown section", new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 99, 0]), /unknown section/],
    ["a vector count larger than its section", new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 2, 5, 0xff, 0xff, 0xff, 0xff, 0x0f]), /vector/],
  ])("refuses %s", (_name, bytes, message) => {
    const r = checkModule(bytes, DEFAULT_LIMITS, DEFAULT_CAPS);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ code: "plugin_module_invalid", field: "module" });
    expect(r.error.message).toMatch(message);
  });

  it("refuses a module above the size cap before reading it", async () => {
    const bytes = await guest({ body: BODY.echo });
    const r = checkModule(bytes, DEFAULT_LIMITS, { ...DEFAULT_CAPS, moduleBytes: bytes.length - 1 });
    expect(r.ok === false && r.error.message).toMatch(/more than the cap/);
  });

  it.each([
    ["", false], ["A".repeat(64), false], ["a".repeat(63), false], ["sha256:" + "a".repeat(64), false], ["0123456789abcdef".repeat(4), true],
  ])("validDigest(%j) is %s", (d, want) => {
    expect(validDigest(d)).toBe(want);
  });
});
