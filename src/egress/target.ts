/**
 * The CONNECT request-target (RFC 9110 §9.3.6: authority-form `host:port`). The destination
 * comes only from here, never from `Host`, so a client cannot say one thing to the allow-list
 * and another to the dialer.
 */

/** A well-formed destination. `host` is as written (brackets removed from an IPv6 literal). */
export interface ConnectTarget {
  readonly host: string;
  readonly port: number;
}

/** Why a request-target was refused (answered 400). */
export type TargetError = "malformed_target";

// reg-name characters of RFC 3986 minus percent-encoding, which no hostname needs. Non-ASCII
// bytes are let through here so that the allow-list refuses them with its own reason.
const REG_NAME = /^[^\s/?#@[\]:%\\"<>^`{|}\p{Cc}]+$/u;
const PORT = /^[1-9][0-9]{0,4}$/;

/** Parses `host:port` (or `[v6]:port`). Anything else, including a missing port, is malformed. */
export function parseConnectTarget(target: string): { ok: true; value: ConnectTarget } | { ok: false; code: TargetError } {
  let host: string;
  let portText: string;
  if (target.startsWith("[")) {
    const close = target.indexOf("]");
    if (close < 0 || target[close + 1] !== ":") return { ok: false, code: "malformed_target" };
    host = target.slice(1, close);
    portText = target.slice(close + 2);
    if (!/^[0-9a-fA-F:.]+$/.test(host)) return { ok: false, code: "malformed_target" };
  } else {
    const colon = target.lastIndexOf(":");
    if (colon <= 0) return { ok: false, code: "malformed_target" };
    host = target.slice(0, colon);
    portText = target.slice(colon + 1);
    if (!REG_NAME.test(host) || host.length > 253 + 1) return { ok: false, code: "malformed_target" };
  }
  if (!PORT.test(portText)) return { ok: false, code: "malformed_target" };
  const port = Number(portText);
  if (port > 65535) return { ok: false, code: "malformed_target" };
  return { ok: true, value: { host, port } };
}
