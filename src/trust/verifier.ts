/**
 * The verifier the reconciler asks: verdicts cached by digest (and declared manifest), and an
 * unreachable registry handled without ever admitting more than before: the last verdict is kept
 * and the registry is tried again every minute. Without any earlier verdict an unreachable image
 * is refused (fail closed). The clock is injected so tests move time instead of waiting.
 */
import type { ImageRef, Manifest } from "../plugins/index.js";
import type { ImageVerdict } from "./image-check.js";
import { ImageSourceError } from "./oci.js";

/** How often an unreachable registry, or a refused image, is tried again. */
export const RETRY_INTERVAL_MS = 60_000;

/** Checks one image; throws {@link ImageSourceError} `unreachable` when the registry cannot be reached. */
export type CheckImage = (image: ImageRef, declared?: Manifest) => Promise<ImageVerdict>;

/** A verdict as the cache holds it. `stale` when the latest attempt could not reach the registry. */
export interface CachedVerdict {
  readonly verdict: ImageVerdict;
  /** Clock time (ms) of the check that produced `verdict`. */
  readonly checkedAt: number;
  /** Clock time (ms) after which the image is checked again. Infinity for an admitted verdict. */
  readonly retryAt: number;
  readonly stale: boolean;
}

/** Options of {@link ImageVerifier}. */
export interface ImageVerifierOptions {
  readonly check: CheckImage;
  /** Milliseconds since the epoch. */
  readonly clock: () => number;
  readonly retryIntervalMs?: number;
  /** Called with every verdict a check produced (not with cached answers): record it here. */
  readonly onVerdict?: (verdict: ImageVerdict) => void | Promise<void>;
}

interface Entry {
  image: ImageRef;
  declared: Manifest | undefined;
  cached: CachedVerdict;
}

function cacheKey(image: ImageRef, declared: Manifest | undefined): string {
  return `${image.digest}\n${declared === undefined ? "" : JSON.stringify(declared)}`;
}

/**
 * Caches image verdicts by digest. An admitted verdict (verified or unverified) stays until
 * {@link ImageVerifier.clear}: a digest's content never changes, and the trust policy's inputs
 * changing means a new verifier. A refused image is checked again after the retry interval,
 * since a signature may be attached later.
 */
export class ImageVerifier {
  readonly #entries = new Map<string, Entry>();
  readonly #check: CheckImage;
  readonly #clock: () => number;
  readonly #retry: number;
  readonly #onVerdict: ImageVerifierOptions["onVerdict"];

  constructor(options: ImageVerifierOptions) {
    this.#check = options.check;
    this.#clock = options.clock;
    this.#retry = options.retryIntervalMs ?? RETRY_INTERVAL_MS;
    this.#onVerdict = options.onVerdict;
  }

  /** The verdict for `image`: cached while valid, else checked now. */
  async verify(image: ImageRef, declared?: Manifest): Promise<CachedVerdict> {
    const key = cacheKey(image, declared);
    const entry = this.#entries.get(key);
    if (entry !== undefined && this.#clock() < entry.cached.retryAt) return entry.cached;
    return this.#refresh(key, image, declared, entry);
  }

  /** The cached verdict for `image`, without checking. */
  peek(image: ImageRef, declared?: Manifest): CachedVerdict | undefined {
    return this.#entries.get(cacheKey(image, declared))?.cached;
  }

  /** Checks again every image whose retry time has come; returns how many were checked. */
  async retryDue(): Promise<number> {
    const now = this.#clock();
    const due = [...this.#entries.entries()].filter(([, e]) => now >= e.cached.retryAt);
    for (const [key, e] of due) await this.#refresh(key, e.image, e.declared, e);
    return due.length;
  }

  /** Forgets every verdict (the catalog, owner signers or trust root changed). */
  clear(): void {
    this.#entries.clear();
  }

  async #refresh(key: string, image: ImageRef, declared: Manifest | undefined, entry: Entry | undefined): Promise<CachedVerdict> {
    const now = this.#clock();
    let verdict: ImageVerdict;
    try {
      verdict = await this.#check(image, declared);
    } catch (err) {
      const message = err instanceof ImageSourceError ? err.message : `check failed: ${err instanceof Error ? err.message : String(err)}`;
      if (entry !== undefined) {
        const kept: CachedVerdict = { ...entry.cached, retryAt: now + this.#retry, stale: true };
        entry.cached = kept;
        return kept;
      }
      verdict = {
        image: image.toString(),
        digest: image.digest,
        outcome: "refused",
        reason: "unreachable",
        message,
        signers: [],
        identities: [],
        rejectedBundles: [],
      };
      const cached: CachedVerdict = { verdict, checkedAt: now, retryAt: now + this.#retry, stale: true };
      this.#entries.set(key, { image, declared, cached });
      await this.#onVerdict?.(verdict);
      return cached;
    }
    const cached: CachedVerdict = {
      verdict,
      checkedAt: now,
      retryAt: verdict.outcome === "refused" ? now + this.#retry : Number.POSITIVE_INFINITY,
      stale: false,
    };
    this.#entries.set(key, { image, declared, cached });
    await this.#onVerdict?.(verdict);
    return cached;
  }
}
