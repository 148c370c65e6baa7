// Calendar dates as YYYY-MM-DD strings, without a clock: the connector never asks what day it
// is, it compares the dates the ECB published with the watermark.

function digit(s: string, i: i32): i32 {
  const c = s.charCodeAt(i);
  return c >= 0x30 && c <= 0x39 ? c - 0x30 : -1;
}

function daysInMonth(year: i32, month: i32): i32 {
  if (month == 2) return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28;
  return month == 4 || month == 6 || month == 9 || month == 11 ? 30 : 31;
}

/** True when `s` is a real calendar date written YYYY-MM-DD. */
export function isDate(s: string): bool {
  if (s.length != 10 || s.charCodeAt(4) != 0x2d || s.charCodeAt(7) != 0x2d) return false;
  for (let i = 0; i < 10; i++) if (i != 4 && i != 7 && digit(s, i) < 0) return false;
  const year = digit(s, 0) * 1000 + digit(s, 1) * 100 + digit(s, 2) * 10 + digit(s, 3);
  const month = digit(s, 5) * 10 + digit(s, 6);
  const day = digit(s, 8) * 10 + digit(s, 9);
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

/** Days since 1970-01-01 of a valid date (Howard Hinnant's days_from_civil). */
export function dayNumber(s: string): i32 {
  let y = digit(s, 0) * 1000 + digit(s, 1) * 100 + digit(s, 2) * 10 + digit(s, 3);
  const m = digit(s, 5) * 10 + digit(s, 6);
  const d = digit(s, 8) * 10 + digit(s, 9);
  if (m <= 2) y -= 1;
  const era = (y >= 0 ? y : y - 399) / 400;
  const yoe = y - era * 400;
  const doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

function pad2(n: i32): string {
  return n < 10 ? "0" + n.toString() : n.toString();
}

/** The date of a day number (Howard Hinnant's civil_from_days). */
export function dateOf(z: i32): string {
  z += 719468;
  const era = (z >= 0 ? z : z - 146096) / 146097;
  const doe = z - era * 146097;
  const yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  let y = yoe + era * 400;
  const doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const mp = (5 * doy + 2) / 153;
  const d = doy - (153 * mp + 2) / 5 + 1;
  const m = mp + (mp < 10 ? 3 : -9);
  if (m <= 2) y += 1;
  let year = y.toString();
  while (year.length < 4) year = "0" + year;
  return year + "-" + pad2(m) + "-" + pad2(d);
}

/** 0 for Monday … 6 for Sunday (1970-01-01 was a Thursday). */
export function weekday(day: i32): i32 {
  const r = (day + 3) % 7;
  return r < 0 ? r + 7 : r;
}

/**
 * The last Monday-to-Friday date before `date`. The ECB publishes on TARGET business days only,
 * all of them weekdays, so no publication can fall strictly between it and `date`.
 */
export function previousWeekday(date: string): string {
  let d = dayNumber(date) - 1;
  while (weekday(d) > 4) d--;
  return dateOf(d);
}
