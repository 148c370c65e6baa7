/**
 * Resolving destination names. The proxy asks DNS itself through a `dns.promises.Resolver` with
 * configured servers: never `dns.lookup`, which reads the hosts file and turns `0177.0.0.1` into
 * 127.0.0.1 without asking DNS. A/AAAA answers are not cached here, so a rebinding name is asked
 * again on the next CONNECT and checked again.
 */
import { promises as dnsPromises } from "node:dns";

/** Why a name gave no usable addresses. */
export type ResolveError = "dns_nxdomain" | "dns_servfail" | "dns_refused" | "dns_no_addresses" | "dns_timeout" | "dns_failed";

/** Every address of a name (A first, then AAAA), or why there are none. */
export type ResolveOutcome =
  | { readonly ok: true; readonly addresses: readonly string[] }
  | { readonly ok: false; readonly code: ResolveError };

/** The Resolver port of the proxy. */
export interface Resolver {
  resolve(host: string): Promise<ResolveOutcome>;
}

/** Options of {@link DnsResolver}. */
export interface DnsResolverOptions {
  /** DNS servers (`ip` or `ip:port`, `[v6]:port`); the system's when absent. */
  readonly servers?: readonly string[];
  readonly timeoutMs?: number;
}

function mapError(code: unknown): ResolveError | "nodata" {
  switch (code) {
    case dnsPromises.NODATA:
      return "nodata";
    case dnsPromises.NOTFOUND:
      return "dns_nxdomain";
    case dnsPromises.SERVFAIL:
      return "dns_servfail";
    case dnsPromises.REFUSED:
      return "dns_refused";
    case dnsPromises.TIMEOUT:
      return "dns_timeout";
    default:
      return "dns_failed";
  }
}

/**
 * Asks A and AAAA in parallel. Both must answer (an address or "no data"): if either fails the
 * whole name fails, because an unseen answer could hold a forbidden address.
 */
export class DnsResolver implements Resolver {
  readonly #resolver: dnsPromises.Resolver;

  constructor(options: DnsResolverOptions = {}) {
    // Two tries within the budget (c-ares doubles the wait on the retry): a lost UDP datagram
    // costs a third of the budget, not the whole of it.
    const budget = options.timeoutMs ?? 5000;
    this.#resolver = new dnsPromises.Resolver({ timeout: Math.max(50, Math.floor(budget / 3)), tries: 2 });
    if (options.servers !== undefined && options.servers.length > 0) this.#resolver.setServers([...options.servers]);
  }

  async resolve(host: string): Promise<ResolveOutcome> {
    const name = host.endsWith(".") ? host.slice(0, -1) : host;
    const ask = async (family: 4 | 6): Promise<string[] | ResolveError> => {
      try {
        return family === 4 ? await this.#resolver.resolve4(name) : await this.#resolver.resolve6(name);
      } catch (err) {
        const mapped = mapError((err as { code?: unknown }).code);
        return mapped === "nodata" ? [] : mapped;
      }
    };
    const [a, aaaa] = await Promise.all([ask(4), ask(6)]);
    if (typeof a === "string") return { ok: false, code: a };
    if (typeof aaaa === "string") return { ok: false, code: aaaa };
    const addresses = [...a, ...aaaa];
    if (addresses.length === 0) return { ok: false, code: "dns_no_addresses" };
    return { ok: true, addresses };
  }
}
