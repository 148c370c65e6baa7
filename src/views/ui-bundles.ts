/**
 * View plugins' UI bundles as the plugin proxy serves them (docs/adr/0070): each one read once by
 * its digest through a port (the app reads it from the plugin's image source), size-capped before
 * it is read, verified against its digest here again, split into its files, and kept in a cache
 * bounded in bytes (least recently used out first). Concurrent requests for one bundle share one
 * read, and each waits at most its deadline. A bundle that is unusable (too large, not a clean tar,
 * not its digest) stays unusable — its digest names those bytes forever — so that verdict is cached
 * too; a source that could not be reached is asked again next time.
 */
import { createHash } from "node:crypto";
import { DEFAULT_TAR_CAPS, readTar } from "./tar.js";
import type { TarCaps } from "./tar.js";

/** What reading a bundle's blob gave: its bytes, or why not and whether to try again later. */
export type BlobRead =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly retry: boolean; readonly message: string };

/** Where bundles come from: the blob `digest` in the repository of `image` (`name@sha256:…`), at most `maxBytes`. */
export interface UiBlobSource {
  read(image: string, digest: string, maxBytes: number): Promise<BlobRead>;
}

/** A bundle's files, or why it cannot be served (502 unusable, 503 unreachable, 504 too slow). */
export type BundleLookup =
  | { readonly ok: true; readonly files: ReadonlyMap<string, Uint8Array> }
  | { readonly ok: false; readonly status: 502 | 503 | 504; readonly reason: string };

/** Options of {@link UiBundles}. */
export interface UiBundlesOptions {
  /** The largest bundle read (default 16 MiB). */
  readonly maxBundleBytes?: number;
  /** The most bytes of bundles kept (default 64 MiB; at least one largest bundle). */
  readonly cacheBytes?: number;
  /** How long one request waits for a read (default 10 s). */
  readonly deadlineMs?: number;
  readonly tar?: TarCaps;
}

/** The defaults. */
export const UI_BUNDLE_LIMITS = { maxBundleBytes: 16 * 1024 * 1024, cacheBytes: 64 * 1024 * 1024, deadlineMs: 10_000 } as const;

type Entry =
  | { readonly kind: "ready"; readonly files: ReadonlyMap<string, Uint8Array>; readonly bytes: number }
  | { readonly kind: "unusable"; readonly reason: string };

/** The cache of bundles. */
export class UiBundles {
  readonly #source: UiBlobSource;
  readonly #max: number;
  readonly #cacheBytes: number;
  readonly #deadlineMs: number;
  readonly #tar: TarCaps;
  readonly #entries = new Map<string, Entry>();
  readonly #reading = new Map<string, Promise<BundleLookup>>();
  #held = 0;

  constructor(source: UiBlobSource, o: UiBundlesOptions = {}) {
    this.#source = source;
    this.#max = o.maxBundleBytes ?? UI_BUNDLE_LIMITS.maxBundleBytes;
    this.#cacheBytes = Math.max(o.cacheBytes ?? UI_BUNDLE_LIMITS.cacheBytes, this.#max);
    this.#deadlineMs = o.deadlineMs ?? UI_BUNDLE_LIMITS.deadlineMs;
    this.#tar = o.tar ?? DEFAULT_TAR_CAPS;
  }

  /** Bytes of bundles held now. */
  get heldBytes(): number {
    return this.#held;
  }

  /** The files of bundle `digest` of `image`. Never throws. */
  async get(image: string, digest: string): Promise<BundleLookup> {
    const hit = this.#entries.get(digest);
    if (hit !== undefined) {
      // Most recently used last.
      this.#entries.delete(digest);
      this.#entries.set(digest, hit);
      return hit.kind === "ready" ? { ok: true, files: hit.files } : { ok: false, status: 502, reason: hit.reason };
    }
    let reading = this.#reading.get(digest);
    if (reading === undefined) {
      reading = this.#load(image, digest).finally(() => this.#reading.delete(digest));
      this.#reading.set(digest, reading);
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<BundleLookup>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, status: 504, reason: "the UI bundle took too long to read" }), this.#deadlineMs);
    });
    try {
      return await Promise.race([reading, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #load(image: string, digest: string): Promise<BundleLookup> {
    let read: BlobRead;
    try {
      read = await this.#source.read(image, digest, this.#max);
    } catch (err) {
      read = { ok: false, retry: true, message: err instanceof Error ? err.message : String(err) };
    }
    // A source's refusal is not remembered: a registry's 500, 429 or failed token passes, and only
    // what the bytes themselves fail (size, digest, tar) holds for the digest forever.
    if (!read.ok) return read.retry ? { ok: false, status: 503, reason: "the UI bundle cannot be read now" } : { ok: false, status: 502, reason: "the UI bundle cannot be read" };
    const bytes = read.bytes;
    if (bytes.length > this.#max) return this.#unusable(digest, "the UI bundle is too large");
    if (`sha256:${createHash("sha256").update(bytes).digest("hex")}` !== digest) return this.#unusable(digest, "the UI bundle does not match its digest");
    const tar = readTar(bytes, this.#tar);
    if (!tar.ok) return this.#unusable(digest, `the UI bundle is not a clean tar (${tar.problem})`);
    this.#remember(digest, { kind: "ready", files: tar.files, bytes: bytes.length });
    return { ok: true, files: tar.files };
  }

  #unusable(digest: string, reason: string): BundleLookup {
    this.#remember(digest, { kind: "unusable", reason });
    return { ok: false, status: 502, reason };
  }

  #remember(digest: string, entry: Entry): void {
    const size = entry.kind === "ready" ? entry.bytes : 0;
    for (const [d, e] of this.#entries) {
      if (this.#held + size <= this.#cacheBytes && this.#entries.size < 4096) break;
      this.#entries.delete(d);
      if (e.kind === "ready") this.#held -= e.bytes;
    }
    this.#entries.set(digest, entry);
    this.#held += size;
  }
}
