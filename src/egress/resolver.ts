/**
 * Resolving destination names. The proxy asks DNS itself through a `dns.Resolver` with configured
 * servers: never `dns.lookup`, which reads the hosts file and turns `0177.0.0.1` into 127.0.0.1
 * without asking DNS.
 *
 * Answers are cached for their TTL, at most {@link DNS_CACHE_MAX_TTL_MS} and for a bounded number
 * of names. The cache holds raw answers, not verdicts: the proxy checks every address each time it
 * uses one. An answer with TTL 0 (what a rebinding name sends), a failure, NXDOMAIN, SERVFAIL and a
 * name without addresses are never cached, so such a name is asked again on the next CONNECT.
 */
import { Resolver as CallbackResolver, NODATA, NOTFOUND, REFUSED, SERVFAIL, TIMEOUT, type RecordWithTtl } from "node:dns";
import { systemClock, type Clock } from "./reviewer.js";

/** Why a name gave no usable addresses. */
export type ResolveError = "dns_nxdomain" | "dns_servfail" | "dns_refused" | "dns_no_addresses" | "dns_timeout" | "dns_failed";

/** Every address of a name (A first, then AAAA), or why there are none. */
export type ResolveOutcome =
  | { readonly ok: true; readonly addresses: readonly string[] }
  | { readonly ok: false; readonly code: ResolveError };

/**
 * The Resolver port of the proxy. A resolver may answer synchronously (a cache hit), which saves
 * the proxy a DNS timer; it must never throw synchronously for a DNS failure.
 */
export interface Resolver {
  resolve(host: string): Promise<ResolveOutcome> | ResolveOutcome;
}

/** The longest an answer is reused, whatever TTL it came with. */
export const DNS_CACHE_MAX_TTL_MS = 30_000;
/** The most names the cache holds by default. */
export const DNS_CACHE_MAX_NAMES = 1024;

/** Options of {@link DnsResolver}. */
export interface DnsResolverOptions {
  /** DNS servers (`ip` or `ip:port`, `[v6]:port`); the system's when absent. */
  readonly servers?: readonly string[];
  readonly timeoutMs?: number;
  /** Upper bound on how long an answer is reused (≤ 30 s); 0 turns the cache off. */
  readonly cacheMaxTtlMs?: number;
  /** The most names cached; the oldest is dropped to make room. */
  readonly cacheMaxNames?: number;
  /** Time source of the cache (tests move it). */
  readonly clock?: Clock;
  /** Told of every lookup: hit (answered from the cache) or miss (the metrics' counter). */
  readonly onLookup?: (hit: boolean) => void;
}

type FamilyAnswer = RecordWithTtl[] | ResolveError;

function mapError(code: unknown): ResolveError | "nodata" {
  switch (code) {
    case NODATA:
      return "nodata";
    case NOTFOUND:
      return "dns_nxdomain";
    case SERVFAIL:
      return "dns_servfail";
    case REFUSED:
      return "dns_refused";
    case TIMEOUT:
      return "dns_timeout";
    default:
      return "dns_failed";
  }
}

/**
 * DNS names are ASCII-case-insensitive and one trailing dot changes nothing: the name as a cache
 * key, allocating only when it has to change (the usual lower-case name is returned as it is).
 * Only ASCII is folded (non-ASCII never gets this far).
 */
function cacheKey(host: string): string {
  const end = host.charCodeAt(host.length - 1) === 0x2e ? host.length - 1 : host.length;
  let upper = false;
  for (let i = 0; i < end && !upper; i++) {
    const c = host.charCodeAt(i);
    upper = c >= 0x41 && c <= 0x5a;
  }
  if (!upper) return end === host.length ? host : host.slice(0, end);
  return host.slice(0, end).replace(/[A-Z]+/g, (s) => s.toLowerCase());
}

interface CacheEntry {
  readonly outcome: ResolveOutcome;
  readonly expiresAt: number;
}

/**
 * Asks A and AAAA in parallel. Both must answer (an address or "no data"): if either fails the
 * whole name fails, because an unseen answer could hold a forbidden address.
 */
export class DnsResolver implements Resolver {
  // The callback API, not `dns.promises`: one settled callback per family instead of a promise
  // per query, and "no data" (ENODATA, the usual AAAA answer) is read as empty without rethrowing.
  readonly #resolver: CallbackResolver;
  readonly #maxTtlMs: number;
  readonly #maxNames: number;
  readonly #clock: Clock;
  readonly #cache = new Map<string, CacheEntry>();
  readonly #onLookup: ((hit: boolean) => void) | undefined;

