/**
 * The TokenReviewer port (seed 004): a token in, a Kubernetes username out. Adapters live in
 * `kube-reviewer.ts` and `jwks-reviewer.ts`; `caching-reviewer.ts` wraps either.
 */

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

/** Checks a token. Implementations must answer a refusal rather than throw, but callers still guard. */
export interface TokenReviewer {
  review(token: string): Promise<ReviewResult>;
}

/** A source of the current time in milliseconds since the epoch; injected so tests can move it. */
export interface Clock {
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * Runs a review with a deadline. A reviewer that throws or does not answer in time is a refusal
 * (fail closed), never an acceptance.
 */
export async function reviewWithin(reviewer: TokenReviewer, token: string, timeoutMs: number): Promise<ReviewResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<ReviewResult>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, code: "review_timeout" }), timeoutMs);
    timer.unref();
  });
  try {
    const answer = await Promise.race([
      reviewer.review(token).then(
        (r): ReviewResult => (r !== null && typeof r === "object" && (r.ok === true ? typeof r.username === "string" && r.username !== "" : true) ? r : { ok: false, code: "review_failed" }),
        (): ReviewResult => ({ ok: false, code: "review_failed" }),
      ),
      timeout,
    ]);
    return answer.ok === true ? answer : { ok: false, code: answer.code };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}
