import { join } from "node:path";
import { decodeProtectedHeader, errors as joseErrors, importJWK, jwtVerify, type JWK, type JWTPayload } from "jose";
import { DEFAULT_SA_JWKS_DIR, ENV, instanceAudience, type Environment } from "./env.js";
import { SdkError } from "./errors.js";
import { readConfinedFile } from "./token-file.js";

/** The algorithms Kubernetes signs service-account tokens with; everything else is refused. */
export const ALLOWED_ALGORITHMS = ["RS256", "ES256", "ES384", "ES512"] as const;
type Algorithm = (typeof ALLOWED_ALGORITHMS)[number];

/** The leeway on expiry and not-before: one minute, as in the Go SDK. */
export const CLOCK_LEEWAY_SECONDS = 60;

const MAX_JWKS_BYTES = 1024 * 1024;
const MAX_ISSUER_BYTES = 4096;

/** Why a token was refused; a stable code, never the token. */
export type TokenRefusal =
  | "malformed"
  | "algorithm"
  | "unknown_kid"
  | "signature"
  | "claims"
  | "expired"
  | "keys_unavailable";

/** A refused token. Its message names the rule that failed, never the token. */
export class TokenRefusedError extends Error {
  readonly reason: TokenRefusal;

  constructor(reason: TokenRefusal, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TokenRefusedError";
    this.reason = reason;
  }
}

/** Decides whether a bearer token is the core's, for this instance. */
export interface CoreVerifier {
  /** Resolves with the verified claims, or rejects with TokenRefusedError. */
  verify(token: string): Promise<JWTPayload>;
}

/** What a JwksVerifier checks tokens against. */
export interface JwksVerifierOptions {
  /** The directory holding `jwks.json` and `issuer` (the mounted openfief-sa-jwks ConfigMap). */
  readonly jwksDir: string;
  /** This plugin instance's name; the audience is `openfief-plugin:<instance>`. */
  readonly instance: string;
  /** The core's ServiceAccount username, the only accepted subject. */
  readonly coreSubject: string;
  /** The clock; tests inject one. */
  readonly now?: () => Date;
}

type PublicJwk = { kty: "RSA"; n: string; e: string } | { kty: "EC"; crv: string; x: string; y: string };

interface KeyEntry {
  readonly kid: string;
  readonly alg?: string;
  readonly jwk: PublicJwk;
}

interface Parsed {
  readonly jwksBytes: Buffer;
  readonly issuerBytes: Buffer;
  readonly issuer: string;
  readonly keys: readonly KeyEntry[];
  readonly imported: Map<string, Awaited<ReturnType<typeof importJWK>>>;
}

const CURVE_OF: Record<string, string> = { ES256: "P-256", ES384: "P-384", ES512: "P-521" };
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

function isAllowed(alg: unknown): alg is Algorithm {
  return typeof alg === "string" && (ALLOWED_ALGORITHMS as readonly string[]).includes(alg);
}

/** Keeps only public RSA and EC signing keys with a key ID; drops everything else silently. */
export function publicSigningKeys(set: unknown): KeyEntry[] {
  if (typeof set !== "object" || set === null || !Array.isArray((set as { keys?: unknown }).keys)) {
    throw new Error("not a JWK set");
  }
  const out: KeyEntry[] = [];
  for (const raw of (set as { keys: unknown[] }).keys) {
    if (typeof raw !== "object" || raw === null) continue;
    const k = raw as Record<string, unknown>;
    if (typeof k.kid !== "string" || k.kid === "") continue;
    if (PRIVATE_MEMBERS.some((m) => m in k)) continue;
    if (k.use !== undefined && k.use !== "sig") continue;
    if (k.key_ops !== undefined && !(Array.isArray(k.key_ops) && k.key_ops.includes("verify"))) continue;
    if (k.alg !== undefined && !isAllowed(k.alg)) continue;
    const alg = typeof k.alg === "string" ? { alg: k.alg } : {};
    if (k.kty === "RSA" && typeof k.n === "string" && typeof k.e === "string") {
      out.push({ kid: k.kid, ...alg, jwk: { kty: "RSA", n: k.n, e: k.e } });
    } else if (
      k.kty === "EC" && typeof k.crv === "string" && Object.values(CURVE_OF).includes(k.crv) &&
      typeof k.x === "string" && typeof k.y === "string"
    ) {
      out.push({ kid: k.kid, ...alg, jwk: { kty: "EC", crv: k.crv, x: k.x, y: k.y } });
    }
  }
  return out;
}

function fits(entry: KeyEntry, alg: Algorithm): boolean {
  if (entry.alg !== undefined && entry.alg !== alg) return false;
  if (alg === "RS256") return entry.jwk.kty === "RSA";
  return entry.jwk.kty === "EC" && entry.jwk.crv === CURVE_OF[alg];
}

/**
 * Verifies the core's tokens against the cluster's public keys (D-59): `jwks.json` and `issuer`
 * in the mounted directory, read on every call and parsed again only when their bytes change, so
 * a rotated key works as soon as the kubelet updates the mount.
 */
