// The WASI preview1 functions the OpenFief host does something for (docs/abi.md): writing to
// stdout and stderr, the clock, randomness, and exiting. Everything else WASI names answers ENOSYS
// or EBADF there, so the SDK declares nothing else, and a module built with it imports only these.

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "fd_write")
export declare function fd_write(fd: u32, iovs: usize, iovsLen: usize, written: usize): u16;

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "clock_time_get")
export declare function clock_time_get(clock: u32, precision: u64, time: usize): u16;

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "random_get")
export declare function random_get(buf: usize, len: usize): u16;

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "proc_exit")
export declare function proc_exit(code: u32): void;

/** WASI's realtime clock. */
export const CLOCK_REALTIME: u32 = 0;
/** WASI's monotonic clock. */
export const CLOCK_MONOTONIC: u32 = 1;

/** Writes all of `len` bytes at `ptr` to `fd` (1 or 2); false when the host refused. */
export function writeAll(fd: u32, ptr: usize, len: usize): bool {
  // One iovec and the written count, on the heap so nothing is shared between calls.
  const scratch = __alloc(3 * sizeof<usize>());
  let ok = true;
  while (len > 0) {
    store<usize>(scratch, ptr);
    store<usize>(scratch, len, sizeof<usize>());
    store<usize>(scratch, 0, 2 * sizeof<usize>());
    if (fd_write(fd, scratch, 1, scratch + 2 * sizeof<usize>()) != 0) {
      ok = false;
      break;
    }
    const written = load<usize>(scratch, 2 * sizeof<usize>());
    if (written == 0 || written > len) {
      ok = false;
      break;
    }
    ptr += written;
    len -= written;
  }
  __free(scratch);
  return ok;
}

/** Nanoseconds on `clock` (CLOCK_REALTIME: since the Unix epoch), or -1 when the host refused. */
export function clockNanos(clock: u32): i64 {
  const out = __alloc(8);
  const errno = clock_time_get(clock, 1000, out);
  const t = errno == 0 ? load<i64>(out) : -1;
  __free(out);
  return t;
}

/** Fills `bytes` with random bytes from the host; false when it refused. */
export function fillRandom(bytes: Uint8Array): bool {
  return random_get(bytes.dataStart, <usize>bytes.length) == 0;
}
