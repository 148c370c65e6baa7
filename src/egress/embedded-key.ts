/**
 * The embedded signing key of `openfief token` and `openfief up`: an ES256 key kept in the data
 * folder, with its public half published as `jwks.json` for the JWKS reviewer. The private key
 * file is created 0600 and never printed.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { join as joinPath } from "node:path";
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JSONWebKeySet, type JWK } from "jose";
import { CORE_AUDIENCE, EGRESS_AUDIENCE, isValidPluginName, serviceAccountUsername, TOKEN_EXPIRATION_SECONDS } from "../plugins/index.js";
import { EGRESS_KEY_FILE } from "./key-file.js";

/** The issuer of tokens minted by the embedded key. */
export const EMBEDDED_ISSUER = "openfief-embedded";
/** The published key set's file in the data folder. */
export const EGRESS_JWKS_FILE = "jwks.json";
/** Default lifetime of a minted token: ten minutes. */
export const DEFAULT_TOKEN_TTL_SECONDS = 600;

/** Reads the key from `dataDir`, creating it (and jwks.json) on first use. */
export async function ensureEmbeddedKey(dataDir: string): Promise<{ privateJwk: JWK; jwks: JSONWebKeySet }> {
  const keyPath = joinPath(dataDir, EGRESS_KEY_FILE);
  const jwksPath = joinPath(dataDir, EGRESS_JWKS_FILE);
  if (existsSync(keyPath)) {
    const privateJwk = JSON.parse(readFileSync(keyPath, "utf8")) as JWK;
    if (existsSync(jwksPath)) return { privateJwk, jwks: readEmbeddedJwks(dataDir) };
    const jwks = { keys: [publicPart(privateJwk)] };
    writeFileSync(jwksPath, `${JSON.stringify(jwks, null, 2)}\n`, { mode: 0o600 });
    return { privateJwk, jwks };
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const privateJwk: JWK = { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: "ES256", use: "sig" };
  try {
    writeFileSync(keyPath, `${JSON.stringify(privateJwk)}\n`, { mode: 0o600, flag: "wx" });
  } catch (err) {
    // Another caller made it first (a sync and a demo's call minting at once): theirs is the key.
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return ensureEmbeddedKey(dataDir);
    throw err;
  }
  const jwks = { keys: [publicPart(privateJwk)] };
  // Public keys, but in the data folder every file is its owner's only.
  writeFileSync(jwksPath, `${JSON.stringify(jwks, null, 2)}\n`, { mode: 0o600 });
  return { privateJwk, jwks };
}

function publicPart(jwk: JWK): JWK {
  const { kty, crv, x, y, kid, alg, use } = jwk;
  const out: JWK = {};
  for (const [k, v] of Object.entries({ kty, crv, x, y, kid, alg, use })) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/** Reads the published key set (for the JWKS reviewer); throws when there is none yet. */
export function readEmbeddedJwks(dataDir: string): JSONWebKeySet {
  return JSON.parse(readFileSync(joinPath(dataDir, EGRESS_JWKS_FILE), "utf8")) as JSONWebKeySet;
}

/** A minted token and what it says. */
export interface MintedToken {
  readonly token: string;
  readonly subject: string;
  readonly audience: string;
  readonly issuer: string;
  readonly expiresAt: Date;
}

/** The audiences the embedded key mints for: the egress proxy's, and the core's (docs/adr/0196). */
export type EmbeddedAudience = typeof EGRESS_AUDIENCE | typeof CORE_AUDIENCE;

/**
 * Mints a short-lived egress token for `plugin`: subject `system:serviceaccount:openfief:plugin-<name>`,
 * audience openfief-egress (or, when asked, openfief-core: the token a plugin calls the core with),
 * lifetime at most one hour (a projected token's).
 */
export async function mintEgressToken(dataDir: string, plugin: string, options: { ttlSeconds?: number; now?: number; audience?: EmbeddedAudience } = {}): Promise<MintedToken> {
  const audience = options.audience ?? EGRESS_AUDIENCE;
  if (audience !== EGRESS_AUDIENCE && audience !== CORE_AUDIENCE) throw new RangeError(`the embedded key mints only for ${EGRESS_AUDIENCE} and ${CORE_AUDIENCE}`);
  if (!isValidPluginName(plugin)) throw new RangeError(`invalid plugin name ${JSON.stringify(plugin)}`);
  const ttl = options.ttlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS;
  if (!Number.isInteger(ttl) || ttl <= 0 || ttl > TOKEN_EXPIRATION_SECONDS) {
    throw new RangeError(`token lifetime must be 1..${TOKEN_EXPIRATION_SECONDS} seconds`);
  }
  const { privateJwk } = await ensureEmbeddedKey(dataDir);
  const key = await importJWK(privateJwk, "ES256");
  const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000);
  const subject = serviceAccountUsername(plugin);
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: "ES256", typ: "JWT", ...(privateJwk.kid !== undefined ? { kid: privateJwk.kid } : {}) })
    .setSubject(subject)
    .setAudience(audience)
    .setIssuer(EMBEDDED_ISSUER)
    .setIssuedAt(nowSeconds)
    .setNotBefore(nowSeconds)
    .setExpirationTime(nowSeconds + ttl)
    .sign(key);
  return { token, subject, audience, issuer: EMBEDDED_ISSUER, expiresAt: new Date((nowSeconds + ttl) * 1000) };
}
