// Memory the host writes into. openfief_alloc hands out pinned ArrayBuffers, so the collector
// cannot move or free them while the host holds the address; the guest takes one back (checking
// it is one it handed out, of at least the length the host says it wrote) and unpins it.

/** The largest buffer the host may ask for: a request or a host_call answer (8 MiB). */
export const MAX_MESSAGE_BYTES: i32 = 8 << 20;

const pinned = new Map<usize, i32>();

/** Allocates and pins `len` bytes for the host; traps above MAX_MESSAGE_BYTES. */
export function allocPinned(len: i32): usize {
  if (len < 0 || len > MAX_MESSAGE_BYTES) abort("openfief_alloc: " + len.toString() + " bytes is over the 8 MiB message cap");
  const buf = __new(<usize>len, idof<ArrayBuffer>());
  __pin(buf);
  pinned.set(buf, len);
  return buf;
}

/**
 * Takes back a pinned buffer the host wrote `len` bytes into and copies them out; null when `ptr`
 * is not one openfief_alloc handed out, or `len` is longer than it. Unpins it either way.
 */
export function takePinned(ptr: usize, len: i32): Uint8Array | null {
  if (!pinned.has(ptr)) return null;
  const size = pinned.get(ptr);
  pinned.delete(ptr);
  __unpin(ptr);
  if (len < 0 || len > size) return null;
  // The ArrayBuffer at ptr is no longer pinned, but this local keeps it alive while it is read.
  const buffer = changetype<ArrayBuffer>(ptr);
  return Uint8Array.wrap(buffer, 0, len);
}

/** How many buffers the host holds right now (for tests of the SDK). */
export function pinnedCount(): i32 {
  return pinned.size;
}
