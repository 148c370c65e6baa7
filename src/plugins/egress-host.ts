/**
 * Egress hosts: the `{host, port?}` entries of a manifest or grant. The proxy, not the plugin,
 * resolves names, so a host must be a canonical hostname the proxy can look up and compare
 * exactly: lower-case ASCII, at least two labels, no trailing dot, other scripts in their `xn--`
 * form. IP literals (including the number-only forms URL parsers read as IPv4, such as
 * `2130706433` or `0x7f.1`), wildcards and single-label names such as `core` are refused.
 *
 * `xn--` labels are decoded with our own RFC 3492 decoder and must be genuine A-labels: valid
 * Punycode that round-trips, decodes to at least one non-ASCII character, in NFC, without upper
 * case, separators, controls or unassigned code points, not starting with a combining mark or '-',
 * without '--' in positions 3 and 4. The IDNA2008 bidi and contextual rules are not checked.
 */
import { CAPS, shown } from "./caps.js";
import { ErrorCode, fail, fieldError, join, ok } from "./errors.js";
import type { FieldError, Result } from "./errors.js";
import type { EgressHost } from "./types.js";
import { isPlainObject, ownValue } from "./json.js";
import { punycodeDecode, punycodeEncode } from "./punycode.js";

/** The port of an egress host that names none. */
export const DEFAULT_EGRESS_PORT = 443;
/** The longest hostname (RFC 1035, without the trailing dot). */
export const MAX_HOSTNAME = CAPS.hostname;
/** The longest label. */
export const MAX_LABEL = 63;

const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
// WHATWG URL parsers read a last label that is a decimal, octal or hex number as IPv4.
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/;
// Unicode that has no place in a U-label: controls, format characters, unassigned, private use,
// surrogates, separators, and the full stops IDNA maps to '.'.
const BAD_UNICODE = /[\p{C}\p{Z}\u3002\uff0e\uff61]/u;
const LEADING_MARK = /^\p{M}/u;

const FIELDS = ["host", "port"];

function show(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

function aLabelProblem(label: string): string | undefined {
  const points = punycodeDecode(label.slice(4));
  if (points === undefined || points.length === 0) return "is not valid Punycode";
  if (punycodeEncode(points) !== label.slice(4)) return "is not the canonical Punycode of its name";
  if (points.every((c) => c < 0x80)) return "encodes only ASCII, so it is not an internationalized label";
  const u = String.fromCodePoint(...points);
  if (u.normalize("NFC") !== u) return "does not decode to NFC";
  if (u.toLowerCase() !== u) return "decodes to upper-case letters";
  if (BAD_UNICODE.test(u)) return "decodes to a character not allowed in a hostname";
  if (LEADING_MARK.test(u)) return "decodes to a name starting with a combining mark";
  if (u.startsWith("-") || u.endsWith("-") || u.slice(2, 4) === "--") return "decodes to a name with misplaced hyphens";
  return undefined;
}

/**
 * Why `host` is not a canonical egress hostname, or undefined when it is one. One reason only:
 * the first rule it breaks.
 */
export function hostnameProblem(host: string): string | undefined {
  if (host === "") return "must not be empty";
  // The length first, so that nothing below ever reads a long string.
  if (host.length > MAX_HOSTNAME) return `must be at most ${MAX_HOSTNAME} characters`;
  for (let i = 0; i < host.length; i++) {
    if (host.charCodeAt(i) > 0x7f) return "must be ASCII: write an internationalized name in its xn-- form";
  }
  if (host.includes("*")) return "must not be a wildcard: name each host exactly";
  if (host.startsWith("[") || host.includes(":")) return "must not be an IP literal";
  if (/[A-Z]/.test(host)) return "must be lower case";
  if (host.endsWith(".")) return "must not end with a dot";
  const labels = host.split(".");
  if (NUMERIC_LABEL.test(labels[labels.length - 1] ?? "")) {
    return "must not be an IP literal or end in a number-only label";
  }
  if (labels.length < 2) return "must have at least two labels: single-label names such as core are refused";
  for (const label of labels) {
    if (label === "") return "must not have an empty label";
    if (label.length > MAX_LABEL) return `must not have a label longer than ${MAX_LABEL} characters`;
    if (!LDH_LABEL.test(label)) {
      return "labels may hold only a-z, 0-9 and '-', and must not start or end with '-'";
    }
    if (label.slice(2, 4) === "--") {
      if (!label.startsWith("xn--")) return `label ${show(label)} has '--' in positions 3 and 4, reserved for xn-- labels`;
      const problem = aLabelProblem(label);
      if (problem !== undefined) return `label ${show(label)} ${problem}`;
    }
  }
  return undefined;
}

/** True when `host` is a canonical egress hostname (see {@link hostnameProblem}). */
export function isCanonicalHostname(host: unknown): host is string {
  return typeof host === "string" && hostnameProblem(host) === undefined;
}

/** True for an integer port from 1 to 65535. */
export function isValidPort(port: unknown): port is number {
  return typeof port === "number" && Number.isInteger(port) && port >= 1 && port <= 65535;
}

/**
 * Parses an egress host `{host, port?}`: unknown fields refused, the host canonical, the port an
 * integer from 1 to 65535 ({@link DEFAULT_EGRESS_PORT} when absent). A port of any other type,
 * such as the string "443", is {@link ErrorCode.InvalidPort}. Returns every problem; never throws.
 */
export function parseEgressHost(value: unknown, path: string): Result<EgressHost> {
  try {
    return readEgressHost(value, path);
  } catch {
    return fail(fieldError(ErrorCode.InvalidType, path, "the egress host could not be read"));
  }
}

function readEgressHost(value: unknown, path: string): Result<EgressHost> {
  if (!isPlainObject(value)) {
    return fail(fieldError(ErrorCode.InvalidType, path, "an egress host must be an object {host, port?}"));
  }
  const errors: FieldError[] = [];
  for (const key of Object.keys(value)) {
    if (!FIELDS.includes(key)) errors.push(fieldError(ErrorCode.UnknownField, join(path, shown(key)), `unknown field "${shown(key)}"`));
  }
  const host = ownValue(value, "host");
  const hostPath = join(path, "host");
  if (host === undefined) {
    errors.push(fieldError(ErrorCode.Required, hostPath, "an egress host needs a host"));
  } else if (typeof host !== "string") {
    errors.push(fieldError(ErrorCode.InvalidType, hostPath, "a host must be a string"));
  } else {
    const problem = hostnameProblem(host);
    if (problem !== undefined) errors.push(fieldError(ErrorCode.InvalidEgressHost, hostPath, `host ${show(host)} ${problem}`));
  }
  const port = ownValue(value, "port");
  if (port !== undefined && !isValidPort(port)) {
    errors.push(fieldError(ErrorCode.InvalidPort, join(path, "port"), "a port must be an integer from 1 to 65535"));
  }
  if (errors.length > 0) return fail(errors);
  return ok({ host: host as string, port: port === undefined ? DEFAULT_EGRESS_PORT : (port as number) });
}

/** `host:port`, the form of an allow-list line and of an egress host in messages. */
export function formatHostPort(h: EgressHost): string {
  return `${h.host}:${h.port}`;
}

/** The identity of an egress host for sets and duplicate checks: `host:port`. */
export function egressKey(h: EgressHost): string {
  return formatHostPort(h);
}

/** Orders egress hosts by host (code unit order), then by port numerically. */
export function compareEgressHosts(a: EgressHost, b: EgressHost): number {
  if (a.host !== b.host) return a.host < b.host ? -1 : 1;
  return a.port - b.port;
}
