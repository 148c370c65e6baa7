/**
 * The views room's counters, registered in the registry the shell passes in (the integrator's
 * `/metrics` serves it). Labels are fixed vocabularies: never a user, a path or a token.
 */
import { Counter, Gauge, Registry } from "prom-client";

/** The counters of mints and of gateway requests. */
export class ViewMetrics {
  /** Mints by outcome (`ok` or an error code). */
  readonly mints: Counter<"outcome">;
  /** Requests with a valid PluginToken, by route, decision and gate. */
  readonly decisions: Counter<"route" | "decision" | "gate">;
  /** Requests whose token was refused (not recorded as events), by problem. */
  readonly refusedTokens: Counter<"problem">;
  /** Requests refused before any token was looked at (too long, unreadable, foreign preflight). */
  readonly refusedRequests: Counter<"reason">;
  /** The plugin proxy's answers, by outcome (`served`, `not_found`, `bad_path`, `bundle_unusable`, …). */
  readonly assets: Counter<"outcome">;
  /** Requests refused 429 by the rate limit, by whose bucket was empty (`user`, `installation`). */
  readonly rateLimited: Counter<"scope">;
  /** Watches refused 429 because a cap was full, by which (`user`, `installation`, `total`). */
  readonly watchesRefused: Counter<"scope">;
  /** Watches and upgraded connections open now. */
  readonly openWatches: Gauge<"kind">;
  /** Watches the gateway ended, by why (`token_expired`). */
  readonly watchesEnded: Counter<"why">;
  /** Refusals counted into a summary instead of recorded one by one. */
  readonly refusalsSummarised: Counter;

  constructor(registry: Registry = new Registry()) {
    const registers = [registry];
    this.mints = new Counter({ name: "openfief_plugin_token_mints_total", help: "PluginToken mints by outcome", labelNames: ["outcome"], registers });
    this.decisions = new Counter({ name: "openfief_gateway_decisions_total", help: "Gateway requests with a valid PluginToken, by route, decision and gate", labelNames: ["route", "decision", "gate"], registers });
    this.refusedTokens = new Counter({ name: "openfief_gateway_tokens_refused_total", help: "Gateway requests whose PluginToken was refused, by problem", labelNames: ["problem"], registers });
    this.refusedRequests = new Counter({ name: "openfief_gateway_requests_refused_total", help: "Gateway requests refused before their token was read, by reason", labelNames: ["reason"], registers });
    this.assets = new Counter({ name: "openfief_plugin_proxy_requests_total", help: "Plugin proxy answers (view assets, the SDK), by outcome", labelNames: ["outcome"], registers });
    this.rateLimited = new Counter({ name: "openfief_gateway_rate_limited_total", help: "Gateway requests refused by the rate limit, by the bucket that was empty", labelNames: ["scope"], registers });
    this.watchesRefused = new Counter({ name: "openfief_gateway_watches_refused_total", help: "Gateway watches refused because a cap on open watches was full, by cap", labelNames: ["scope"], registers });
    this.openWatches = new Gauge({ name: "openfief_gateway_open_watches", help: "Gateway watches and upgraded connections open now, by kind", labelNames: ["kind"], registers });
    this.watchesEnded = new Counter({ name: "openfief_gateway_watches_ended_total", help: "Gateway watches ended by the gateway, by why", labelNames: ["why"], registers });
    this.refusalsSummarised = new Counter({ name: "openfief_gateway_refusals_summarised_total", help: "Gateway refusals past their budget, counted in a summary event instead of recorded one by one", registers });
  }
}
