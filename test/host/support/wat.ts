/**
 * Test guests, built from WebAssembly text by `wabt` (npm) in the test: a template that speaks
 * ABI version 1 (a bump allocator, `openfief_abi_version`, a `manifest` answer, a body per
 * behaviour) and the bodies the host's tests need.
 */
import wabtInit from "wabt";

type Wabt = Awaited<ReturnType<typeof wabtInit>>;
let wabt: Promise<Wabt> | undefined;

/**
 * Compiles WAT to a module's bytes (threads and memory64 parse too, for the refusal tests;
 * `validate: false` for modules that wabt's validator does not take, such as a shared memory).
 */
export async function wat(text: string, opts: { readonly validate?: boolean } = {}): Promise<Uint8Array> {
  wabt ??= wabtInit();
  const w = await wabt;
  const mod = w.parseWat("guest.wat", text, { threads: true, memory64: true, bulk_memory: true, multi_value: true, exceptions: true });
  try {
    mod.resolveNames();
    if (opts.validate !== false) mod.validate();
    return new Uint8Array(mod.toBinary({}).buffer);
  } finally {
    mod.destroy();
  }
}

/** A WAT string literal holding `text` as UTF-8, every byte that needs it escaped. */
export function watString(text: string): string {
  let out = "";
  for (const b of Buffer.from(text, "utf8")) {
    const safe = b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c;
    out += safe ? String.fromCharCode(b) : `\\${b.toString(16).padStart(2, "0")}`;
  }
  return `"${out}"`;
}

/** A valid manifest for test guests. */
export const TEST_MANIFEST = { capabilities: ["connector"], egress: [{ host: "api.example.com" }], secrets: [], dataTiers: [] };

/** Options of {@link guest}. */
export interface GuestOptions {
  /** The body of `openfief_call` for every method but `manifest`; locals $ptr, $len; must leave an i64. */
  readonly body: string;
  /** What `manifest` answers (the whole response); a `{"result": TEST_MANIFEST}` by default. */
  readonly manifestResponse?: string;
  readonly abiVersion?: number;
  /** Initial and maximum pages of the memory (no maximum by default). */
  readonly memory?: string;
  /** Extra module fields (imports go first: put them in `imports`). */
  readonly extra?: string;
  readonly imports?: string;
  /** Extra data segments: offset → text (offsets 3000–60000 are free). */
  readonly data?: Readonly<Record<number, string>>;
  /** Extra data segments already in WAT string escapes (binary data, see {@link u32le}). */
  readonly rawData?: Readonly<Record<number, string>>;
  /** A body for `_initialize` (omitted when undefined). */
  readonly initialize?: string;
}

const MANIFEST_PREFIX = '{"method":"manifest"';

