import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT, exportJWK, generateKeyPair, importJWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileKeyStore, KeyRing } from "./key-ring.js";
import {
  PLUGIN_AUDIENCE,
  PluginTokenValidator,
  TokenSigner,
  TokenValidator,
  USER_AUDIENCE,
  UserTokenValidator,
  bearerToken,
  signPluginToken,
  signUserToken,
} from "./tokens.js";
import type { PluginTokenClaims } from "./tokens.js";

const T0 = Date.parse("2026-12-01T10:00:00Z");
let now = T0;
const clock = (): number => now;

const CLAIMS: PluginTokenClaims = {
  sub: "alice",
  installation_id: "ledger-view.7",
  cluster_id: "embedded",
  plugin_name: "ghcr.io/openfief/ledger-view",
  plugin_version: `sha256:${"c".repeat(64)}`,
  definition_hash: `sha256:${"d".repeat(64)}`,
  installation_name: "ledger-view",
};

let ring: KeyRing;
let signer: TokenSigner;
let plugin: PluginTokenValidator;
let user: UserTokenValidator;

beforeAll(async () => {
  ring = await KeyRing.open({ clock, overlapSeconds: 3600 });
  signer = new TokenSigner(ring, "openfief", clock);
  plugin = new PluginTokenValidator({ jwks: () => ring.jwks(), clock });
  user = new UserTokenValidator({ jwks: () => ring.jwks(), clock, maxLifetimeSeconds: 12 * 3600 });
});

/** A token signed by the ring's key with any header and claims. */
async function raw(header: Record<string, unknown>, claims: Record<string, unknown>): Promise<string> {
  const { key } = await ring.signingKey();
  return new SignJWT(claims).setProtectedHeader({ alg: "ES256", ...header }).sign(key);
}

function base(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const iat = Math.floor(now / 1000);
  return { iss: "openfief", aud: PLUGIN_AUDIENCE, iat, exp: iat + 900, ...CLAIMS, ...overrides };
}

