import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import { mkdtemp, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A signing key generated for a test, with its public JWK. */
export interface TestKey {
  readonly kid: string;
  readonly alg: "RS256" | "ES256" | "ES384" | "ES512";
  readonly privateKey: CryptoKeyLike;
  readonly publicJwk: JWK;
}
type CryptoKeyLike = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];

export const ISSUER = "https://kubernetes.default.svc.cluster.local";
export const CORE_SUBJECT = "system:serviceaccount:openfief:openfief-core";
export const INSTANCE = "nbp-fx";

/** Generates a key pair for `alg`, identified by `kid`. */
export async function makeKey(alg: TestKey["alg"], kid: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, use: "sig", alg };
  return { kid, alg, privateKey, publicJwk };
}

/** A temporary directory standing in for the mounted openfief-sa-jwks ConfigMap. */
export async function jwksDir(keys: readonly TestKey[], issuer = ISSUER, extra: readonly JWK[] = []): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sdk-jwks-"));
  await writeJwks(dir, keys, extra);
  await writeFile(join(dir, "issuer"), `${issuer}\n`);
  return dir;
}

/** Replaces jwks.json atomically, as the kubelet's symlink swap does. */
export async function writeJwks(dir: string, keys: readonly TestKey[], extra: readonly JWK[] = []): Promise<void> {
  const tmp = join(dir, `.jwks-${process.hrtime.bigint()}`);
  await writeFile(tmp, JSON.stringify({ keys: [...keys.map((k) => k.publicJwk), ...extra] }));
  await rename(tmp, join(dir, "jwks.json"));
}

/** Claims of a core token; each test overrides what it breaks. */
export interface Claims {
  iss?: string;
  sub?: string;
  aud?: string | string[];
  exp?: number | undefined;
  iat?: number;
}

/** Signs a token as the cluster would for the core, with the given overrides. */
export async function mint(key: TestKey, overrides: Claims = {}, header: { kid?: string } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: ISSUER, sub: CORE_SUBJECT, aud: [`openfief-plugin:${INSTANCE}`], iat: now, exp: now + 600, ...overrides };
  const jwt = new SignJWT({ aud: claims.aud })
    .setProtectedHeader({ alg: key.alg, kid: header.kid ?? key.kid })
    .setIssuer(claims.iss)
    .setSubject(claims.sub)
    .setIssuedAt(claims.iat);
  if (claims.exp !== undefined) jwt.setExpirationTime(claims.exp);
  return jwt.sign(key.privateKey);
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** An unsigned `alg: none` token with otherwise valid claims. */
export function unsignedToken(kid: string): string {
  const now = Math.floor(Date.now() / 1000);
  return `${b64({ alg: "none", kid })}.${b64({ iss: ISSUER, sub: CORE_SUBJECT, aud: [`openfief-plugin:${INSTANCE}`], exp: now + 600 })}.`;
}

/** An HS256 token keyed with `secret` (for example a public key's bytes), with valid claims. */
export async function hmacToken(secret: Uint8Array, kid: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ aud: [`openfief-plugin:${INSTANCE}`] })
    .setProtectedHeader({ alg: "HS256", kid })
    .setIssuer(ISSUER)
    .setSubject(CORE_SUBJECT)
    .setExpirationTime(now + 600)
    .sign(secret);
}