/** A guest speaking ABI version 1; `openfief_call` runs `body` for every method but `manifest`. */
export function guestWat(o: GuestOptions): string {
  const manifest = o.manifestResponse ?? JSON.stringify({ result: TEST_MANIFEST });
  const data = [
    ...Object.entries(o.data ?? {}).map(([at, text]) => `(data (i32.const ${at}) ${watString(text)})`),
    ...Object.entries(o.rawData ?? {}).map(([at, text]) => `(data (i32.const ${at}) "${text}")`),
  ].join("\n  ");
  return `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "openfief" "host_call" (func $host_call (param i32 i32) (result i64)))
  ${o.imports ?? ""}
  (memory (export "memory") ${o.memory ?? "2"})
  (global $heap (mut i32) (i32.const 65536))
  (global $in_call (mut i32) (i32.const 0))
  (data (i32.const 1024) ${watString(MANIFEST_PREFIX)})
  (data (i32.const 2048) ${watString(manifest)})
  (data (i32.const 1100) ${watString('{"result":')})
  ${data}
  (func (export "openfief_abi_version") (result i32) (i32.const ${o.abiVersion ?? 1}))
  ${o.initialize === undefined ? "" : `(func (export "_initialize") ${o.initialize})`}
  ;; Bump allocation; a request (allocated outside a call) starts the heap afresh.
  (func $alloc (export "openfief_alloc") (param $len i32) (result i32)
    (local $p i32) (local $need i32)
    (if (i32.eqz (global.get $in_call)) (then (global.set $heap (i32.const 65536))))
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.set $need (i32.sub (i32.div_u (i32.add (global.get $heap) (i32.const 65535)) (i32.const 65536)) (memory.size)))
    (if (i32.gt_s (local.get $need) (i32.const 0))
      (then (if (i32.eq (memory.grow (local.get $need)) (i32.const -1)) (then unreachable))))
    (local.get $p))
  (func $pack (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32)) (i64.extend_i32_u (local.get $len))))
  (func $starts_with (param $p i32) (param $len i32) (param $q i32) (param $qlen i32) (result i32)
    (local $i i32)
    (if (i32.lt_u (local.get $len) (local.get $qlen)) (then (return (i32.const 0))))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $qlen)))
      (if (i32.ne (i32.load8_u (i32.add (local.get $p) (local.get $i))) (i32.load8_u (i32.add (local.get $q) (local.get $i))))
        (then (return (i32.const 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (i32.const 1))
  ;; Writes the decimal digits of $n at $at; returns how many.
  (func $itoa (param $n i32) (param $at i32) (result i32)
    (local $len i32) (local $m i32) (local $i i32)
    (local.set $m (local.get $n))
    (loop $count
      (local.set $len (i32.add (local.get $len) (i32.const 1)))
      (local.set $m (i32.div_u (local.get $m) (i32.const 10)))
      (br_if $count (i32.ne (local.get $m) (i32.const 0))))
    (local.set $i (local.get $len))
    (local.set $m (local.get $n))
    (loop $digit
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (i32.store8 (i32.add (local.get $at) (local.get $i)) (i32.add (i32.const 48) (i32.rem_u (local.get $m) (i32.const 10))))
      (local.set $m (i32.div_u (local.get $m) (i32.const 10)))
      (br_if $digit (i32.ne (local.get $i) (i32.const 0))))
    (local.get $len))
  ;; {"result":N} for a number N, in fresh memory.
  (func $result_number (param $n i32) (result i64)
    (local $p i32) (local $k i32)
    (local.set $p (call $alloc (i32.const 32)))
    (memory.copy (local.get $p) (i32.const 1100) (i32.const 10))
    (local.set $k (call $itoa (local.get $n) (i32.add (local.get $p) (i32.const 10))))
    (i32.store8 (i32.add (local.get $p) (i32.add (i32.const 10) (local.get $k))) (i32.const 125))
    (call $pack (local.get $p) (i32.add (local.get $k) (i32.const 11))))
  (func $recurse (param $d i32) (call $recurse (i32.add (local.get $d) (i32.const 1))))
  ${o.extra ?? ""}
  (func (export "openfief_call") (param $ptr i32) (param $len i32) (result i64)
    (local $p i32) (local $i i32) (local $n i32)
    (global.set $in_call (i32.const 1))
    (if (call $starts_with (local.get $ptr) (local.get $len) (i32.const 1024) (i32.const ${MANIFEST_PREFIX.length}))
      (then (global.set $in_call (i32.const 0)) (return (call $pack (i32.const 2048) (i32.const ${Buffer.byteLength(manifest)})))))
    (call $finish ${o.body}))
  (func $finish (param $r i64) (result i64) (global.set $in_call (i32.const 0)) (local.get $r))
)`;
}

