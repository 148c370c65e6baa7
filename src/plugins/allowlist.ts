/**
 * Egress allow-lists as the operator publishes them to the proxy (seed 000, "Handing allow-lists
 * to the egress proxy") and as the proxy follows them (seed 004, "Following the allow-lists").
 *
 * The ConfigMap `openfief-egress-allowlist` has one key per plugin; its value is that plugin's
 * `host:port` lines, sorted (byte order of the lines) and unique, each ending in "\n"; a plugin
 * without egress hosts has "". The proxy refuses everything it cannot read, so decoding is strict:
 * it accepts exactly what encoding can produce and nothing else.
 */
import { CAPS } from "./caps.js";
import { ErrorCode, fail, fieldError, join, ok } from "./errors.js";
import type { FieldError, Result } from "./errors.js";
import type { EgressHost } from "./types.js";
import { formatHostPort, hostnameProblem, isValidPort } from "./egress-host.js";
import { isPlainObject } from "./json.js";
import { isValidPluginName } from "./names.js";

// A port as encoding writes it: decimal, no sign, no leading zero.
const PORT_TEXT = /^[1-9][0-9]{0,4}$/;
// After folding case and one trailing dot: a name that could be an IP literal never matches.
const NUMERIC_LAST_LABEL = /(?:^|\.)(?:[0-9]+|0x[0-9a-f]*)$/;

// The longest value CAPS.listItems lines can make: `host:65535\n` with the longest host.
const MAX_LIST_TEXT = CAPS.listItems * (CAPS.hostname + ":65535\n".length);

let construct: (entries: readonly EgressHost[]) => EgressAllowList;

/**
 * One plugin's egress allow-list: exact `host:port` entries, no wildcards, no subdomains, no IP
 * literals. Built only by {@link decodeAllowLists} or {@link allowListFromHosts}, so every entry
 * is a canonical hostname and a valid port.
 */
export class EgressAllowList {
  readonly #entries: readonly EgressHost[];
  readonly #keys: ReadonlySet<string>;

  private constructor(entries: readonly EgressHost[]) {
    this.#entries = entries;
    this.#keys = new Set(entries.map(formatHostPort));
  }

  static {
    construct = (entries) => new EgressAllowList(entries);
  }

  /** The entries, sorted as encoded; a copy. */
  get hosts(): EgressHost[] {
    return this.#entries.map((h) => ({ host: h.host, port: h.port }));
  }

  /** How many entries the list has; 0 means every destination is refused. */
  get size(): number {
    return this.#entries.length;
  }

  /**
   * Whether `host:port` is on the list. ASCII case and one trailing dot are ignored, as DNS does.
   * A host with any non-ASCII character never matches (Unicode case folding would let the Kelvin
   * sign stand in for `k`), nor does an IP literal, nor any port that is not an integer 1..65535.
   */
  allows(host: string, port: number): boolean {
    if (typeof host !== "string" || !isValidPort(port)) return false;
    for (let i = 0; i < host.length; i++) if (host.charCodeAt(i) > 0x7f) return false;
    let name = host.endsWith(".") ? host.slice(0, -1) : host;
    name = name.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
    if (name.includes(":") || name.startsWith("[") || NUMERIC_LAST_LABEL.test(name)) return false;
    return this.#keys.has(`${name}:${port}`);
  }

  /** The list's ConfigMap value: sorted unique `host:port` lines, each ending in "\n". */
  encode(): string {
    return this.#entries.map((h) => `${formatHostPort(h)}\n`).join("");
  }
}

/** Every plugin's allow-list, keyed by plugin name. A plugin without a key has no list. */
export type AllowLists = ReadonlyMap<string, EgressAllowList>;

function sortedUniqueLines(hosts: readonly EgressHost[]): string[] {
  const lines = [...new Set(hosts.map(formatHostPort))];
  lines.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return lines;
}

/**
 * Builds one plugin's list from egress hosts (a plugin's effective egress), sorted and without
 * repeats. Refuses hosts that are not canonical, ports out of range, and more than
 * {@link CAPS.listItems} entries (no plugin can be granted more). Never throws.
 */
export function allowListFromHosts(hosts: readonly EgressHost[]): Result<EgressAllowList> {
  try {
    return listFromHosts(hosts);
  } catch {
    return fail(fieldError(ErrorCode.InvalidAllowList, "hosts", "the hosts could not be read"));
  }
}

function listFromHosts(hosts: readonly EgressHost[]): Result<EgressAllowList> {
  if (!Array.isArray(hosts)) return fail(fieldError(ErrorCode.InvalidAllowList, "hosts", "the hosts must be a list"));
  if (hosts.length > CAPS.listItems) {
    return fail(fieldError(ErrorCode.TooLarge, "hosts", `an allow-list has at most ${CAPS.listItems} entries, not ${hosts.length}`));
  }
  const errors: FieldError[] = [];
  hosts.forEach((h: unknown, i) => {
    const entry = typeof h === "object" && h !== null ? (h as Record<string, unknown>) : {};
    errors.push(...entryProblems(entry["host"], entry["port"], join("hosts", i)));
  });
  if (errors.length > 0) return fail(errors);
  return ok(construct(sortedUniqueLines(hosts).map(lineToHost)));
}

function entryProblems(host: unknown, port: unknown, path: string): FieldError[] {
  const errors: FieldError[] = [];
  const problem = typeof host === "string" ? hostnameProblem(host) : "must be a string";
  if (problem !== undefined) errors.push(fieldError(ErrorCode.InvalidAllowList, path, `host ${problem}`));
  if (!isValidPort(port)) errors.push(fieldError(ErrorCode.InvalidAllowList, path, "port must be an integer from 1 to 65535"));
  return errors;
}

