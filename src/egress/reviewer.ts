/**
 * The TokenReviewer port (seed 004): a token in, a Kubernetes username out. Adapters live in
 * `kube-reviewer.ts` and `jwks-reviewer.ts`; `caching-reviewer.ts` wraps either.
 */
import { withTimeout } from "./deadline.js";

/** Why a token was not accepted. Never contains the token. */
export type ReviewRefusal =
  | "token_refused"
  | "wrong_audience"
  | "no_username"
  | "review_failed"
  | "review_timeout";

/** The outcome of one review. */
export type ReviewResult =
  | { readonly ok: true; readonly username: string }
  | { readonly ok: false; readonly code: ReviewRefusal };

/**
 * Checks a token. Implementations must answer a refusal rather than throw, but callers still guard.
 * A reviewer may answer synchronously (a cache hit), which spares the caller its review timer.
 */
export interface TokenReviewer {
  review(token: string): Promise<ReviewResult> | ReviewResult;
}

/** A source of the current time in milliseconds since the epoch; injected so tests can move it. */
export interface Clock {
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** Anything but a well-formed answer is a failed review. */
function wellFormed(r: unknown): ReviewResult {
  if (r === null || typeof r !== "object") return { ok: false, code: "review_failed" };
  const a = r as ReviewResult;
  if (a.ok === true) return typeof a.username === "string" && a.username !== "" ? { ok: true, username: a.username } : { ok: false, code: "review_failed" };
  return a.ok === false ? { ok: false, code: a.code } : { ok: false, code: "review_failed" };
}

/**
 * Runs a review with a deadline. A reviewer that throws or does not answer in time is a refusal
 * (fail closed), never an acceptance. A synchronous answer is returned as is, without a timer.
 */
export function reviewWithin(reviewer: TokenReviewer, token: string, timeoutMs: number): Promise<ReviewResult> | ReviewResult {
  let pending: Promise<ReviewResult> | ReviewResult;
  try {
    pending = reviewer.review(token);
  } catch {
    return { ok: false, code: "review_failed" };
  }
  if (!(pending instanceof Promise)) return wellFormed(pending);
  return withTimeout<ReviewResult>(
    pending.then(wellFormed, (): ReviewResult => ({ ok: false, code: "review_failed" })),
    timeoutMs,
    { ok: false, code: "review_timeout" },
  );
}
