// What AssemblyScript's standard library would otherwise import from "env" (abort, trace, seed),
// routed to WASI instead: the OpenFief host refuses any import but openfief.host_call and
// wasi_snapshot_preview1 (docs/abi.md). The SDK's asconfig.json names this folder as a `lib` and
// aliases the three globals here with `use`. A file of a `lib` folder sees only itself, so it
// declares the WASI functions it needs again.

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "fd_write")
declare function env_fd_write(fd: u32, iovs: usize, iovsLen: usize, written: usize): u16;

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "random_get")
declare function env_random_get(buf: usize, len: usize): u16;

// A fixed buffer: abort may run because memory ran out, so it allocates nothing.
const ABORT_CAP: usize = 480;
// @ts-ignore: decorator
@lazy const abortBuf = memory.data(512 + 16);

function putAscii(at: usize, text: string): usize {
  for (let i = 0; i < text.length && at < ABORT_CAP; i++) {
    const c = <u32>text.charCodeAt(i);
    // One line, printable ASCII: the host splits its log on newlines.
    store<u8>(abortBuf + at, c >= 0x20 && c < 0x7f ? <u8>c : 0x3f);
    at++;
  }
  return at;
}

function putNumber(at: usize, n: u32): usize {
  let digits: u32 = 1;
  for (let t = n; t >= 10; t /= 10) digits++;
  if (at + digits > ABORT_CAP) return at;
  for (let i: u32 = 0; i < digits; i++) {
    store<u8>(abortBuf + at + digits - 1 - i, <u8>(0x30 + n % 10));
    n /= 10;
  }
  return at + digits;
}

/** `abort`: one line on stderr, then a trap, which the host reports as plugin_failed. */
export function openfief_abort(message: string | null = null, fileName: string | null = null, line: u32 = 0, column: u32 = 0): void {
  let at = putAscii(0, "abort: ");
  if (message !== null) at = putAscii(at, message);
  if (fileName !== null) {
    at = putAscii(at, " at ");
    at = putAscii(at, fileName);
    at = putAscii(at, ":");
    at = putNumber(at, line);
    at = putAscii(at, ":");
    at = putNumber(at, column);
  }
  store<u8>(abortBuf + at, 0x0a);
  at++;
  const iov = abortBuf + 512;
  store<usize>(iov, abortBuf);
  store<usize>(iov, at, sizeof<usize>());
  env_fd_write(2, iov, 1, iov + 2 * sizeof<usize>());
  unreachable();
}

/** `trace`: the message on stderr (the numbers are dropped: trace is for debugging only). */
export function openfief_trace(message: string, n: i32 = 0, a0: f64 = 0, a1: f64 = 0, a2: f64 = 0, a3: f64 = 0, a4: f64 = 0): void {
  let at = putAscii(0, "trace: ");
  at = putAscii(at, message);
  store<u8>(abortBuf + at, 0x0a);
  at++;
  const iov = abortBuf + 512;
  store<usize>(iov, abortBuf);
  store<usize>(iov, at, sizeof<usize>());
  env_fd_write(2, iov, 1, iov + 2 * sizeof<usize>());
}

/** `seed` (for Math.random): 8 bytes from the host's random_get, never zero. */
export function openfief_seed(): f64 {
  const buf = abortBuf + 512;
  let bits: u64 = 0;
  do {
    if (env_random_get(buf, 8) != 0) unreachable();
    bits = load<u64>(buf);
  } while (bits == 0);
  return reinterpret<f64>(bits);
}