function lineToHost(line: string): EgressHost {
  const colon = line.lastIndexOf(":");
  return { host: line.slice(0, colon), port: Number(line.slice(colon + 1)) };
}

/**
 * Encodes every plugin's hosts for the ConfigMap: one key per plugin, valued as its sorted,
 * unique `host:port` lines, each ending in "\n"; "" for a plugin without hosts. The hosts are
 * expected to be valid (a plugin's effective egress); {@link decodeAllowLists} refuses any that
 * are not.
 */
export function encodeAllowLists(lists: ReadonlyMap<string, readonly EgressHost[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [plugin, hosts] of lists) {
    Object.defineProperty(out, plugin, {
      value: sortedUniqueLines(hosts).map((l) => `${l}\n`).join(""),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function decodeList(plugin: string, text: unknown, errors: FieldError[]): EgressAllowList | undefined {
  const bad = (path: string, message: string): void => {
    errors.push(fieldError(ErrorCode.InvalidAllowList, path, message));
  };
  const before = errors.length;
  if (!isValidPluginName(plugin)) bad(plugin, "the key is not a valid plugin name");
  if (typeof text !== "string") {
    bad(plugin, "the value must be a string");
    return undefined;
  }
  if (text === "") return errors.length > before ? undefined : construct([]);
  // No plugin is granted more than CAPS.listItems hosts: refuse a longer value before splitting it.
  if (text.length > MAX_LIST_TEXT) {
    bad(plugin, `the value is longer than ${CAPS.listItems} entries can be`);
    return undefined;
  }
  if (text.includes("\r")) bad(plugin, "the value must not contain carriage returns");
  if (!text.endsWith("\n")) bad(plugin, "every line must end in a newline");
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  if (lines.length > CAPS.listItems) {
    bad(plugin, `an allow-list has at most ${CAPS.listItems} entries, not ${lines.length}`);
    return undefined;
  }
  const entries: EgressHost[] = [];
  let previous: string | undefined;
  lines.forEach((line, i) => {
    const at = join(plugin, i);
    if (line === "") return bad(at, "blank lines are not allowed");
    const colon = line.lastIndexOf(":");
    if (colon < 0) return bad(at, "an entry must be host:port, with the port always written");
    const host = line.slice(0, colon);
    const portText = line.slice(colon + 1);
    const problem = hostnameProblem(host);
    if (problem !== undefined) return bad(at, `host ${problem}`);
    if (!PORT_TEXT.test(portText) || !isValidPort(Number(portText))) {
      return bad(at, "the port must be written as a decimal integer from 1 to 65535");
    }
    if (previous !== undefined && line === previous) return bad(at, `${line} is listed more than once`);
    if (previous !== undefined && line < previous) return bad(at, "the lines must be sorted");
    previous = line;
    entries.push({ host, port: Number(portText) });
  });
  return errors.length > before ? undefined : construct(entries);
}

/**
 * Decodes the ConfigMap's data strictly: keys are plugin names; each value is "" or sorted,
 * unique, lower-case `host:port` lines, each ending in "\n", with the port always written, no
 * blank lines, no CR, no IP literal or number-only name, and at most {@link CAPS.listItems} lines
 * per plugin (no plugin is granted more). Any fault refuses the whole map
 * ({@link ErrorCode.InvalidAllowList}, path `<plugin>` or `<plugin>[line]`), since the proxy must
 * deny everything it cannot read. Never throws.
 */
export function decodeAllowLists(data: unknown): Result<AllowLists> {
  try {
    if (!isPlainObject(data)) {
      return fail(fieldError(ErrorCode.InvalidAllowList, "", "the allow-lists must be an object of plugin name to lines"));
    }
    const errors: FieldError[] = [];
    const lists = new Map<string, EgressAllowList>();
    for (const key of Reflect.ownKeys(data)) {
      if (typeof key !== "string") {
        errors.push(fieldError(ErrorCode.InvalidAllowList, "", "the allow-lists may only have string keys"));
        continue;
      }
      const list = decodeList(key, data[key], errors);
      if (list !== undefined) lists.set(key, list);
    }
    if (errors.length > 0) return fail(errors);
    return ok(new Map([...lists].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
  } catch {
    return fail(fieldError(ErrorCode.InvalidAllowList, "", "the allow-lists could not be read"));
  }
}

/** Why an egress request is allowed or refused (seed 004's three reasons). */
export type EgressReason = "listed" | "not_listed" | "no_allow_list";

/** The decision on one egress request. */
export interface EgressDecision {
  readonly allowed: boolean;
  readonly reason: EgressReason;
}

/**
 * Decides one request of `plugin` to `host:port`. With no lists at all (`null`), nobody has one;
 * a plugin without a key has no list (`no_allow_list`); an empty list refuses everything
 * (`not_listed`); only an exact match (after ASCII case and one trailing dot) is `listed`.
 */
export function decideEgress(lists: AllowLists | null, plugin: string, host: string, port: number): EgressDecision {
  // Only a decoded map is read: anything else is no lists at all.
  const list = lists instanceof Map ? lists.get(plugin) : undefined;
  if (!(list instanceof EgressAllowList)) return { allowed: false, reason: "no_allow_list" };
  return list.allows(host, port) ? { allowed: true, reason: "listed" } : { allowed: false, reason: "not_listed" };
}