export class JwksVerifier implements CoreVerifier {
  readonly #dir: string;
  readonly #audience: string;
  readonly #subject: string;
  readonly #now: () => Date;
  #parsed: Parsed | undefined;

  constructor(options: JwksVerifierOptions) {
    if (options.instance === "") throw new SdkError("env_invalid", "the instance name is empty");
    if (options.coreSubject === "") throw new SdkError("env_invalid", "the core's subject is empty");
    this.#dir = options.jwksDir;
    this.#audience = instanceAudience(options.instance);
    this.#subject = options.coreSubject;
    this.#now = options.now ?? (() => new Date());
  }

  async #load(): Promise<Parsed> {
    let jwksBytes: Buffer;
    let issuerBytes: Buffer;
    try {
      [jwksBytes, issuerBytes] = await Promise.all([
        readConfinedFile(join(this.#dir, "jwks.json"), MAX_JWKS_BYTES),
        readConfinedFile(join(this.#dir, "issuer"), MAX_ISSUER_BYTES),
      ]);
    } catch (cause) {
      throw new TokenRefusedError("keys_unavailable", "the cluster's keys cannot be read", { cause });
    }
    const cached = this.#parsed;
    if (cached !== undefined && cached.jwksBytes.equals(jwksBytes) && cached.issuerBytes.equals(issuerBytes)) return cached;
    const issuer = issuerBytes.toString("utf8").trim();
    let keys: KeyEntry[];
    try {
      keys = publicSigningKeys(JSON.parse(jwksBytes.toString("utf8")));
    } catch (cause) {
      throw new TokenRefusedError("keys_unavailable", "jwks.json is not a JWK set", { cause });
    }
    if (issuer === "") throw new TokenRefusedError("keys_unavailable", "the issuer file is empty");
    const parsed: Parsed = { jwksBytes, issuerBytes, issuer, keys, imported: new Map() };
    this.#parsed = parsed;
    return parsed;
  }

  /** Resolves with the verified claims, or rejects with TokenRefusedError. */
  async verify(token: string): Promise<JWTPayload> {
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch (cause) {
      throw new TokenRefusedError("malformed", "the token is not a signed JWT", { cause });
    }
    // The algorithm is checked before any key is looked at: `none` and HMAC never reach a key.
    const alg = header.alg;
    if (!isAllowed(alg)) throw new TokenRefusedError("algorithm", "the token's algorithm is not allowed");
    if (typeof header.kid !== "string" || header.kid === "") throw new TokenRefusedError("unknown_kid", "the token names no key");
    const parsed = await this.#load();
    const candidates = parsed.keys.filter((k) => k.kid === header.kid && fits(k, alg));
    const entry = candidates[0];
    if (entry === undefined || candidates.length > 1) throw new TokenRefusedError("unknown_kid", "the token's key is not in the cluster's key set");
    const cacheKey = `${alg}\u0000${entry.kid}`;
    let key = parsed.imported.get(cacheKey);
    if (key === undefined) {
      try {
        key = await importJWK(entry.jwk as JWK, alg);
      } catch (cause) {
        throw new TokenRefusedError("keys_unavailable", "the token's key cannot be used", { cause });
      }
      parsed.imported.set(cacheKey, key);
    }
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms: [alg],
        issuer: parsed.issuer,
        subject: this.#subject,
        audience: this.#audience,
        requiredClaims: ["exp"],
        clockTolerance: CLOCK_LEEWAY_SECONDS,
        currentDate: this.#now(),
      });
      return payload;
    } catch (cause) {
      if (cause instanceof joseErrors.JWTExpired) throw new TokenRefusedError("expired", "the token has expired", { cause });
      if (cause instanceof joseErrors.JWTClaimValidationFailed) {
        throw new TokenRefusedError("claims", `the token's ${cause.claim} claim is not accepted`, { cause });
      }
      throw new TokenRefusedError("signature", "the token's signature does not verify", { cause });
    }
  }
}

/**
 * The SDK's CoreVerifier from the environment the operator sets: OPENFIEF_INSTANCE,
 * OPENFIEF_CORE_SUBJECT and OPENFIEF_SA_JWKS_DIR (default /var/run/secrets/openfief-sa-jwks).
 */
export function newCoreVerifier(env: Environment = process.env, now?: () => Date): JwksVerifier {
  const instance = env[ENV.instance]?.trim() ?? "";
  const coreSubject = env[ENV.coreSubject]?.trim() ?? "";
  if (instance === "") throw new SdkError("env_invalid", `${ENV.instance} is not set`);
  if (coreSubject === "") throw new SdkError("env_invalid", `${ENV.coreSubject} is not set`);
  const dir = env[ENV.saJwksDir]?.trim();
  return new JwksVerifier({
    jwksDir: dir !== undefined && dir !== "" ? dir : DEFAULT_SA_JWKS_DIR,
    instance,
    coreSubject,
    ...(now !== undefined ? { now } : {}),
  });
}
