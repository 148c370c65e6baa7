/**
 * The AllowListSource port (seed 004) and the in-process sources. Each source holds one complete
 * set of lists and swaps it as a whole, so a CONNECT is always decided against one consistent
 * set; `null` means "no lists at all", under which every CONNECT is refused (no_allow_list).
 */
import type { Logger } from "pino";
import { decodeAllowLists, formatErrors, type AllowLists } from "../plugins/index.js";

/** What the proxy asks for on every CONNECT: the current complete set of lists, or null. */
export interface AllowListSource {
  current(): AllowLists | null;
}

/** The log line of seed 004 when lists cannot be read. */
export const ALLOWLISTS_REFUSED_MESSAGE = "egress allow-lists refused; denying all egress until fixed";

/** Thrown when a source could not make its first read in time: the process exits instead of serving. */
export class ErrNotSynced extends Error {
  readonly code = "not_synced";
  constructor(what: string) {
    super(`egress allow-lists not synced: ${what}`);
    this.name = "ErrNotSynced";
  }
}

/**
 * A source fed by its owner: the embedded mode sets it from the store's projection, tests set it
 * directly. `setData` decodes a ConfigMap-shaped map; anything undecodable drops every list.
 */
export class MemoryAllowListSource implements AllowListSource {
  #lists: AllowLists | null;
  readonly #logger: Logger | undefined;

  constructor(initial: AllowLists | null = null, logger?: Logger) {
    this.#lists = initial;
    this.#logger = logger;
  }

  current(): AllowLists | null {
    return this.#lists;
  }

  /** Swaps in a decoded set (or null for none). */
  set(lists: AllowLists | null): void {
    this.#lists = lists;
  }

  /** Decodes `data` (one key per plugin, `host:port` lines) and swaps it in; false when refused. */
  setData(data: Record<string, string> | null): boolean {
    if (data === null) {
      this.#lists = null;
      this.#logger?.error({ reason: "deleted" }, ALLOWLISTS_REFUSED_MESSAGE);
      return false;
    }
    const decoded = decodeAllowLists(data);
    if (!decoded.ok) {
      this.#lists = null;
      this.#logger?.error({ reason: "undecodable", errors: formatErrors(decoded.errors) }, ALLOWLISTS_REFUSED_MESSAGE);
      return false;
    }
    this.#lists = decoded.value;
    return true;
  }
}
