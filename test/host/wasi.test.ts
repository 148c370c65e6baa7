/**
 * What WASI preview 1 gives a guest (docs/abi.md): a clock, randomness, stdout/stderr, empty
 * arguments and environment; every other function ENOSYS, and EBADF on any descriptor but 1 and 2.
 * One guest answers, per method, the errno (× 1000) and a value it read.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHost, type TestHost } from "./support/host.js";
import { guest } from "./support/wat.js";

const IMPORTS = `
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock_time_get (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_fdstat_get" (func $fd_fdstat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "sock_accept" (func $sock_accept (param i32 i32 i32) (result i32)))`;

/** `(if method's first letter is c then a else …)`, innermost last. */
function dispatch(cases: [string, string][]): string {
  let out = "(i64.const 0)";
  for (const [letter, body] of [...cases].reverse()) {
    out = `(if (result i64) (i32.eq (local.get $n) (i32.const ${letter.charCodeAt(0)})) (then ${body}) (else ${out}))`;
  }
  return `(block (result i64) (local.set $n (i32.load8_u (i32.add (local.get $ptr) (i32.const 11)))) ${out})`;
}

const r = (expr: string) => `(call $result_number ${expr})`;
const BODY = dispatch([
  ["r", r("(i32.add (i32.mul (call $random_get (i32.const 3100) (i32.const 8)) (i32.const 100000)) (i32.and (i32.load (i32.const 3100)) (i32.const 0xffff)))")],
  ["c", r("(i32.add (i32.mul (call $clock_time_get (i32.const 0) (i64.const 0) (i32.const 3200)) (i32.const 1000000)) (i32.wrap_i64 (i64.div_u (i64.load (i32.const 3200)) (i64.const 1000000000))))")],
  ["m", r("(i32.add (i32.mul (call $clock_time_get (i32.const 1) (i64.const 0) (i32.const 3200)) (i32.const 1000)) (i64.ne (i64.load (i32.const 3200)) (i64.const 0)))")],
  ["k", r("(call $clock_time_get (i32.const 7) (i64.const 0) (i32.const 3200))")],
  ["b", r("(call $fd_write (i32.const 3) (i32.const 3300) (i32.const 0) (i32.const 3304))")],
  ["i", r("(call $fd_read (i32.const 0) (i32.const 3300) (i32.const 0) (i32.const 3304))")],
  ["p", r("(call $path_open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0) (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 3300))")],
  ["o", r("(call $poll_oneoff (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 3300))")],
  ["a", r("(i32.add (i32.mul (call $args_sizes_get (i32.const 3300) (i32.const 3304)) (i32.const 1000)) (i32.add (i32.load (i32.const 3300)) (i32.load (i32.const 3304))))")],
  ["e", r("(i32.add (i32.mul (call $environ_sizes_get (i32.const 3300) (i32.const 3304)) (i32.const 1000)) (i32.add (i32.load (i32.const 3300)) (i32.load (i32.const 3304))))")],
  ["f", r("(i32.add (i32.mul (call $fd_fdstat_get (i32.const 1) (i32.const 3400)) (i32.const 1000)) (i32.load8_u (i32.const 3400)))")],
  ["g", r("(call $fd_fdstat_get (i32.const 0) (i32.const 3400))")],
  ["s", r("(call $sock_accept (i32.const 1) (i32.const 0) (i32.const 3300))")],
  ["x", r("(call $random_get (i32.const -8) (i32.const 64))")],
]);

let t: TestHost;
let d: string;
beforeAll(async () => {
  t = await startHost();
  const res = await t.host.install(await guest({ body: BODY, imports: IMPORTS }));
  if (!res.ok) throw new Error(res.error.message);
  d = res.value.digest;
});
afterAll(async () => {
  await t.close();
});

async function result(method: string): Promise<number> {
  const res = await t.host.call("wasi", d, { method });
  if (!res.ok) throw new Error(`${method}: ${res.error.code} ${res.error.message}`);
  return res.result as number;
}

describe("WASI for a guest", () => {
  it.each([
    ["monotonic", 1, "a monotonic clock"],
    ["kclock", 28, "EINVAL for another clock"],
    ["badfd", 8, "EBADF for a write to another descriptor"],
    ["input", 8, "EBADF for a read of stdin"],
    ["path", 8, "EBADF for a path on a descriptor that is not open"],
    ["oneoff", 52, "ENOSYS for poll_oneoff"],
    ["args", 0, "no arguments"],
    ["environ", 0, "no environment"],
    ["fdstat", 2, "stdout as a character device"],
    ["gstat", 8, "EBADF for fdstat of stdin"],
    ["sock", 52, "ENOSYS for a socket call on stdout"],
    ["xfault", 21, "EFAULT for a buffer outside memory"],
  ])("%s answers %i (%s)", async (method, want) => {
    expect(await result(method)).toBe(want);
  });

  it("gives random bytes that differ between calls", async () => {
    const values = new Set<number>();
    for (let i = 0; i < 4; i++) values.add(await result("random"));
    expect(values.size).toBeGreaterThan(1);
    for (const v of values) expect(v).toBeLessThan(100_000); // errno 0 (× 100,000), 16 random bits
  });

  it("gives the real time", async () => {
    const before = Math.floor(Date.now() / 1000);
    const seconds = await result("clock");
    expect(seconds).toBeGreaterThanOrEqual(before - 1);
    expect(seconds).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 1);
  });
});
