import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bitLength, isPowerOfTwo, popcount, shr, splitPoint, trailingZeros } from "./bits.js";

const MAX = Number.MAX_SAFE_INTEGER;
const big = (n: number) => BigInt(n);

describe("bit arithmetic on sizes up to 2^53 - 1", () => {
  it.each([
    [0, 0, 0],
    [1, 1, 1],
    [2, 2, 1],
    [255, 8, 8],
    [256, 9, 1],
    [2 ** 32 - 1, 32, 32],
    [2 ** 32, 33, 1],
    [2 ** 32 + 1, 33, 2],
    [MAX, 53, 53],
  ])("gives %d a bit length of %d and %d set bits", (n, len, ones) => {
    expect(bitLength(n)).toBe(len);
    expect(popcount(n)).toBe(ones);
  });

  it.each([
    [1, 0],
    [8, 3],
    [2 ** 32, 32],
    [2 ** 40 + 2 ** 33, 33],
    [2 ** 52, 52],
  ])("counts the trailing zeros of %d as %d", (n, tz) => {
    expect(trailingZeros(n)).toBe(tz);
  });

  it.each([
    [2, 1],
    [3, 2],
    [4, 2],
    [5, 4],
    [8, 4],
    [9, 8],
    [2 ** 40 + 1, 2 ** 40],
    [MAX, 2 ** 52],
  ])("splits %d leaves after the largest power of two below it, %d", (n, k) => {
    expect(splitPoint(n)).toBe(k);
  });

  it("agrees with BigInt arithmetic on every safe integer tried", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX }), fc.integer({ min: 0, max: 60 }), (n, k) => {
        expect(big(shr(n, k))).toBe(big(n) >> big(k));
        expect(bitLength(n)).toBe(big(n).toString(2).length);
        expect(popcount(n)).toBe([...big(n).toString(2)].filter((c) => c === "1").length);
        expect(trailingZeros(n)).toBe(big(n).toString(2).length - 1 - big(n).toString(2).lastIndexOf("1"));
        expect(isPowerOfTwo(n)).toBe((big(n) & (big(n) - 1n)) === 0n);
      }),
      { numRuns: 2000 },
    );
  });
});
