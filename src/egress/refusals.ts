/**
 * The one refusal table of the proxy: every way a CONNECT can end without a tunnel, with its HTTP
 * status, the reason text of its answer, whether and where it is recorded, its counter label,
 * whether it is a refusal by policy or a failure, and its `Proxy-Status` error type (RFC 9209).
 * The proxy never picks a status or a wording anywhere else.
 */
import type { ProxyError } from "./proxy-status.js";
import type { ResolveError } from "./resolver.js";
import { PROXY_AUTH_MESSAGES, type ProxyAuthError } from "./proxy-auth.js";
import type { ReviewRefusal } from "./reviewer.js";

/**
 * Where a refusal is recorded. `decision`: an `egress.decision` in `egress/<plugin>` (the plugin
 * is known). `anonymous`: an `egress.refused` in `egress/-`, one by one within a budget per code and source, then a summary (no identity
 * yet). `none`: only the log line and the counters (load shedding, the proxy's own failures, and
 * what happens after an allowed decision was already recorded).
 */
export type Recording = "decision" | "anonymous" | "none";

/**
 * What a CONNECT without a tunnel was. `refused`: by policy (the destination is not granted, its
 * address is forbidden, the request or its identity is not acceptable). `failed`: nothing refused
 * it, but the destination could not be reached (no such host, DNS failed, the connection failed or
 * timed out) or the proxy could not serve it (shutting down, full, the decision not recorded, the
 * token reviewer unreachable). The outcome label of the counters, and the faces' wording.
 */
export type RefusalOutcome = "refused" | "failed";

/** One row of the table. */
export interface Refusal {
  readonly status: 400 | 407 | 429 | 499 | 502 | 503 | 504;
  /** One line for the answer's body and the log; never holds a token. */
  readonly text: string;
  readonly recorded: Recording;
  /** The `reason` label of the decision counter. */
  readonly label: string;
  readonly outcome: RefusalOutcome;
  /** The `Proxy-Status` error of the answer (a failed dial refines it by its errno). */
  readonly proxyError: ProxyError;
}

/** Refused by the allow-list. */
export type ListRefusal = "not_listed" | "no_allow_list";

/** Every refusal code. */
export type RefusalCode =
  | "draining"
  | "too_many_tunnels"
  | "malformed_target"
  | "upstream_proxy_refused"
  | ProxyAuthError
  | ReviewRefusal
  | "not_a_plugin"
  | ListRefusal
  | ResolveError
  | "forbidden_address"
  | "record_failed"
  | "commit_timeout"
  | "dial_failed"
  | "connect_timeout"
  | "client_gone"
  | "internal_error";

const DENIED: ProxyError = { error: "http_request_denied" };
const MALFORMED: ProxyError = { error: "http_request_error" };
const INTERNAL: ProxyError = { error: "proxy_internal_error" };

const policy = (status: Refusal["status"], text: string, recorded: Recording, label: string, proxyError: ProxyError = DENIED): Refusal => ({ status, text, recorded, label, outcome: "refused", proxyError });
const failure = (status: Refusal["status"], text: string, recorded: Recording, label: string, proxyError: ProxyError): Refusal => ({ status, text, recorded, label, outcome: "failed", proxyError });
// A missing token is a denial; a Proxy-Authorization that does not parse is an error of the request.
const auth = (code: ProxyAuthError): Refusal => policy(407, PROXY_AUTH_MESSAGES[code], "anonymous", code, code === "no_token" ? DENIED : MALFORMED);
const review = (text: string, code: ReviewRefusal): Refusal => policy(407, text, "anonymous", code);
// The token reviewer could not answer: the identity is unknown, so the CONNECT is refused (fail
// closed, with the 407 the specification gives), but nothing about the plugin was refused.
const unreviewed = (text: string, code: ReviewRefusal): Refusal => failure(407, text, "anonymous", code, INTERNAL);
const dns = (status: 502 | 504, text: string, code: ResolveError, proxyError: ProxyError): Refusal => failure(status, text, "decision", code, proxyError);

