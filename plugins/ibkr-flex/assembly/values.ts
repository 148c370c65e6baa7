// The value checks of a Flex statement's attributes: decimal strings kept as written (never a
// float), ISO dates from the formats a Flex query may be set to write, ISO 4217 currencies.

function isDigit(c: i32): bool {
  return c >= 0x30 && c <= 0x39;
}

/** `-?digits(.digits)?`: the decimals the connector contract takes, as IBKR writes them. */
export function isDecimal(s: string): bool {
  let i = 0;
  if (s.length > 0 && s.charCodeAt(0) == 0x2d) i = 1;
  const intStart = i;
  while (i < s.length && isDigit(s.charCodeAt(i))) i++;
  if (i == intStart) return false;
  if (i == s.length) return true;
  if (s.charCodeAt(i) != 0x2e) return false;
  i++;
  const fracStart = i;
  while (i < s.length && isDigit(s.charCodeAt(i))) i++;
  return i > fracStart && i == s.length;
}

/** True when a decimal is zero ("0", "-0.00"). */
export function isZero(s: string): bool {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c != 0x30 && c != 0x2d && c != 0x2e) return false;
  }
  return true;
}

/** The decimal with its sign flipped, digits untouched; zero stays as written without a sign. */
export function negate(s: string): string {
  if (s.startsWith("-")) return s.substring(1);
  if (isZero(s)) return s;
  return "-" + s;
}

/** The decimal without its sign. */
export function magnitude(s: string): string {
  return s.startsWith("-") ? s.substring(1) : s;
}

/** Three capital letters. */
export function isCurrency(s: string): bool {
  if (s.length != 3) return false;
  for (let i = 0; i < 3; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x41 || c > 0x5a) return false;
  }
  return true;
}

function daysIn(year: i32, month: i32): i32 {
  if (month == 2) return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28;
  return month == 4 || month == 6 || month == 9 || month == 11 ? 30 : 31;
}

function digitsAt(s: string, from: i32, n: i32): i32 {
  let v = 0;
  for (let i = from; i < from + n; i++) {
    const c = s.charCodeAt(i);
    if (!isDigit(c)) return -1;
    v = v * 10 + (c - 0x30);
  }
  return v;
}

function pad(n: i32, width: i32): string {
  let s = n.toString();
  while (s.length < width) s = "0" + s;
  return s;
}

function iso(year: i32, month: i32, day: i32): string | null {
  if (year < 1900 || year > 2999 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2);
}

/**
 * The ISO date (YYYY-MM-DD) of a Flex date or date-time: `yyyyMMdd` (the Flex default) or
 * `yyyy-MM-dd`, optionally followed by `;`, ` ` or `,` and a time; null for anything else.
 */
export function isoDate(value: string): string | null {
  let end = value.length;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c == 0x3b || c == 0x20 || c == 0x2c) {
      end = i;
      break;
    }
  }
  const d = value.substring(0, end);
  if (d.length == 8) return iso(digitsAt(d, 0, 4), digitsAt(d, 4, 2), digitsAt(d, 6, 2));
  if (d.length == 10 && d.charCodeAt(4) == 0x2d && d.charCodeAt(7) == 0x2d) return iso(digitsAt(d, 0, 4), digitsAt(d, 5, 2), digitsAt(d, 8, 2));
  return null;
}

/** The ISO date after an ISO date. */
export function nextDay(date: string): string {
  let y = digitsAt(date, 0, 4);
  let m = digitsAt(date, 5, 2);
  let d = digitsAt(date, 8, 2) + 1;
  if (d > daysIn(y, m)) {
    d = 1;
    m++;
    if (m > 12) {
      m = 1;
      y++;
    }
  }
  return pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2);
}
