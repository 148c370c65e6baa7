/**
 * CachingTokenReviewer (seed 004) so that not every CONNECT costs a TokenReview.
 *
 * Trade-off, stated as the seed asks: a token the API server would now refuse, because its pod
 * or ServiceAccount was deleted, stays accepted for up to the TTL.
 */
import { hash } from "node:crypto";
import { decodeJwt } from "jose";
import { TOKEN_EXPIRATION_SECONDS } from "../plugins/index.js";
import { systemClock, type Clock, type ReviewResult, type TokenReviewer } from "./reviewer.js";

/** The seed's DefaultTokenCacheTTL: five minutes. */
export const DEFAULT_TOKEN_CACHE_TTL_MS = 5 * 60 * 1000;
/** The most entries the cache holds. */
export const TOKEN_CACHE_MAX_ENTRIES = 1024;

/** Options of {@link CachingTokenReviewer}. */
export interface CachingTokenReviewerOptions {
  readonly ttlMs?: number;
  readonly clock?: Clock;
  readonly maxEntries?: number;
  /** Told of every lookup: hit (answered from the cache) or miss (the metrics' counter). */
  readonly onLookup?: (hit: boolean) => void;
}

/** Thrown by the constructor for a TTL that is not positive or not below a projected token's lifetime. */
export class InvalidCacheTtlError extends Error {
  readonly code = "invalid_cache_ttl";
  constructor(ttlMs: number) {
    super(`token cache TTL must be > 0 and < ${TOKEN_EXPIRATION_SECONDS} s, got ${ttlMs} ms`);
    this.name = "InvalidCacheTtlError";
  }
}

interface Entry {
  /** The answer itself, frozen: a hit allocates nothing. */
  readonly answer: ReviewResult;
  readonly expiresAt: number;
}

/** The `exp` claim of a token, read without checking its signature; undefined when unreadable. */
function unverifiedExpiryMs(token: string): number | undefined {
  try {
    const exp = decodeJwt(token).exp;
    return typeof exp === "number" && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** A TokenReviewer that remembers accepted tokens, keyed by their SHA-256 digest. */
export class CachingTokenReviewer implements TokenReviewer {
  readonly #inner: TokenReviewer;
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #max: number;
  readonly #entries = new Map<string, Entry>();
  readonly #onLookup: ((hit: boolean) => void) | undefined;

  constructor(inner: TokenReviewer, options: CachingTokenReviewerOptions = {}) {
    const ttl = options.ttlMs ?? DEFAULT_TOKEN_CACHE_TTL_MS;
    if (!Number.isFinite(ttl) || ttl <= 0 || ttl >= TOKEN_EXPIRATION_SECONDS * 1000) throw new InvalidCacheTtlError(ttl);
    this.#inner = inner;
    this.#ttlMs = ttl;
    this.#clock = options.clock ?? systemClock;
    this.#max = options.maxEntries ?? TOKEN_CACHE_MAX_ENTRIES;
    this.#onLookup = options.onLookup;
  }

  /** How many tokens are cached now (expired ones included until dropped). */
  get size(): number {
    return this.#entries.size;
  }

  /** Answers a cached token synchronously; asks the inner reviewer otherwise. */
  review(token: string): Promise<ReviewResult> | ReviewResult {
    const key = hash("sha256", token, "base64");
    const hit = this.#entries.get(key);
    if (hit !== undefined) {
      if (this.#clock.now() < hit.expiresAt) {
        this.#onLookup?.(true);
        return hit.answer;
      }
      this.#entries.delete(key);
    }
    this.#onLookup?.(false);
    return this.#miss(token, key);
  }

  async #miss(token: string, key: string): Promise<ReviewResult> {
    const answer = await this.#inner.review(token);
    if (!answer.ok) return answer; // a refusal is never cached
    const now = this.#clock.now();
    // exp is read only here, from a token the reviewer has just accepted.
    const exp = unverifiedExpiryMs(token);
    const expiresAt = Math.min(now + this.#ttlMs, exp ?? Number.POSITIVE_INFINITY);
    if (expiresAt <= now) return answer; // already past its expiry: never cached
    if (this.#entries.size >= this.#max) {
      for (const [k, e] of this.#entries) if (e.expiresAt <= now) this.#entries.delete(k);
      // Nothing freed: stop caching until an entry expires, rather than evict a live one.
      if (this.#entries.size >= this.#max) return answer;
    }
    this.#entries.set(key, { answer: Object.freeze({ ok: true, username: answer.username }), expiresAt });
    return answer;
  }
}