/** The table. */
export const REFUSALS: { readonly [C in RefusalCode]: Refusal } = {
  draining: failure(503, "the proxy is shutting down", "none", "draining", { error: "proxy_internal_response" }),
  too_many_tunnels: failure(429, "too many open tunnels; retry later", "none", "too_many_tunnels", { error: "connection_limit_reached" }),
  malformed_target: policy(400, "the CONNECT target is not host:port", "anonymous", "malformed_target", MALFORMED),
  upstream_proxy_refused: policy(407, "chaining through another proxy is refused", "anonymous", "upstream_proxy_refused"),
  no_token: auth("no_token"),
  bad_proxy_auth_duplicate: auth("bad_proxy_auth_duplicate"),
  bad_proxy_auth_scheme: auth("bad_proxy_auth_scheme"),
  bad_proxy_auth_no_credentials: auth("bad_proxy_auth_no_credentials"),
  bad_proxy_auth_base64: auth("bad_proxy_auth_base64"),
  bad_proxy_auth_encoding: auth("bad_proxy_auth_encoding"),
  bad_proxy_auth_no_colon: auth("bad_proxy_auth_no_colon"),
  bad_proxy_auth_empty_token: auth("bad_proxy_auth_empty_token"),
  bad_proxy_auth_token_in_user: auth("bad_proxy_auth_token_in_user"),
  bad_proxy_auth_whitespace: auth("bad_proxy_auth_whitespace"),
  token_refused: review("the token was refused", "token_refused"),
  wrong_audience: review("the token is not for the egress proxy", "wrong_audience"),
  no_username: review("the token review named no user", "no_username"),
  review_failed: unreviewed("the token could not be reviewed", "review_failed"),
  review_timeout: unreviewed("the token review did not answer in time", "review_timeout"),
  not_a_plugin: policy(407, "the token's identity is not a plugin", "anonymous", "not_a_plugin"),
  not_listed: policy(407, "host:port is not on the plugin's allow-list", "decision", "not_listed"),
  no_allow_list: policy(407, "the plugin has no allow-list", "decision", "no_allow_list"),
  dns_nxdomain: dns(502, "the name does not exist", "dns_nxdomain", { error: "dns_error", rcode: "NXDOMAIN" }),
  dns_servfail: dns(502, "DNS failed to answer (SERVFAIL)", "dns_servfail", { error: "dns_error", rcode: "SERVFAIL" }),
  dns_refused: dns(502, "DNS refused the query", "dns_refused", { error: "dns_error", rcode: "REFUSED" }),
  dns_no_addresses: dns(502, "the name has no addresses", "dns_no_addresses", { error: "dns_error", rcode: "NODATA" }),
  dns_timeout: dns(504, "DNS did not answer in time", "dns_timeout", { error: "dns_timeout" }),
  dns_failed: dns(502, "the name could not be resolved", "dns_failed", { error: "dns_error" }),
  forbidden_address: policy(502, "the name resolves to an address the proxy never dials", "decision", "forbidden_address", { error: "destination_ip_prohibited" }),
  record_failed: failure(503, "the decision could not be recorded", "none", "record_failed", INTERNAL),
  commit_timeout: failure(503, "the decision could not be committed in time", "none", "commit_timeout", INTERNAL),
  dial_failed: failure(502, "the destination could not be reached", "none", "dial_failed", { error: "destination_unavailable" }),
  connect_timeout: failure(504, "the destination did not accept the connection in time", "none", "connect_timeout", { error: "connection_timeout" }),
  client_gone: failure(499, "the client went away before the answer", "none", "client_gone", { error: "proxy_internal_response" }),
  internal_error: failure(502, "internal error", "none", "internal_error", INTERNAL),
};

/** The row of `code`. */
export function refusal(code: RefusalCode): Refusal {
  return REFUSALS[code];
}

/**
 * Whether a refusal code (a recorded decision's `reason`, an `egress.refused` event's `code`) was a
 * refusal by policy or a failure. A code the table does not know (an older or hand-written event)
 * reads as refused: the faces never call something a mere failure that may have been a refusal.
 */
export function refusalOutcome(code: string): RefusalOutcome {
  return Object.hasOwn(REFUSALS, code) ? REFUSALS[code as RefusalCode].outcome : "refused";
}

/** A recorded egress decision as allowed, refused by policy or failed, from its `allowed` and `reason`. */
export function decisionOutcome(d: { readonly allowed: boolean; readonly reason: string }): "allowed" | RefusalOutcome {
  return d.allowed ? "allowed" : refusalOutcome(d.reason);
}
