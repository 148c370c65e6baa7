/**
 * The views room's counters, registered in the registry the shell passes in (the integrator's
 * `/metrics` serves it). Labels are fixed vocabularies: never a user, a path or a token.
 */
import { Counter, Registry } from "prom-client";

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

  constructor(registry: Registry = new Registry()) {
    const registers = [registry];
    this.mints = new Counter({ name: "openfief_plugin_token_mints_total", help: "PluginToken mints by outcome", labelNames: ["outcome"], registers });
    this.decisions = new Counter({ name: "openfief_gateway_decisions_total", help: "Gateway requests with a valid PluginToken, by route, decision and gate", labelNames: ["route", "decision", "gate"], registers });
    this.refusedTokens = new Counter({ name: "openfief_gateway_tokens_refused_total", help: "Gateway requests whose PluginToken was refused, by problem", labelNames: ["problem"], registers });
    this.refusedRequests = new Counter({ name: "openfief_gateway_requests_refused_total", help: "Gateway requests refused before their token was read, by reason", labelNames: ["reason"], registers });
    this.assets = new Counter({ name: "openfief_plugin_proxy_requests_total", help: "Plugin proxy answers (view assets, the SDK), by outcome", labelNames: ["outcome"], registers });
  }
}