describe("PluginTokens", () => {
  it("carry exactly FUN-17's claims plus installation_name, for 15 minutes", async () => {
    const { token, expiresAt } = await signPluginToken(signer, CLAIMS);
    const r = await plugin.verify(token);
    expect(r).toEqual({ ok: true, claims: { ...CLAIMS, iss: "openfief", aud: PLUGIN_AUDIENCE, iat: now / 1000, exp: now / 1000 + 900 }, expiresAt });
    expect(expiresAt.getTime() - now).toBe(900_000);
  });

  it.each([
    { name: "no token", make: async () => "", problem: "missing" },
    { name: "a token too large to parse", make: async () => "a".repeat(9000), problem: "too_large" },
    { name: "not a JWT", make: async () => "not.a.jwt", problem: "malformed" },
    { name: "the user audience", make: async () => raw({ kid: ring.signingKid }, base({ aud: USER_AUDIENCE })), problem: "wrong_audience" },
    { name: "both audiences", make: async () => raw({ kid: ring.signingKid }, base({ aud: [PLUGIN_AUDIENCE, USER_AUDIENCE] })), problem: "wrong_audience" },
    { name: "no audience", make: async () => raw({ kid: ring.signingKid }, base({ aud: undefined })), problem: "wrong_audience" },
    { name: "another issuer", make: async () => raw({ kid: ring.signingKid }, base({ iss: "evil" })), problem: "wrong_issuer" },
    { name: "an expired token", make: async () => raw({ kid: ring.signingKid }, base({ iat: now / 1000 - 1000, exp: now / 1000 - 100 })), problem: "expired" },
    { name: "a token issued in the future", make: async () => raw({ kid: ring.signingKid }, base({ iat: now / 1000 + 60, exp: now / 1000 + 900 })), problem: "issued_in_future" },
    { name: "a token living longer than 15 minutes", make: async () => raw({ kid: ring.signingKid }, base({ exp: now / 1000 + 901 })), problem: "lifetime_too_long" },
    { name: "a token not valid yet", make: async () => raw({ kid: ring.signingKid }, base({ nbf: now / 1000 + 60 })), problem: "not_yet_valid" },
    { name: "no expiry", make: async () => raw({ kid: ring.signingKid }, base({ exp: undefined })), problem: "missing_claim" },
    { name: "no key ID", make: async () => raw({}, base()), problem: "no_kid" },
    { name: "an unknown key ID", make: async () => raw({ kid: "not-ours" }, base()), problem: "unknown_kid" },
    { name: "a missing claim", make: async () => raw({ kid: ring.signingKid }, base({ definition_hash: undefined })), problem: "missing_claim" },
    { name: "an extra claim (a scope)", make: async () => raw({ kid: ring.signingKid }, base({ scope: "admin" })), problem: "unexpected_claim" },
    {
      name: "HS256 with the public key as the secret",
      make: async () => new SignJWT(base()).setProtectedHeader({ alg: "HS256", kid: ring.signingKid }).sign(new TextEncoder().encode(JSON.stringify(ring.jwks().keys[0]))),
      problem: "wrong_alg",
    },
    {
      name: "alg none",
      make: async () => `${Buffer.from(JSON.stringify({ alg: "none", kid: ring.signingKid })).toString("base64url")}.${Buffer.from(JSON.stringify(base())).toString("base64url")}.`,
      problem: "wrong_alg",
    },
    {
      name: "ES384",
      make: async () => {
        const { privateKey } = await generateKeyPair("ES384");
        return new SignJWT(base()).setProtectedHeader({ alg: "ES384", kid: ring.signingKid }).sign(privateKey);
      },
      problem: "wrong_alg",
    },
    {
      name: "another key claiming our key ID",
      make: async () => {
        const { privateKey } = await generateKeyPair("ES256", { extractable: true });
        const jwk = await importJWK(await exportJWK(privateKey), "ES256");
        return new SignJWT(base()).setProtectedHeader({ alg: "ES256", kid: ring.signingKid }).sign(jwk);
      },
      problem: "bad_signature",
    },
    {
      name: "a tampered payload",
      make: async () => {
        const t = await raw({ kid: ring.signingKid }, base());
        const [h, , s] = t.split(".");
        return `${h}.${Buffer.from(JSON.stringify(base({ installation_id: "other.1" }))).toString("base64url")}.${s}`;
      },
      problem: "bad_signature",
    },
  ])("refuses $name", async ({ make, problem }) => {
    expect(await plugin.verify(await make())).toEqual({ ok: false, problem });
  });

  it("refuses when the keys cannot be read, failing closed", async () => {
    const v = new PluginTokenValidator({ jwks: () => { throw new Error("down"); }, clock });
    const { token } = await signPluginToken(signer, CLAIMS);
    expect(await v.verify(token)).toEqual({ ok: false, problem: "keys_unavailable" });
  });

  it("accepts a token a little past its expiry only within the configured leeway", async () => {
    const { token } = await signPluginToken(signer, CLAIMS);
    const saved = now;
    now += 905_000;
    const strict = await plugin.verify(token);
    const lenient = await new PluginTokenValidator({ jwks: () => ring.jwks(), clock, clockToleranceSeconds: 10 }).verify(token);
    now = saved;
    expect(strict).toEqual({ ok: false, problem: "expired" });
    expect(lenient.ok).toBe(true);
  });
});