/** The bodies of the behaviours the tests use. */
export const BODY = {
  /** `{"result": <the request>}`. */
  echo: `(block (result i64)
      (local.set $p (call $alloc (i32.add (local.get $len) (i32.const 11))))
      (memory.copy (local.get $p) (i32.const 1100) (i32.const 10))
      (memory.copy (i32.add (local.get $p) (i32.const 10)) (local.get $ptr) (local.get $len))
      (i32.store8 (i32.add (local.get $p) (i32.add (local.get $len) (i32.const 10))) (i32.const 125))
      (call $pack (local.get $p) (i32.add (local.get $len) (i32.const 11))))`,
  /** Hands the request to `host_call` as it is and answers with what the host answered. */
  relay: `(call $host_call (local.get $ptr) (local.get $len))`,
  /** Loops forever. */
  spin: `(block (result i64) (loop $l (br $l)) (unreachable))`,
  /** Grows its memory until it cannot, then spins on `memory.grow(0)` (the V8 hazard). */
  growSpin: `(block (result i64)
      (block $full (loop $g (br_if $full (i32.eq (memory.grow (i32.const 16)) (i32.const -1))) (br $g)))
      (loop $l (drop (memory.grow (i32.const 0))) (br $l)) (unreachable))`,
  /** Grows its memory until it cannot, then traps (what a real allocator does when out of memory). */
  allocForever: `(block (result i64)
      (block $full (loop $g (br_if $full (i32.eq (memory.grow (i32.const 1)) (i32.const -1))) (br $g)))
      (unreachable))`,
  /** Grows its memory until it cannot and answers how many pages it has. */
  growReport: `(block (result i64)
      (block $full (loop $g (br_if $full (i32.eq (memory.grow (i32.const 1)) (i32.const -1))) (br $g)))
      (call $result_number (memory.size)))`,
  /** Recurses without end. */
  recurse: `(block (result i64) (call $recurse (i32.const 0)) (unreachable))`,
  /** Calls proc_exit(3). */
  exit: `(block (result i64) (call $proc_exit (i32.const 3)) (unreachable))`,
  /** Calls host_call with a pointer past the end of its memory. */
  badPointer: `(call $host_call (i32.const -16) (i32.const 100))`,
  /** Traps. */
  trap: `(block (result i64) (unreachable))`,
  /** Calls host_call with a malformed request forever, ignoring the answers. */
  hostCallFlood: `(block (result i64) (loop $l (drop (call $host_call (i32.const 1024) (i32.const 5))) (br $l)) (unreachable))`,
} as const;

/** A body that answers the fixed text at data offset 4096. */
export function constantBody(text: string): { body: string; data: Record<number, string> } {
  return { body: `(call $pack (i32.const 4096) (i32.const ${Buffer.byteLength(text)}))`, data: { 4096: text } };
}

/** A little-endian u32 in WAT string escapes. */
export function u32le(n: number): string {
  return [0, 8, 16, 24].map((s) => `\\${((n >>> s) & 0xff).toString(16).padStart(2, "0")}`).join("");
}

/**
 * A body that writes the text at `at` (`len` bytes) `times` times to stdout and to stderr, then
 * answers the text at 4096 (`answerLen` bytes). The iovec is at 3000.
 */
export function floodBody(at: number, len: number, times: number, answerLen: number): { body: string; rawData: Record<number, string> } {
  return {
    rawData: { 3000: u32le(at) + u32le(len) },
    body: `(block (result i64)
      (local.set $i (i32.const 0))
      (loop $l
        (drop (call $fd_write (i32.const 2) (i32.const 3000) (i32.const 1) (i32.const 3016)))
        (drop (call $fd_write (i32.const 1) (i32.const 3000) (i32.const 1) (i32.const 3016)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br_if $l (i32.lt_u (local.get $i) (i32.const ${times}))))
      (call $pack (i32.const 4096) (i32.const ${answerLen})))`,
  };
}

/**
 * A body that counts its calls in a global and answers `{"result":N}`, or traps when the request
 * holds the method "trap" (its 12th byte is 't'): a fresh instance starts from 1 again.
 */
export const COUNTER = {
  extra: "(global $calls (mut i32) (i32.const 0))",
  body: `(block (result i64)
      (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
      (if (i32.eq (i32.load8_u (i32.add (local.get $ptr) (i32.const 11))) (i32.const 116)) (then unreachable))
      (call $result_number (global.get $calls)))`,
};

/** Builds a guest's bytes. */
export async function guest(o: GuestOptions): Promise<Uint8Array> {
  return wat(guestWat(o));
}
