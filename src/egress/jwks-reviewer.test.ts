import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPair, importJWK, SignJWT, UnsecuredJWT } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { EMBEDDED_ISSUER, ensureEmbeddedKey, mintEgressToken, readEmbeddedJwks } from "./embedded-key.js";
import { JwksTokenReviewer } from "./jwks-reviewer.js";

const dir = mkdtempSync(join(tmpdir(), "egress-key-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const NOW = 1_800_000_000_000;
const clock = { now: () => NOW };
const reviewer = (): JwksTokenReviewer => new JwksTokenReviewer({ jwks: () => readEmbeddedJwks(dir), issuer: EMBEDDED_ISSUER, clock });

describe("the embedded key and the JWKS reviewer", () => {
  it("creates the key on first use, private file 0600, and reuses it", async () => {
    const first = await ensureEmbeddedKey(dir);
    const again = await ensureEmbeddedKey(dir);
    expect(again.privateJwk.kid).toBe(first.privateJwk.kid);
    expect(statSync(join(dir, "egress-signing-key.json")).mode & 0o777).toBe(0o600);
    expect(JSON.stringify(readEmbeddedJwks(dir))).not.toContain('"d"');
  });

  it("accepts a minted token as the plugin's ServiceAccount", async () => {
    const { token, subject, expiresAt } = await mintEgressToken(dir, "alpha", { now: NOW });
    expect(subject).toBe("system:serviceaccount:openfief:plugin-alpha");
    expect(expiresAt.getTime()).toBe(NOW + 600_000);
    expect(await reviewer().review(token)).toEqual({ ok: true, username: subject });
  });

  it("refuses an expired token", async () => {
    const { token } = await mintEgressToken(dir, "alpha", { now: NOW - 3_600_000, ttlSeconds: 60 });
    expect(await reviewer().review(token)).toEqual({ ok: false, code: "token_refused" });
  });

  it("refuses a token for another audience, such as the core's", async () => {
    const { privateJwk } = await ensureEmbeddedKey(dir);
    const key = await importJWK(privateJwk, "ES256");
    const core = await new SignJWT({}).setProtectedHeader({ alg: "ES256", kid: privateJwk.kid ?? "" }).setSubject("system:serviceaccount:openfief:plugin-alpha")
      .setAudience("openfief-core").setIssuer(EMBEDDED_ISSUER).setExpirationTime(NOW / 1000 + 600).sign(key);
    expect(await reviewer().review(core)).toEqual({ ok: false, code: "wrong_audience" });
  });

  it("refuses a token signed by another key, an unsigned token and an HMAC token", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const other = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).setSubject("system:serviceaccount:openfief:plugin-alpha")
      .setAudience("openfief-egress").setIssuer(EMBEDDED_ISSUER).setExpirationTime(NOW / 1000 + 600).sign(privateKey);
    const none = new UnsecuredJWT({}).setSubject("system:serviceaccount:openfief:plugin-alpha").setAudience("openfief-egress").setIssuer(EMBEDDED_ISSUER).setExpirationTime(NOW / 1000 + 600).encode();
    const hmac = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("x").setAudience("openfief-egress").setIssuer(EMBEDDED_ISSUER).setExpirationTime(NOW / 1000 + 600).sign(new TextEncoder().encode("a".repeat(32)));
    for (const t of [other, none, hmac, "not-a-jwt"]) expect(await reviewer().review(t)).toEqual({ ok: false, code: "token_refused" });
  });

  it("refuses a token from another issuer and one without exp", async () => {
    const { privateJwk } = await ensureEmbeddedKey(dir);
    const key = await importJWK(privateJwk, "ES256");
    const wrongIss = await new SignJWT({}).setProtectedHeader({ alg: "ES256", kid: privateJwk.kid ?? "" }).setSubject("s").setAudience("openfief-egress").setIssuer("elsewhere").setExpirationTime(NOW / 1000 + 600).sign(key);
    const noExp = await new SignJWT({}).setProtectedHeader({ alg: "ES256", kid: privateJwk.kid ?? "" }).setSubject("s").setAudience("openfief-egress").setIssuer(EMBEDDED_ISSUER).sign(key);
    expect(await reviewer().review(wrongIss)).toEqual({ ok: false, code: "token_refused" });
    expect(await reviewer().review(noExp)).toEqual({ ok: false, code: "token_refused" });
  });

  it("refuses to mint for an invalid plugin name or beyond an hour", async () => {
    await expect(mintEgressToken(dir, "Not_A_Name")).rejects.toThrow(/invalid plugin name/);
    await expect(mintEgressToken(dir, "alpha", { ttlSeconds: 3601 })).rejects.toThrow(/lifetime/);
    await expect(mintEgressToken(dir, "alpha", { ttlSeconds: 0 })).rejects.toThrow(/lifetime/);
  });

  it("answers a refusal when the key set cannot be read", async () => {
    const r = new JwksTokenReviewer({ jwks: () => { throw new Error("gone"); }, issuer: EMBEDDED_ISSUER });
    expect(await r.review("x.y.z")).toEqual({ ok: false, code: "review_failed" });
  });
});