describe("user session tokens", () => {
  it("pass the user validator and fail the plugin validator", async () => {
    const { token } = await signUserToken(signer, "alice", 3600);
    expect(await user.verify(token)).toMatchObject({ ok: true, claims: { sub: "alice" } });
    expect(await plugin.verify(token)).toEqual({ ok: false, problem: "wrong_audience" });
  });

  it("are never PluginTokens' stand-ins, nor the reverse", async () => {
    const { token } = await signPluginToken(signer, CLAIMS);
    expect(await user.verify(token)).toEqual({ ok: false, problem: "wrong_audience" });
  });

  it("refuse a token carrying both audiences, in either validator", async () => {
    const t = await raw({ kid: ring.signingKid }, base({ aud: [USER_AUDIENCE, PLUGIN_AUDIENCE] }));
    expect(await user.verify(t)).toEqual({ ok: false, problem: "wrong_audience" });
    expect(await plugin.verify(t)).toEqual({ ok: false, problem: "wrong_audience" });
  });

  it("accept an audience written as a list of one", async () => {
    const t = await raw({ kid: ring.signingKid }, base({ aud: [USER_AUDIENCE] }));
    expect((await user.verify(t)).ok).toBe(true);
  });

  it("refuse a session longer than the console issues", async () => {
    const { token } = await signUserToken(signer, "alice", 13 * 3600);
    expect(await user.verify(token)).toEqual({ ok: false, problem: "lifetime_too_long" });
  });

  it("refuse a validator without an audience", () => {
    expect(() => new TokenValidator({ audience: "", jwks: () => ring.jwks(), maxLifetimeSeconds: 1 })).toThrow(RangeError);
  });
});

describe("key rotation", () => {
  it("keeps tokens of the previous key valid for the overlap, then refuses them", async () => {
    const r = await KeyRing.open({ clock, overlapSeconds: 1800 });
    const s = new TokenSigner(r, "openfief", clock);
    const v = new PluginTokenValidator({ jwks: () => r.jwks(), clock });
    const saved = now;
    const old = await signPluginToken(s, CLAIMS);
    const oldKid = r.signingKid;
    const newKid = await r.rotate();
    expect(newKid).not.toBe(oldKid);
    expect(r.jwks().keys.map((k) => k.kid).sort()).toEqual([oldKid, newKid].sort());
    const fresh = await signPluginToken(s, CLAIMS);
    expect(JSON.parse(Buffer.from(fresh.token.split(".")[0] as string, "base64url").toString()).kid).toBe(newKid);
    expect((await v.verify(old.token)).ok).toBe(true);
    now += 1801_000;
    const after = r.jwks().keys.map((k) => k.kid);
    const oldAfter = await new PluginTokenValidator({ jwks: () => r.jwks(), clock, maxLifetimeSeconds: 4000 }).verify(old.token);
    now = saved;
    expect(after).toEqual([newKid]);
    expect(oldAfter).toEqual({ ok: false, problem: "unknown_kid" });
  });

  it("rotates only a key older than asked", async () => {
    const r = await KeyRing.open({ clock });
    const kid = r.signingKid;
    expect(await r.rotateIfOlderThan(60)).toBe(false);
    now += 61_000;
    const rotated = await r.rotateIfOlderThan(60);
    now -= 61_000;
    expect(rotated).toBe(true);
    expect(r.signingKid).not.toBe(kid);
  });

  it("publishes public halves only", () => {
    for (const k of ring.jwks().keys) {
      expect(Object.keys(k).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x", "y"]);
    }
  });

  describe("in a file", () => {
    let dir: string;
    beforeAll(() => { dir = mkdtempSync(join(tmpdir(), "openfief-keys-")); });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("survives a restart with its keys, the file readable by its owner only", async () => {
      const file = join(dir, "keys.json");
      const a = await KeyRing.open({ store: new FileKeyStore(file), clock });
      const { token } = await signPluginToken(new TokenSigner(a, "openfief", clock), CLAIMS);
      const b = await KeyRing.open({ store: new FileKeyStore(file), clock });
      expect(b.signingKid).toBe(a.signingKid);
      expect((await new PluginTokenValidator({ jwks: () => b.jwks(), clock }).verify(token)).ok).toBe(true);
      expect(statSync(file).mode & 0o777).toBe(0o600);
    });
  });
});

describe("bearerToken", () => {
  it.each([
    ["Bearer abc.def.ghi", "abc.def.ghi"],
    ["bearer abc", "abc"],
    ["Bearer  abc", undefined],
    ["Basic abc", undefined],
    ["Bearer", undefined],
    ["Bearer a b", undefined],
  ])("reads %j as %j", (h, want) => {
    expect(bearerToken(h)).toBe(want);
  });
});
