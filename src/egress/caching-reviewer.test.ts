import { createHash } from "node:crypto";
import { Session } from "node:inspector/promises";
import { UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import { CachingTokenReviewer, DEFAULT_TOKEN_CACHE_TTL_MS, InvalidCacheTtlError } from "./caching-reviewer.js";
import type { ReviewResult, TokenReviewer } from "./reviewer.js";

const T0 = 1_800_000_000_000;

class FakeClock {
  t = T0;
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

/** Counts calls; accepts tokens in `accepted`. */
class CountingReviewer implements TokenReviewer {
  calls = 0;
  accepted = new Set<string>();
  async review(token: string): Promise<ReviewResult> {
    this.calls++;
    return this.accepted.has(token) ? { ok: true, username: "system:serviceaccount:openfief:plugin-a" } : { ok: false, code: "token_refused" };
  }
}

/** The keys of a #private Map field, read with the inspector protocol (no test hook in the class). */
async function privateMapKeys(target: object, field: string): Promise<unknown> {
  const session = new Session();
  session.connect();
  const probe = globalThis as { __probe?: object };
  probe.__probe = target;
  try {
    const { result } = await session.post("Runtime.evaluate", { expression: "globalThis.__probe" });
    // @types/node 20 predates `privateProperties` (Chrome DevTools Protocol, V8 ≥ 9).
    const props = (await session.post("Runtime.getProperties", { objectId: result.objectId ?? "", ownProperties: true })) as {
      privateProperties?: { name: string; value?: { objectId?: string } }[];
    };
    const map = props.privateProperties?.find((p) => p.name === field)?.value?.objectId;
    if (map === undefined) throw new Error(`no private field ${field}`);
    const keys: { result: { value?: unknown } } = await session.post("Runtime.callFunctionOn", { objectId: map, functionDeclaration: "function () { return [...this.keys()]; }", returnByValue: true });
    return keys.result.value;
  } finally {
    delete probe.__probe;
    session.disconnect();
  }
}

function jwt(expSeconds?: number): string {
  const t = new UnsecuredJWT({ sub: "x", nonce: Math.random() });
  if (expSeconds !== undefined) t.setExpirationTime(expSeconds);
  return t.encode();
}

function setup(ttlMs?: number, maxEntries?: number): { clock: FakeClock; inner: CountingReviewer; cache: CachingTokenReviewer } {
  const clock = new FakeClock();
  const inner = new CountingReviewer();
  const cache = new CachingTokenReviewer(inner, { clock, ...(ttlMs !== undefined ? { ttlMs } : {}), ...(maxEntries !== undefined ? { maxEntries } : {}) });
  return { clock, inner, cache };
}

describe("CachingTokenReviewer", () => {
  it("trusts an accepted token for the TTL (five minutes by default), then asks again", async () => {
    expect(DEFAULT_TOKEN_CACHE_TTL_MS).toBe(300_000);
    const { clock, inner, cache } = setup();
    const tok = jwt(T0 / 1000 + 3600);
    inner.accepted.add(tok);
    expect((await cache.review(tok)).ok).toBe(true);
    clock.advance(299_999);
    expect((await cache.review(tok)).ok).toBe(true);
    expect(inner.calls).toBe(1);
    clock.advance(1);
    expect((await cache.review(tok)).ok).toBe(true);
    expect(inner.calls).toBe(2);
  });

  it("trusts a token only until its own exp when that comes before the TTL", async () => {
    const { clock, inner, cache } = setup();
    const tok = jwt(T0 / 1000 + 60);
    inner.accepted.add(tok);
    await cache.review(tok);
    clock.advance(59_999);
    await cache.review(tok);
    expect(inner.calls).toBe(1);
    clock.advance(1);
    inner.accepted.delete(tok);
    expect(await cache.review(tok)).toEqual({ ok: false, code: "token_refused" });
    expect(inner.calls).toBe(2);
  });

  it("never caches a refused token", async () => {
    const { inner, cache } = setup();
    const tok = jwt(T0 / 1000 + 3600);
    expect((await cache.review(tok)).ok).toBe(false);
    inner.accepted.add(tok);
    expect((await cache.review(tok)).ok).toBe(true);
    expect(inner.calls).toBe(2);
    expect(cache.size).toBe(1);
  });

  it("never caches a token already past its expiry", async () => {
    const { inner, cache } = setup();
    const tok = jwt(T0 / 1000 - 1);
    inner.accepted.add(tok);
    expect((await cache.review(tok)).ok).toBe(true);
    expect((await cache.review(tok)).ok).toBe(true);
    expect(inner.calls).toBe(2);
    expect(cache.size).toBe(0);
  });

  it("uses the TTL alone for an accepted token whose exp cannot be read", async () => {
    const { clock, inner, cache } = setup(1000);
    inner.accepted.add("opaque-token");
    await cache.review("opaque-token");
    clock.advance(999);
    await cache.review("opaque-token");
    expect(inner.calls).toBe(1);
  });

  it("keys entries by the token's digest: the cache holds no token", async () => {
    const { inner, cache } = setup();
    const tok = jwt(T0 / 1000 + 3600);
    inner.accepted.add(tok);
    await cache.review(tok);
    // The entries are #private: read their keys through the inspector, as a heap dump would show them.
    expect(await privateMapKeys(cache, "#entries")).toEqual([createHash("sha256").update(tok).digest("base64")]);
  });

  it("when full, drops expired entries to make room", async () => {
    const { clock, inner, cache } = setup(1000, 2);
    const [a, b, c] = [jwt(), jwt(), jwt()];
    for (const t of [a, b, c]) inner.accepted.add(t);
    await cache.review(a);
    await cache.review(b);
    clock.advance(1000);
    await cache.review(c);
    expect(cache.size).toBe(1);
    await cache.review(c);
    expect(inner.calls).toBe(3);
  });

  it("when full and nothing has expired, stops caching until it can", async () => {
    const { clock, inner, cache } = setup(1000, 2);
    const [a, b, c] = [jwt(), jwt(), jwt()];
    for (const t of [a, b, c]) inner.accepted.add(t);
    await cache.review(a);
    await cache.review(b);
    await cache.review(c);
    await cache.review(c);
    expect(inner.calls).toBe(4);
    expect(cache.size).toBe(2);
    await cache.review(a);
    expect(inner.calls).toBe(4);
    clock.advance(1000);
    await cache.review(c);
    await cache.review(c);
    expect(inner.calls).toBe(5);
  });

  it("holds at most 1024 entries by default", async () => {
    const { inner, cache } = setup();
    const tokens = Array.from({ length: 1030 }, (_, i) => `opaque-${i}`);
    for (const t of tokens) inner.accepted.add(t);
    for (const t of tokens) await cache.review(t);
    expect(cache.size).toBe(1024);
  });

  it.each([0, -1, 3_600_000, 3_600_001, Number.NaN, Number.POSITIVE_INFINITY])("refuses a TTL of %s ms", (ttlMs) => {
    expect(() => new CachingTokenReviewer(new CountingReviewer(), { ttlMs })).toThrow(InvalidCacheTtlError);
  });

  it.each([1, 3_599_999])("accepts a TTL of %s ms", (ttlMs) => {
    expect(() => new CachingTokenReviewer(new CountingReviewer(), { ttlMs })).not.toThrow();
  });
});
