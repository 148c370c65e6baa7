/**
 * The proxy's counters: prom-client metrics registered in a registry the caller passes in, so the
 * control plane's `/metrics` serves them (and the proxy's own port can, in cluster mode). Labels
 * are bounded sets: outcome (`allowed`, `refused` by policy, `failed` to reach or to serve, ADR
 * 0110), the refusal table's labels, parser error kinds; never a plugin, a host or an address.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { ConnectOutcome } from "./outcome.js";
import { REFUSALS } from "./refusals.js";

/** The kinds of request refused before the proxy's checks (by its head reader, ADR 0035; the labels Node's parser errors were counted under). */
export type ParserRejection = "invalid_method" | "invalid_target" | "header_overflow" | "invalid_header" | "missing_host" | "timeout" | "other";

/** A cache's answer to one lookup. */
export type CacheLookup = (hit: boolean) => void;

/** The metrics of one proxy. */
export class EgressMetrics {
  readonly decisions: Counter<"outcome" | "reason">;
  readonly openTunnels: Gauge;
  readonly connectSeconds: Histogram<"outcome">;
  readonly tokenCache: Counter<"result">;
  readonly dnsCache: Counter<"result">;
  readonly parserRejections: Counter<"kind">;
  readonly anonymousDropped: Counter;
  readonly anonymousRecorded: Counter;
  readonly commitQueue: Gauge;
  #waiting: () => number = () => 0;

  constructor(registry: Registry, prefix = "openfief_egress_") {
    const registers = [registry];
    this.decisions = new Counter({ name: `${prefix}decisions_total`, help: "CONNECTs decided, by outcome (allowed; refused by policy; failed: not reached, or the proxy could not serve it) and reason (the refusal table's label, or listed)", labelNames: ["outcome", "reason"], registers });
    this.openTunnels = new Gauge({ name: `${prefix}open_tunnels`, help: "tunnels open now", registers });
    this.connectSeconds = new Histogram({
      name: `${prefix}connect_seconds`, help: "time from a CONNECT's head to its answer, by outcome (allowed, refused, failed)", labelNames: ["outcome"], registers,
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    });
    this.tokenCache = new Counter({ name: `${prefix}token_review_cache_total`, help: "token reviews answered by the cache (hit) or asked of the reviewer (miss)", labelNames: ["result"], registers });
    this.dnsCache = new Counter({ name: `${prefix}dns_cache_total`, help: "name resolutions answered by the cache (hit) or asked of DNS (miss)", labelNames: ["result"], registers });
    this.parserRejections = new Counter({ name: `${prefix}parser_rejections_total`, help: "requests the head reader on the proxy's port rejected before its checks (as Node's HTTP parser did), by kind", labelNames: ["kind"], registers });
    this.anonymousRecorded = new Counter({ name: `${prefix}anonymous_refusals_recorded_total`, help: "refusals before identity recorded in egress/-", registers });
    this.anonymousDropped = new Counter({ name: `${prefix}anonymous_refusals_dropped_total`, help: "refusals before identity past their budget, counted into an egress.refusals summary instead of recorded one by one", registers });
    const waiting = (): number => this.#waiting();
    this.commitQueue = new Gauge({
      name: `${prefix}commits_waiting`, help: "decisions waiting for their commit", registers,
      collect() {
        this.set(waiting());
      },
    });
    // Every label of the table exists from the start, so a rate() over a refusal never sees a gap.
    for (const code of Object.keys(REFUSALS) as (keyof typeof REFUSALS)[]) this.decisions.inc({ outcome: REFUSALS[code].outcome, reason: REFUSALS[code].label }, 0);
    this.decisions.inc({ outcome: "allowed", reason: "listed" }, 0);
  }

  /** Reads the commits waiting from `count` whenever the metrics are collected (nothing on the CONNECT path). */
  watchCommits(count: () => number): void {
    this.#waiting = count;
  }

  /** Counts one CONNECT's outcome and its latency. */
  outcome(o: ConnectOutcome, seconds: number): void {
    if (o.kind === "tunnel") {
      this.decisions.inc({ outcome: "allowed", reason: "listed" });
      this.connectSeconds.observe({ outcome: "allowed" }, seconds);
    } else {
      const row = REFUSALS[o.code];
      this.decisions.inc({ outcome: row.outcome, reason: row.label });
      this.connectSeconds.observe({ outcome: row.outcome }, seconds);
    }
  }

  /** A lookup counter for the token cache. */
  readonly tokenLookup: CacheLookup = (hit) => this.tokenCache.inc({ result: hit ? "hit" : "miss" });
  /** A lookup counter for the DNS cache. */
  readonly dnsLookup: CacheLookup = (hit) => this.dnsCache.inc({ result: hit ? "hit" : "miss" });
}
