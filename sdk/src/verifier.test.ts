import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TokenRefusedError } from "./verifier.js";
import { JwksVerifier, newCoreVerifier, publicSigningKeys } from "./verifier.js";

const ISS = "https://issuer.test";
const SUB = "system:serviceaccount:openfief:openfief-core";
const NOW = new Date("2024-06-01T12:00:00Z");
const nowS = Math.floor(NOW.getTime() / 1000);
let dir: string;
let sign: (exp: number | undefined, kid?: string) => Promise<string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "sdk-verifier-"));
  const { privateKey, publicKey } = await generateKeyPair("ES512", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "k" };
  await writeFile(join(dir, "jwks.json"), JSON.stringify({ keys: [jwk] }));
  await writeFile(join(dir, "issuer"), ISS);
  sign = (exp, kid = "k") => {
    const t = new SignJWT({}).setProtectedHeader({ alg: "ES512", kid }).setIssuer(ISS).setSubject(SUB).setAudience("openfief-plugin:x").setIssuedAt(nowS - 3000);
    if (exp !== undefined) t.setExpirationTime(exp);
    return t.sign(privateKey);
  };
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("JwksVerifier", () => {
  const verifier = () => new JwksVerifier({ jwksDir: dir, instance: "x", coreSubject: SUB, now: () => NOW });

  it.each([
    ["valid for another minute", 60, true],
    ["expired 30 s ago (inside the one-minute leeway)", -30, true],
    ["expired 61 s ago (beyond the leeway)", -61, false],
  ])("treats a token %s accordingly", async (_name, offset, accepted) => {
    const result = await verifier().verify(await sign(nowS + offset)).then(() => true, (e: unknown) => (e as TokenRefusedError).reason);
    expect(result).toBe(accepted ? true : "expired");
  });

  it("refuses a token without an expiry", async () => {
    const reason = await verifier().verify(await sign(undefined)).then(() => "accepted", (e: unknown) => (e as TokenRefusedError).reason);
    expect(reason).toBe("claims");
  });

  it("refuses everything, failing closed, while jwks.json is not a key set, and recovers when it is", async () => {
    const good = await (await import("node:fs/promises")).readFile(join(dir, "jwks.json"));
    const v = verifier();
    const token = await sign(nowS + 60);
    await writeFile(join(dir, "jwks.json"), "{not json");
    expect(await v.verify(token).then(() => "accepted", (e: unknown) => (e as TokenRefusedError).reason)).toBe("keys_unavailable");
    await writeFile(join(dir, "jwks.json"), good);
    expect((await v.verify(token)).sub).toBe(SUB);
  });

  it("needs OPENFIEF_INSTANCE and OPENFIEF_CORE_SUBJECT", () => {
    expect(() => newCoreVerifier({ OPENFIEF_CORE_SUBJECT: SUB })).toThrow(/OPENFIEF_INSTANCE/);
    expect(() => newCoreVerifier({ OPENFIEF_INSTANCE: "x" })).toThrow(/OPENFIEF_CORE_SUBJECT/);
  });
});

describe("publicSigningKeys", () => {
  it.each([
    ["an RSA public key", { kty: "RSA", kid: "a", n: "AQAB", e: "AQAB" }, 1],
    ["an EC P-256 public key", { kty: "EC", kid: "a", crv: "P-256", x: "x", y: "y" }, 1],
    ["an RSA private key", { kty: "RSA", kid: "a", n: "AQAB", e: "AQAB", d: "AQAB" }, 0],
    ["an EC private key", { kty: "EC", kid: "a", crv: "P-256", x: "x", y: "y", d: "d" }, 0],
    ["a symmetric key", { kty: "oct", kid: "a", k: "c2VjcmV0" }, 0],
    ["an OKP key", { kty: "OKP", kid: "a", crv: "Ed25519", x: "x" }, 0],
    ["an encryption key", { kty: "RSA", kid: "a", n: "AQAB", e: "AQAB", use: "enc" }, 0],
    ["a key without kid", { kty: "RSA", n: "AQAB", e: "AQAB" }, 0],
    ["a key for HS256", { kty: "RSA", kid: "a", n: "AQAB", e: "AQAB", alg: "HS256" }, 0],
    ["an EC key on secp256k1", { kty: "EC", kid: "a", crv: "secp256k1", x: "x", y: "y" }, 0],
  ])("keeps %s only if it is a public RSA or EC signing key", (_name, key, kept) => {
    expect(publicSigningKeys({ keys: [key] })).toHaveLength(kept);
  });
});
