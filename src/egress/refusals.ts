/**
 * The one refusal table of the proxy (issue 12): every way a CONNECT can end without a tunnel,
 * with its HTTP status, the reason text of its answer, whether and where it is recorded, and its
 * counter label. The proxy never picks a status or a wording anywhere else.
 */
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

/** One row of the table. */
export interface Refusal {
  readonly status: 400 | 407 | 429 | 499 | 502 | 503 | 504;
  /** One line for the answer's body and the log; never holds a token. */
  readonly text: string;
  readonly recorded: Recording;
  /** The `reason` label of the decision counter. */
  readonly label: string;
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

const auth = (code: ProxyAuthError): Refusal => ({ status: 407, text: PROXY_AUTH_MESSAGES[code], recorded: "anonymous", label: code });
const review = (text: string, code: ReviewRefusal): Refusal => ({ status: 407, text, recorded: "anonymous", label: code });
const dns = (status: 502 | 504, text: string, code: ResolveError): Refusal => ({ status, text, recorded: "decision", label: code });

/** The table. */
export const REFUSALS: { readonly [C in RefusalCode]: Refusal } = {
  draining: { status: 503, text: "the proxy is shutting down", recorded: "none", label: "draining" },
  too_many_tunnels: { status: 429, text: "too many open tunnels; retry later", recorded: "none", label: "too_many_tunnels" },
  malformed_target: { status: 400, text: "the CONNECT target is not host:port", recorded: "anonymous", label: "malformed_target" },
  upstream_proxy_refused: { status: 407, text: "chaining through another proxy is refused", recorded: "anonymous", label: "upstream_proxy_refused" },
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
  review_failed: review("the token could not be reviewed", "review_failed"),
  review_timeout: review("the token review did not answer in time", "review_timeout"),
  not_a_plugin: { status: 407, text: "the token's identity is not a plugin", recorded: "anonymous", label: "not_a_plugin" },
  not_listed: { status: 407, text: "host:port is not on the plugin's allow-list", recorded: "decision", label: "not_listed" },
  no_allow_list: { status: 407, text: "the plugin has no allow-list", recorded: "decision", label: "no_allow_list" },
  dns_nxdomain: dns(502, "the name does not exist", "dns_nxdomain"),
  dns_servfail: dns(502, "DNS failed to answer (SERVFAIL)", "dns_servfail"),
  dns_refused: dns(502, "DNS refused the query", "dns_refused"),
  dns_no_addresses: dns(502, "the name has no addresses", "dns_no_addresses"),
  dns_timeout: dns(504, "DNS did not answer in time", "dns_timeout"),
  dns_failed: dns(502, "the name could not be resolved", "dns_failed"),
  forbidden_address: { status: 502, text: "the name resolves to an address the proxy never dials", recorded: "decision", label: "forbidden_address" },
  record_failed: { status: 503, text: "the decision could not be recorded", recorded: "none", label: "record_failed" },
  commit_timeout: { status: 503, text: "the decision could not be committed in time", recorded: "none", label: "commit_timeout" },
  dial_failed: { status: 502, text: "the destination could not be reached", recorded: "none", label: "dial_failed" },
  connect_timeout: { status: 504, text: "the destination did not accept the connection in time", recorded: "none", label: "connect_timeout" },
  client_gone: { status: 499, text: "the client went away before the answer", recorded: "none", label: "client_gone" },
  internal_error: { status: 502, text: "internal error", recorded: "none", label: "internal_error" },
};

/** The row of `code`. */
export function refusal(code: RefusalCode): Refusal {
  return REFUSALS[code];
}
