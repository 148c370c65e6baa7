/**
 * The request target as Go's `net/url` reads it, because kube-apiserver's RequestInfo works on
 * `req.URL.Path` (percent-decoded, so `%2F` becomes a separator) and `req.URL.Query()` (split on
 * `&`, a pair with `;` or a bad escape dropped, `+` read as a space). Unlike Go we refuse bytes that
 * are not UTF-8 (Go keeps them as they are): our rules are Unicode strings, and two different
 * invalid sequences must never compare equal (docs/adr/0022).
 */

/** Why a request target cannot be read. */
export type TargetProblem = "not_origin_form" | "control_character" | "bad_escape" | "not_utf8";

/** The decoded path, the raw query, and the query's values by key in order. */
export interface RequestTarget {
  readonly path: string;
  readonly rawPath: string;
  readonly rawQuery: string;
  readonly query: ReadonlyMap<string, readonly string[]>;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  return -1;
}

/**
 * Go's `unescape`: `%XX` to its byte (`%` not followed by two hex digits is an error), and, for a
 * query component, `+` to a space. The bytes must then be UTF-8.
 */
export function goUnescape(s: string, query: boolean): { ok: true; value: string } | { ok: false; problem: TargetProblem } {
  if (!s.includes("%") && !(query && s.includes("+"))) return { ok: true, value: s };
  const bytes: number[] = [];
  const raw = Buffer.from(s, "utf8");
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i] as number;
    if (b === 0x25) {
      const hi = i + 2 < raw.length ? hexValue(raw[i + 1] as number) : -1;
      const lo = i + 2 < raw.length ? hexValue(raw[i + 2] as number) : -1;
      if (hi < 0 || lo < 0) return { ok: false, problem: "bad_escape" };
      bytes.push(hi * 16 + lo);
      i += 2;
    } else if (query && b === 0x2b) {
      bytes.push(0x20);
    } else {
      bytes.push(b);
    }
  }
  try {
    return { ok: true, value: decoder.decode(Uint8Array.from(bytes)) };
  } catch {
    return { ok: false, problem: "not_utf8" };
  }
}

/**
 * Go's `url.ParseQuery`, keeping what `Query()` keeps: pairs split on `&`, empty ones skipped, a
 * pair containing `;` dropped, key and value split at the first `=`, each unescaped (a pair that
 * fails to unescape is dropped). Non-UTF-8 anywhere refuses the whole query.
 */
export function goParseQuery(raw: string): { ok: true; value: Map<string, string[]> } | { ok: false; problem: TargetProblem } {
  const out = new Map<string, string[]>();
  for (const pair of raw.split("&")) {
    if (pair === "" || pair.includes(";")) continue;
    const eq = pair.indexOf("=");
    const k = goUnescape(eq < 0 ? pair : pair.slice(0, eq), true);
    const v = goUnescape(eq < 0 ? "" : pair.slice(eq + 1), true);
    if ((!k.ok && k.problem === "not_utf8") || (!v.ok && v.problem === "not_utf8")) return { ok: false, problem: "not_utf8" };
    if (!k.ok || !v.ok) continue;
    const list = out.get(k.value);
    if (list === undefined) out.set(k.value, [v.value]);
    else list.push(v.value);
  }
  return { ok: true, value: out };
}

/** Reads an origin-form request target (`/path?query`), as Go's server does before any handler. */
export function parseRequestTarget(target: string): { ok: true; value: RequestTarget } | { ok: false; problem: TargetProblem } {
  if (!target.startsWith("/")) return { ok: false, problem: "not_origin_form" };
  // Go refuses a URL with an ASCII control byte before anything reads it.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(target)) return { ok: false, problem: "control_character" };
  const q = target.indexOf("?");
  const rawPath = q < 0 ? target : target.slice(0, q);
  const rawQuery = q < 0 ? "" : target.slice(q + 1);
  const path = goUnescape(rawPath, false);
  if (!path.ok) return path;
  const query = goParseQuery(rawQuery);
  if (!query.ok) return query;
  return { ok: true, value: { path: path.value, rawPath, rawQuery, query: query.value } };
}

/** Go's `strconv.ParseInt(s, 10, 64)`: an optional sign, decimal digits, within int64. */
export function goParseInt64(s: string): bigint | null {
  if (!/^[+-]?[0-9]+$/.test(s)) return null;
  const n = BigInt(s);
  return n < -(2n ** 63n) || n > 2n ** 63n - 1n ? null : n;
}
