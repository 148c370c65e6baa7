/**
 * Bit arithmetic on tree sizes and indexes. They are JavaScript numbers up to 2^53 - 1 (ADR 0130),
 * where the bitwise operators would cut them to 32 bits: these helpers divide by powers of two
 * instead, which is exact for safe integers.
 */

const TWO_32 = 2 ** 32;

/** A tree size or index: a safe integer, zero or more. */
export function isIndex(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

/** `n >> k` for a safe integer `n ≥ 0`. */
export function shr(n: number, k: number): number {
  return Math.floor(n / 2 ** k);
}

/** The number of bits needed to write `n ≥ 0` (0 for 0). */
export function bitLength(n: number): number {
  return n < TWO_32 ? 32 - Math.clz32(n) : 32 + bitLength(Math.floor(n / TWO_32));
}

function popcount32(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** The number of set bits of `n ≥ 0`. */
export function popcount(n: number): number {
  return popcount32(n % TWO_32) + (n >= TWO_32 ? popcount32(Math.floor(n / TWO_32)) : 0);
}

/** The number of trailing zero bits of `n > 0`. */
export function trailingZeros(n: number): number {
  const lo = n % TWO_32;
  if (lo !== 0) return 31 - Math.clz32(lo & -lo);
  return 32 + trailingZeros(Math.floor(n / TWO_32));
}

/** The largest power of two strictly below `n ≥ 2` (RFC 9162's k in the split of D[0:n]). */
export function splitPoint(n: number): number {
  return 2 ** (bitLength(n - 1) - 1);
}

export function isPowerOfTwo(n: number): boolean {
  return n > 0 && popcount(n) === 1;
}
