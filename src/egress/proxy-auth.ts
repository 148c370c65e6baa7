/**
 * Reading the plugin's token from `Proxy-Authorization: Basic base64(user:token)` (seed 004,
 * "Identifying the plugin"). Every malformed form has its own code so that a plugin author can
 * tell what their client sent; none of the codes or messages ever carries the token.
 */

/** Why no token could be read. `no_token` is the seed's ErrNoToken; the rest are ErrBadProxyAuth. */
export type ProxyAuthError =
  | "no_token"
  | "bad_proxy_auth_duplicate"
  | "bad_proxy_auth_scheme"
  | "bad_proxy_auth_no_credentials"
  | "bad_proxy_auth_base64"
  | "bad_proxy_auth_encoding"
  | "bad_proxy_auth_no_colon"
  | "bad_proxy_auth_empty_token"
  | "bad_proxy_auth_token_in_user"
  | "bad_proxy_auth_whitespace";

/** One-line explanations for answers and logs. */
export const PROXY_AUTH_MESSAGES: Readonly<Record<ProxyAuthError, string>> = {
  no_token: "no Proxy-Authorization header",
  bad_proxy_auth_duplicate: "Proxy-Authorization sent more than once",
  bad_proxy_auth_scheme: "Proxy-Authorization scheme is not Basic",
  bad_proxy_auth_no_credentials: "Proxy-Authorization Basic has no credentials",
  bad_proxy_auth_base64: "Proxy-Authorization credentials are not strict base64",
  bad_proxy_auth_encoding: "Proxy-Authorization credentials are not UTF-8",
  bad_proxy_auth_no_colon: "Proxy-Authorization credentials have no colon",
  bad_proxy_auth_empty_token: "Proxy-Authorization password (the token) is empty",
  bad_proxy_auth_token_in_user: "the token is in the user name; put it in the password",
  bad_proxy_auth_whitespace: "the token contains whitespace or control characters",
};

/** The token, or why there is none. */
export type ProxyTokenResult = { readonly ok: true; readonly token: string } | { readonly ok: false; readonly code: ProxyAuthError };

// Canonical base64 with padding (RFC 4648 §4), checked character by character: Node's decoder
// skips characters outside the alphabet and ignores missing padding, so "a!b" decodes to
// something: never rely on it alone.
const B64 = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".charCodeAt(i)] = i;
const EQ = 0x3d;

/** The value of a base64 character, or -1. */
function b64(c: number): number {
  return c < 128 ? (B64[c] ?? -1) : -1;
}

// A JWT-looking user name with an empty password: the classic mistake of `http://TOKEN@proxy`.
const LOOKS_LIKE_JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
// Whitespace and every other character a token never holds (controls, DEL, non-ASCII spaces).
const BAD_TOKEN_CHAR = /[\s\p{Cc}]/u;
// One decoder for every CONNECT: `decode` without `stream` keeps no state between calls.
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Strictly decodes canonical base64 (padding required, no stray characters, zero trailing bits). */
export function decodeStrictBase64(text: string): Buffer | undefined {
  const n = text.length;
  if (n === 0 || n % 4 !== 0) return undefined;
  const pad = text.charCodeAt(n - 1) === EQ ? (text.charCodeAt(n - 2) === EQ ? 2 : 1) : 0;
  const body = n - pad;
  for (let i = 0; i < body; i++) if (b64(text.charCodeAt(i)) < 0) return undefined;
  // The bits after the last whole byte must be zero, or two texts would decode alike.
  if (pad === 2 && (b64(text.charCodeAt(body - 1)) & 0x0f) !== 0) return undefined;
  if (pad === 1 && (b64(text.charCodeAt(body - 1)) & 0x03) !== 0) return undefined;
  return Buffer.from(text, "base64");
}

/**
 * Finds every `Proxy-Authorization` in Node's `rawHeaders` (name/value pairs as received), since
 * `req.headers` silently joins or drops duplicates.
 */
export function proxyAuthorizationValues(rawHeaders: readonly string[]): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] ?? "").toLowerCase() === "proxy-authorization") values.push(rawHeaders[i + 1] ?? "");
  }
  return values;
}

/** The seed's proxyToken: the password of a Basic Proxy-Authorization header is the token. */
export function proxyToken(rawHeaders: readonly string[]): ProxyTokenResult {
  const values = proxyAuthorizationValues(rawHeaders);
  return proxyTokenFrom(values[0], values.length);
}

/**
 * The same, from the first Proxy-Authorization value of a head and how many the head held (the
 * proxy's own head reader keeps no more).
 */
export function proxyTokenFrom(first: string | undefined, count: number): ProxyTokenResult {
  if (count === 0 || first === undefined) return { ok: false, code: "no_token" };
  if (count > 1) return { ok: false, code: "bad_proxy_auth_duplicate" };
  const value = first.trim();
  const space = value.search(/[ \t]/);
  const scheme = space < 0 ? value : value.slice(0, space);
  // RFC 9110 §11.1: auth schemes are case-insensitive.
  if (scheme.toLowerCase() !== "basic") return { ok: false, code: "bad_proxy_auth_scheme" };
  const credentials = space < 0 ? "" : value.slice(space).replace(/^[ \t]+/, "");
  if (credentials === "") return { ok: false, code: "bad_proxy_auth_no_credentials" };
  const bytes = decodeStrictBase64(credentials);
  if (bytes === undefined) return { ok: false, code: "bad_proxy_auth_base64" };
  let decoded: string;
  try {
    decoded = STRICT_UTF8.decode(bytes);
  } catch {
    return { ok: false, code: "bad_proxy_auth_encoding" };
  }
  const colon = decoded.indexOf(":");
  if (colon < 0) return { ok: false, code: "bad_proxy_auth_no_colon" };
  const user = decoded.slice(0, colon);
  const token = decoded.slice(colon + 1);
  if (token === "") {
    return { ok: false, code: LOOKS_LIKE_JWT.test(user) ? "bad_proxy_auth_token_in_user" : "bad_proxy_auth_empty_token" };
  }
  if (BAD_TOKEN_CHAR.test(token)) return { ok: false, code: "bad_proxy_auth_whitespace" };
  return { ok: true, token };
}

/** Builds the header value a client sends; for tests, the CLI's help and the benchmark. */
export function basicProxyAuthorization(user: string, token: string): string {
  return `Basic ${Buffer.from(`${user}:${token}`, "utf8").toString("base64")}`;
}
