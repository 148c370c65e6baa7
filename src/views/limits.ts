/**
 * What one signed-in caller may hold of the gateway (docs/adr/0091, 0092): a request rate per user
 * and per installation (token buckets; past it 429 with `Retry-After`), open watches per user, per
 * installation and in all (past them 429), and the budget of refusals recorded one by one. Every
 * number has a default that a view's normal use never reaches and is a setting of `openfief up`.
 */
import { REFUSAL_BUDGET_DEFAULTS, refusalBudgetProblem } from "../events/index.js";
import type { RefusalBudgetLimits } from "../events/index.js";

/** A token bucket's size and refill. */
export interface RateLimit {
  /** Requests per second, sustained. */
  readonly perSecond: number;
  /** Requests at once, after a quiet spell. */
  readonly burst: number;
}

/** The gateway's limits. */
export interface GatewayLimits {
  readonly rate: { readonly perUser: RateLimit; readonly perInstallation: RateLimit };
  readonly watches: { readonly perUser: number; readonly perInstallation: number; readonly total: number };
  readonly refusals: RefusalBudgetLimits;
}

/**
 * The defaults: a view loading its page bursts a few dozen requests and then watches a handful of
 * resources; these leave it far below every limit while a script that loops is stopped in a second.
 */
export const GATEWAY_LIMITS: GatewayLimits = {
  rate: { perUser: { perSecond: 20, burst: 100 }, perInstallation: { perSecond: 50, burst: 200 } },
  watches: { perUser: 50, perInstallation: 200, total: 1000 },
  refusals: REFUSAL_BUDGET_DEFAULTS,
};

/** Limits in part (a setting names only what it changes). */
export interface GatewayLimitsInput {
  readonly rate?: { readonly perUser?: Partial<RateLimit>; readonly perInstallation?: Partial<RateLimit> };
  readonly watches?: Partial<GatewayLimits["watches"]>;
  readonly refusals?: Partial<RefusalBudgetLimits>;
}

/** The defaults with `input` laid over them. */
export function gatewayLimits(input: GatewayLimitsInput = {}): GatewayLimits {
  const d = GATEWAY_LIMITS;
  return {
    rate: { perUser: { ...d.rate.perUser, ...input.rate?.perUser }, perInstallation: { ...d.rate.perInstallation, ...input.rate?.perInstallation } },
    watches: { ...d.watches, ...input.watches },
    refusals: { ...d.refusals, ...input.refusals },
  };
}

/** Every problem of a set of limits, by field path (empty when they are usable). */
export function gatewayLimitsProblems(l: GatewayLimits): string[] {
  const out: string[] = [];
  for (const [k, r] of [["rate.perUser", l.rate.perUser], ["rate.perInstallation", l.rate.perInstallation]] as const) {
    if (!Number.isFinite(r.perSecond) || r.perSecond <= 0) out.push(`${k}.perSecond must be a positive number`);
    if (!Number.isSafeInteger(r.burst) || r.burst < 1) out.push(`${k}.burst must be a whole number of at least 1`);
  }
  for (const k of ["perUser", "perInstallation", "total"] as const) {
    if (!Number.isSafeInteger(l.watches[k]) || l.watches[k] < 0) out.push(`watches.${k} must be a whole number`);
  }
  const budget = refusalBudgetProblem(l.refusals);
  if (budget !== null) out.push(`refusals.${budget}`);
  return out;
}

/** Buckets tracked per kind of key; past it the least recently used is forgotten. */
const MAX_BUCKETS = 4096;

interface Bucket {
  tokens: number;
  at: number;
}

/** Token buckets by key (a user, an installation), least recently used forgotten first. */
export class RateBuckets {
  readonly #buckets = new Map<string, Bucket>();

  constructor(
    readonly limit: RateLimit,
    readonly clock: () => number,
  ) {}

  /** Takes a token for `key`: null when there was one, else the seconds until there is. */
  take(key: string): number | null {
    const now = this.clock();
    let b = this.#buckets.get(key);
    if (b === undefined) {
      if (this.#buckets.size >= MAX_BUCKETS) {
        const oldest = this.#buckets.keys().next();
        if (oldest.done !== true) this.#buckets.delete(oldest.value);
      }
      b = { tokens: this.limit.burst, at: now };
    } else {
      this.#buckets.delete(key);
      b.tokens = Math.min(this.limit.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * this.limit.perSecond);
      b.at = now;
    }
    this.#buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.limit.perSecond));
  }

  /** Keys tracked now. */
  get size(): number {
    return this.#buckets.size;
  }
}

/** Which cap refused an open watch. */
export type WatchScope = "user" | "installation" | "total";

/** Open watches counted per user, per installation and in all. */
export class WatchSlots {
  readonly #users = new Map<string, number>();
  readonly #installations = new Map<string, number>();
  #total = 0;

  constructor(readonly caps: GatewayLimits["watches"]) {}

  /** Opens a slot: a release function (idempotent), or the cap that is full. */
  acquire(user: string, installation: string): { ok: true; release: () => void } | { ok: false; scope: WatchScope } {
    if (this.#total >= this.caps.total) return { ok: false, scope: "total" };
    if ((this.#users.get(user) ?? 0) >= this.caps.perUser) return { ok: false, scope: "user" };
    if ((this.#installations.get(installation) ?? 0) >= this.caps.perInstallation) return { ok: false, scope: "installation" };
    this.#total++;
    bump(this.#users, user, 1);
    bump(this.#installations, installation, 1);
    let held = true;
    return {
      ok: true,
      release: () => {
        if (!held) return;
        held = false;
        this.#total--;
        bump(this.#users, user, -1);
        bump(this.#installations, installation, -1);
      },
    };
  }

  /** Watches open now. */
  get open(): number {
    return this.#total;
  }
}

function bump(m: Map<string, number>, key: string, by: number): void {
  const n = (m.get(key) ?? 0) + by;
  if (n <= 0) m.delete(key);
  else m.set(key, n);
}
