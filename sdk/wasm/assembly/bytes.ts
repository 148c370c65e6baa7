// UTF-8 checked the strict way (no overlong forms, no surrogates, nothing above U+10FFFF) and a
// growable byte buffer that writers encode into directly, so an answer is never held as a UTF-16
// string and its UTF-8 copy at once.

/** The offset of the first byte that breaks UTF-8 in `len` bytes at `ptr`, or -1 when all is valid. */
export function invalidUtf8At(ptr: usize, len: i32): i32 {
  let i = 0;
  while (i < len) {
    const b0 = <u32>load<u8>(ptr + <usize>i);
    if (b0 < 0x80) {
      i++;
      continue;
    }
    let need = 0;
    let min: u32 = 0;
    let cp: u32 = 0;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      need = 1;
      min = 0x80;
      cp = b0 & 0x1f;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      need = 2;
      min = 0x800;
      cp = b0 & 0x0f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      need = 3;
      min = 0x10000;
      cp = b0 & 0x07;
    } else {
      return i;
    }
    if (i + need >= len) return i;
    for (let k = 1; k <= need; k++) {
      const b = <u32>load<u8>(ptr + <usize>(i + k));
      if ((b & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += need + 1;
  }
  return -1;
}

/** True when `bytes` is valid UTF-8. */
export function isUtf8(bytes: Uint8Array): bool {
  return invalidUtf8At(bytes.dataStart, bytes.length) < 0;
}

/** A growable byte buffer. */
export class ByteWriter {
  private buf: ArrayBuffer;
  private len: i32 = 0;

  constructor(initial: i32 = 256) {
    this.buf = new ArrayBuffer(initial < 16 ? 16 : initial);
  }

  get length(): i32 {
    return this.len;
  }

  private reserve(extra: i32): void {
    const need = this.len + extra;
    let cap = this.buf.byteLength;
    if (need <= cap) return;
    while (cap < need) cap = cap << 1;
    const next = new ArrayBuffer(cap);
    memory.copy(changetype<usize>(next), changetype<usize>(this.buf), <usize>this.len);
    this.buf = next;
  }

  /** Appends one byte. */
  byte(b: u8): ByteWriter {
    this.reserve(1);
    store<u8>(changetype<usize>(this.buf) + <usize>this.len, b);
    this.len++;
    return this;
  }

  /** Appends `len` bytes at `ptr`. */
  raw(ptr: usize, len: i32): ByteWriter {
    this.reserve(len);
    memory.copy(changetype<usize>(this.buf) + <usize>this.len, ptr, <usize>len);
    this.len += len;
    return this;
  }

  /** Appends the bytes of `bytes`. */
  bytes(bytes: Uint8Array): ByteWriter {
    return this.raw(bytes.dataStart, bytes.length);
  }

  /** Appends `s` encoded as UTF-8 (a lone surrogate becomes U+FFFD). */
  text(s: string): ByteWriter {
    const n = <i32>String.UTF8.byteLength(s);
    this.reserve(n);
    const written = String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, changetype<usize>(this.buf) + <usize>this.len, false, String.UTF8.ErrorMode.REPLACE);
    this.len += <i32>written;
    return this;
  }

  /** Appends the UTF-16 units `start` to `end` of `s` encoded as UTF-8, without copying them out first. */
  textRange(s: string, start: i32, end: i32): ByteWriter {
    if (end <= start) return this;
    // At most 3 bytes per UTF-16 unit (a surrogate pair, two units, is 4 bytes).
    this.reserve((end - start) * 3);
    const written = String.UTF8.encodeUnsafe(changetype<usize>(s) + (<usize>start << 1), end - start, changetype<usize>(this.buf) + <usize>this.len, false, String.UTF8.ErrorMode.REPLACE);
    this.len += <i32>written;
    return this;
  }

  /** Appends the code point `cp` (at most U+10FFFF; a surrogate is written as it comes) as UTF-8. */
  codePoint(cp: u32): ByteWriter {
    this.reserve(4);
    const p = changetype<usize>(this.buf) + <usize>this.len;
    if (cp < 0x80) {
      store<u8>(p, <u8>cp);
      this.len += 1;
    } else if (cp < 0x800) {
      store<u8>(p, <u8>(0xc0 | (cp >> 6)));
      store<u8>(p + 1, <u8>(0x80 | (cp & 0x3f)));
      this.len += 2;
    } else if (cp < 0x10000) {
      store<u8>(p, <u8>(0xe0 | (cp >> 12)));
      store<u8>(p + 1, <u8>(0x80 | ((cp >> 6) & 0x3f)));
      store<u8>(p + 2, <u8>(0x80 | (cp & 0x3f)));
      this.len += 3;
    } else {
      store<u8>(p, <u8>(0xf0 | (cp >> 18)));
      store<u8>(p + 1, <u8>(0x80 | ((cp >> 12) & 0x3f)));
      store<u8>(p + 2, <u8>(0x80 | ((cp >> 6) & 0x3f)));
      store<u8>(p + 3, <u8>(0x80 | (cp & 0x3f)));
      this.len += 4;
    }
    return this;
  }

  /** The bytes written so far, as a new ArrayBuffer of exactly that length. */
  toArrayBuffer(): ArrayBuffer {
    const out = new ArrayBuffer(this.len);
    memory.copy(changetype<usize>(out), changetype<usize>(this.buf), <usize>this.len);
    return out;
  }

  /** The bytes written so far, as a Uint8Array. */
  toBytes(): Uint8Array {
    return Uint8Array.wrap(this.toArrayBuffer());
  }

  /** The bytes written so far, decoded (they are UTF-8 when only text() and ASCII bytes went in). */
  toString(): string {
    return String.UTF8.decodeUnsafe(changetype<usize>(this.buf), <usize>this.len);
  }
}
