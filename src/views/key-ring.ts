/**
 * The signing keys of the control plane's own tokens (user sessions and PluginTokens): ES256 keys
 * with key IDs, the newest one signing, the public halves published as a JWKS (docs/adr/0023). A
 * rotation makes a fresh key the signer and keeps the previous one published for an overlap at
 * least as long as any token it signed can live, so no valid token stops verifying mid-life.
 * Private keys never leave the ring: not in a log line, an error or the JWKS.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { dirname } from "node:path";
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JSONWebKeySet, type JWK } from "jose";

/** One key of the ring as stored. */
export interface StoredKey {
  readonly kid: string;
  /** The private JWK (ES256, P-256). */
  readonly privateJwk: JWK;
  /** When it was made, ms since the epoch. */
  readonly createdAt: number;
  /** When a newer key took over signing; null for the signing key. */
  readonly retiredAt: number | null;
}

/** Where a ring keeps its keys between restarts. */
export interface KeyStore {
  load(): StoredKey[] | null;
  save(keys: readonly StoredKey[]): void;
}

/** Keys in memory only: every restart starts a new ring (tests, throwaway demos). */
export class MemoryKeyStore implements KeyStore {
  #keys: StoredKey[] | null = null;
  load(): StoredKey[] | null {
    return this.#keys === null ? null : [...this.#keys];
  }
  save(keys: readonly StoredKey[]): void {
    this.#keys = [...keys];
  }
}

/** Keys in one JSON file, written 0600 through a rename so a crash never leaves half a file. */
export class FileKeyStore implements KeyStore {
  constructor(readonly file: string) {}
  load(): StoredKey[] | null {
    if (!existsSync(this.file)) return null;
    const parsed: unknown = JSON.parse(readFileSync(this.file, "utf8"));
    if (!Array.isArray(parsed)) throw new Error(`${this.file}: not a key ring`);
    return parsed as StoredKey[];
  }
  save(keys: readonly StoredKey[]): void {
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(keys)}\n`, { mode: 0o600 });
    renameSync(tmp, this.file);
  }
}

/** Options of {@link KeyRing.open}. */
export interface KeyRingOptions {
  readonly store?: KeyStore;
  /** ms since the epoch; defaults to the system clock. */
  readonly clock?: () => number;
  /**
   * How long a retired key stays published: at least the longest lifetime of any token the ring
   * signs, plus clock skew. Default one day.
   */
  readonly overlapSeconds?: number;
}

/** Published public halves: key type, curve, point, kid, alg and use only. */
function publicJwk(k: StoredKey): JWK {
  const { kty, crv, x, y } = k.privateJwk;
  const out: JWK = { kid: k.kid, alg: "ES256", use: "sig" };
  if (kty !== undefined) out.kty = kty;
  if (crv !== undefined) out.crv = crv;
  if (x !== undefined) out.x = x;
  if (y !== undefined) out.y = y;
  return out;
}

async function newKey(now: number): Promise<StoredKey> {
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const kid = randomUUID();
  return { kid, privateJwk: { ...(await exportJWK(privateKey)), kid, alg: "ES256" }, createdAt: now, retiredAt: null };
}

/** The ring: one signing key and the retired keys still within their overlap. */
export class KeyRing {
  readonly #store: KeyStore;
  readonly #clock: () => number;
  readonly #overlapMs: number;
  #keys: StoredKey[];
  #signing: { kid: string; key: CryptoKey } | null = null;

  private constructor(store: KeyStore, clock: () => number, overlapMs: number, keys: StoredKey[]) {
    this.#store = store;
    this.#clock = clock;
    this.#overlapMs = overlapMs;
    this.#keys = keys;
  }

  /** Loads the ring from its store, making the first key when there is none. */
  static async open(options: KeyRingOptions = {}): Promise<KeyRing> {
    const store = options.store ?? new MemoryKeyStore();
    const clock = options.clock ?? Date.now;
    const overlap = options.overlapSeconds ?? 86_400;
    if (!Number.isFinite(overlap) || overlap < 0) throw new RangeError("overlapSeconds must be a non-negative number");
    let keys = store.load() ?? [];
    if (!keys.some((k) => k.retiredAt === null)) {
      keys = [...keys, await newKey(clock())];
      store.save(keys);
    }
    return new KeyRing(store, clock, overlap * 1000, keys);
  }

  /** The key ID of the signing key. */
  get signingKid(): string {
    return this.#active().kid;
  }

  /** The signing key, imported once. */
  async signingKey(): Promise<{ kid: string; key: CryptoKey }> {
    const active = this.#active();
    if (this.#signing?.kid !== active.kid) this.#signing = { kid: active.kid, key: (await importJWK(active.privateJwk, "ES256")) as CryptoKey };
    return this.#signing;
  }

  /** The public keys a validator may accept now: the signing key and retired keys within the overlap. */
  jwks(): JSONWebKeySet {
    const now = this.#clock();
    return { keys: this.#keys.filter((k) => k.retiredAt === null || now < k.retiredAt + this.#overlapMs).map(publicJwk) };
  }

  /**
   * Makes a fresh key the signer. The old one is retired (still published for the overlap);
   * keys past their overlap are dropped.
   */
  async rotate(): Promise<string> {
    const now = this.#clock();
    const fresh = await newKey(now);
    const kept = this.#keys
      .map((k) => (k.retiredAt === null ? { ...k, retiredAt: now } : k))
      .filter((k) => (k.retiredAt as number) + this.#overlapMs > now);
    this.#keys = [...kept, fresh];
    this.#store.save(this.#keys);
    return fresh.kid;
  }

  /** Rotates when the signing key is older than `maxAgeSeconds`; returns whether it did. */
  async rotateIfOlderThan(maxAgeSeconds: number): Promise<boolean> {
    if (this.#clock() - this.#active().createdAt < maxAgeSeconds * 1000) return false;
    await this.rotate();
    return true;
  }

  #active(): StoredKey {
    const k = this.#keys.find((x) => x.retiredAt === null);
    if (k === undefined) throw new Error("the key ring has no signing key");
    return k;
  }
}

/**
 * Publishes the ring's public keys (`GET` or `HEAD`, `application/jwk-set+json`), cacheable for a
 * minute: well inside the overlap a rotation keeps, so a cached copy always holds the signer's key
 * or the key of any token still valid.
 */
export function jwksHandler(ring: KeyRing): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-length": "0" });
      res.end();
      return;
    }
    const body = JSON.stringify(ring.jwks());
    res.writeHead(200, { "content-type": "application/jwk-set+json", "cache-control": "public, max-age=60", "content-length": String(Buffer.byteLength(body)) });
    res.end(req.method === "HEAD" ? undefined : body);
  };
}
