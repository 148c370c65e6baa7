/**
 * Punycode (RFC 3492), only as far as checking IDNA A-labels needs: decode an `xn--` label's
 * body to code points and encode it back. The pure model may not import `node:punycode`/`node:url`,
 * and this is small enough to hold here. Both functions return undefined instead of throwing.
 */

const BASE = 36;
const TMIN = 1;
const TMAX = 26;
const SKEW = 38;
const DAMP = 700;
const INITIAL_BIAS = 72;
const INITIAL_N = 128;
const MAX_INT = 0x7fffffff;
const MAX_CODE_POINT = 0x10ffff;

function adapt(delta: number, numPoints: number, firstTime: boolean): number {
  let d = firstTime ? Math.floor(delta / DAMP) : delta >> 1;
  d += Math.floor(d / numPoints);
  let k = 0;
  while (d > ((BASE - TMIN) * TMAX) >> 1) {
    d = Math.floor(d / (BASE - TMIN));
    k += BASE;
  }
  return k + Math.floor(((BASE - TMIN + 1) * d) / (d + SKEW));
}

function threshold(k: number, bias: number): number {
  return k <= bias ? TMIN : k >= bias + TMAX ? TMAX : k - bias;
}

/** Lower-case digits only: A-labels in a canonical hostname are lower case. */
function digitValue(c: number): number {
  if (c >= 0x61 && c <= 0x7a) return c - 0x61; // a-z
  if (c >= 0x30 && c <= 0x39) return c - 0x30 + 26; // 0-9
  return BASE;
}

function digitChar(d: number): string {
  return String.fromCharCode(d < 26 ? 0x61 + d : 0x30 + d - 26);
}

/**
 * Decodes a Punycode string (the part of an A-label after `xn--`) into code points, or returns
 * undefined when it is not valid Punycode (bad digit, overflow, a basic or out-of-range code point
 * where an encoded one must be, or a surrogate).
 */
export function punycodeDecode(input: string): number[] | undefined {
  const output: number[] = [];
  const b = input.lastIndexOf("-");
  for (let j = 0; j < Math.max(b, 0); j++) {
    const c = input.charCodeAt(j);
    if (c >= 0x80) return undefined;
    output.push(c);
  }
  let n = INITIAL_N;
  let i = 0;
  let bias = INITIAL_BIAS;
  let pos = b > 0 ? b + 1 : 0;
  while (pos < input.length) {
    const oldi = i;
    let w = 1;
    for (let k = BASE; ; k += BASE) {
      if (pos >= input.length) return undefined;
      const digit = digitValue(input.charCodeAt(pos++));
      if (digit >= BASE) return undefined;
      if (digit > Math.floor((MAX_INT - i) / w)) return undefined;
      i += digit * w;
      const t = threshold(k, bias);
      if (digit < t) break;
      if (w > Math.floor(MAX_INT / (BASE - t))) return undefined;
      w *= BASE - t;
    }
    const length = output.length + 1;
    bias = adapt(i - oldi, length, oldi === 0);
    if (Math.floor(i / length) > MAX_INT - n) return undefined;
    n += Math.floor(i / length);
    i %= length;
    if (n < 0x80 || n > MAX_CODE_POINT || (n >= 0xd800 && n <= 0xdfff)) return undefined;
    output.splice(i, 0, n);
    i++;
  }
  return output;
}

/** Encodes code points as Punycode (without the `xn--` prefix), or undefined on overflow. */
export function punycodeEncode(input: readonly number[]): string | undefined {
  let out = "";
  for (const c of input) if (c < 0x80) out += String.fromCharCode(c);
  const basicLength = out.length;
  let h = basicLength;
  if (basicLength > 0) out += "-";
  let n = INITIAL_N;
  let delta = 0;
  let bias = INITIAL_BIAS;
  while (h < input.length) {
    let m = MAX_INT;
    for (const c of input) if (c >= n && c < m) m = c;
    if (m - n > Math.floor((MAX_INT - delta) / (h + 1))) return undefined;
    delta += (m - n) * (h + 1);
    n = m;
    for (const c of input) {
      if (c < n) {
        delta++;
        if (delta > MAX_INT) return undefined;
      }
      if (c === n) {
        let q = delta;
        for (let k = BASE; ; k += BASE) {
          const t = threshold(k, bias);
          if (q < t) break;
          out += digitChar(t + ((q - t) % (BASE - t)));
          q = Math.floor((q - t) / (BASE - t));
        }
        out += digitChar(q);
        bias = adapt(delta, h + 1, h === basicLength);
        delta = 0;
        h++;
      }
    }
    delta++;
    n++;
  }
  return out;
}
