/**
 * The `Proxy-Status` response header (RFC 9209): which proxy answered and why there is no
 * tunnel, so that a client reads "the host is not granted" or "no such host" from the answer
 * itself instead of guessing from its status (a 407 looks like a bad token to a curl user).
 *
 * The value is a Structured Field List (RFC 8941) of one member: the proxy's name as a Token,
 * with the `error` parameter (a Token from the IANA "HTTP Proxy Error Types" registry), the
 * error's own parameters (`rcode` of `dns_error`, a String) and `details` (a String).
 */

/** Every error type of the IANA registry RFC 9209 §2.3 created, in its order. */
export const PROXY_ERROR_TYPES = [
  "dns_timeout",
  "dns_error",
  "destination_not_found",
  "destination_unavailable",
  "destination_ip_prohibited",
  "destination_ip_unroutable",
  "connection_refused",
  "connection_terminated",
  "connection_timeout",
  "connection_read_timeout",
  "connection_write_timeout",
  "connection_limit_reached",
  "tls_protocol_error",
  "tls_certificate_error",
  "tls_alert_received",
  "http_request_error",
  "http_request_denied",
  "http_response_incomplete",
  "http_response_header_section_size",
  "http_response_header_size",
  "http_response_body_size",
  "http_response_trailer_section_size",
  "http_response_trailer_size",
  "http_response_transfer_coding",
  "http_response_content_coding",
  "http_response_timeout",
  "http_upgrade_failed",
  "http_protocol_error",
  "proxy_internal_response",
  "proxy_internal_error",
  "proxy_configuration_error",
  "proxy_loop_detected",
] as const;

/** An RFC 9209 proxy error type. */
export type ProxyErrorType = (typeof PROXY_ERROR_TYPES)[number];

/** DNS response codes by their RFC 8499 §3 names (NODATA is its pseudo-RCODE: the name exists, without addresses). */
export type DnsRcode = "NXDOMAIN" | "SERVFAIL" | "REFUSED" | "NODATA";

/** What one answer's header says: an error type, with `rcode` only where the type has it. */
export type ProxyError =
  | { readonly error: "dns_error"; readonly rcode?: DnsRcode }
  | { readonly error: Exclude<ProxyErrorType, "dns_error"> };

/** The name this proxy gives itself in `Proxy-Status` (and the realm of its 407s). */
export const PROXY_NAME = "openfief-egress";

// RFC 8941 §3.3.4: a Token starts with ALPHA or "*", then tchar, ":" or "/".
const TOKEN = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*$/;

/** Whether `s` can be written as an sf-token. */
export function isToken(s: string): boolean {
  return TOKEN.test(s);
}

/**
 * An sf-string (RFC 8941 §4.1.6): quoted, `"` and `\` escaped. Only printable ASCII may appear in
 * one; any other character becomes "?" rather than make the whole header invalid.
 */
export function sfString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    if (ch.length > 1 || c < 0x20 || c > 0x7e) out += "?";
    else if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else out += ch;
  }
  return `${out}"`;
}

/** The header's value: `openfief-egress; error=dns_error; rcode="NXDOMAIN"; details="…"`. */
export function proxyStatusValue(e: ProxyError, details?: string): string {
  let value = `${PROXY_NAME}; error=${e.error}`;
  if (e.error === "dns_error" && e.rcode !== undefined) value += `; rcode=${sfString(e.rcode)}`;
  if (details !== undefined && details !== "") value += `; details=${sfString(details)}`;
  return value;
}

/** The error type of a failed dial, from its errno (`connection_refused` for ECONNREFUSED, …). */
export function dialErrorType(errno: string | undefined): Exclude<ProxyErrorType, "dns_error"> {
  switch (errno) {
    case "ECONNREFUSED": return "connection_refused";
    case "EHOSTUNREACH":
    case "ENETUNREACH": return "destination_ip_unroutable";
    case "ECONNRESET":
    case "EPIPE": return "connection_terminated";
    case "ETIMEDOUT": return "connection_timeout";
    // Unknown: the destination did not take the connection; nothing more precise is known.
    default: return "destination_unavailable";
  }
}