  constructor(options: DnsResolverOptions = {}) {
    // Two tries within the budget (c-ares doubles the wait on the retry): a lost UDP datagram
    // costs a third of the budget, not the whole of it.
    const budget = options.timeoutMs ?? 5000;
    this.#resolver = new CallbackResolver({ timeout: Math.max(50, Math.floor(budget / 3)), tries: 2 });
    if (options.servers !== undefined && options.servers.length > 0) this.#resolver.setServers([...options.servers]);
    const maxTtl = options.cacheMaxTtlMs ?? DNS_CACHE_MAX_TTL_MS;
    if (!Number.isFinite(maxTtl) || maxTtl < 0 || maxTtl > DNS_CACHE_MAX_TTL_MS) {
      throw new RangeError(`cacheMaxTtlMs must be between 0 and ${DNS_CACHE_MAX_TTL_MS}, got ${maxTtl}`);
    }
    const maxNames = options.cacheMaxNames ?? DNS_CACHE_MAX_NAMES;
    if (!Number.isInteger(maxNames) || maxNames < 0) throw new RangeError(`cacheMaxNames must be a whole number ≥ 0, got ${maxNames}`);
    this.#maxTtlMs = maxTtl;
    this.#maxNames = maxNames;
    this.#clock = options.clock ?? systemClock;
    this.#onLookup = options.onLookup;
  }

  /** How many names are cached now (expired ones included until they are asked for or evicted). */
  get cachedNames(): number {
    return this.#cache.size;
  }

  resolve(host: string): Promise<ResolveOutcome> | ResolveOutcome {
    const name = cacheKey(host);
    const hit = this.#cache.get(name);
    if (hit !== undefined) {
      if (this.#clock.now() < hit.expiresAt) {
        this.#onLookup?.(true);
        return hit.outcome;
      }
      this.#cache.delete(name);
    }
    this.#onLookup?.(false);
    return this.#ask(name);
  }

  async #ask(name: string): Promise<ResolveOutcome> {
    const [a, aaaa] = await Promise.all([this.#family(name, 4), this.#family(name, 6)]);
    if (typeof a === "string") return { ok: false, code: a };
    if (typeof aaaa === "string") return { ok: false, code: aaaa };
    if (a.length === 0 && aaaa.length === 0) return { ok: false, code: "dns_no_addresses" };
    const addresses: string[] = [];
    let ttl = Number.POSITIVE_INFINITY;
    for (const r of a) {
      addresses.push(r.address);
      ttl = Math.min(ttl, r.ttl);
    }
    for (const r of aaaa) {
      addresses.push(r.address);
      ttl = Math.min(ttl, r.ttl);
    }
    const outcome: ResolveOutcome = { ok: true, addresses };
    this.#remember(name, outcome, ttl);
    return outcome;
  }

  /** Caches a successful answer for its smallest TTL, capped; TTL 0 is never cached. */
  #remember(name: string, outcome: ResolveOutcome, ttlSeconds: number): void {
    if (!(ttlSeconds > 0) || this.#maxTtlMs === 0 || this.#maxNames === 0) return;
    const now = this.#clock.now();
    if (this.#cache.size >= this.#maxNames) {
      for (const [k, e] of this.#cache) if (e.expiresAt <= now) this.#cache.delete(k);
      // Still full: drop the oldest (Map order is insertion order).
      while (this.#cache.size >= this.#maxNames) {
        const oldest = this.#cache.keys().next();
        if (oldest.done === true) break;
        this.#cache.delete(oldest.value);
      }
    }
    this.#cache.set(name, { outcome, expiresAt: now + Math.min(ttlSeconds * 1000, this.#maxTtlMs) });
  }

  #family(name: string, family: 4 | 6): Promise<FamilyAnswer> {
    return new Promise((resolve) => {
      const done = (err: NodeJS.ErrnoException | null, records: RecordWithTtl[]): void => {
        if (err === null) return resolve(records);
        const mapped = mapError(err.code);
        resolve(mapped === "nodata" ? [] : mapped);
      };
      try {
        if (family === 4) this.#resolver.resolve4(name, { ttl: true }, done);
        else this.#resolver.resolve6(name, { ttl: true }, done);
      } catch {
        // c-ares refuses some names synchronously (e.g. too long): a failure, never an empty answer.
        resolve("dns_failed");
      }
    });
  }
}
