import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreTokenVerifier, instanceOfAudience } from "./core-token.js";

const ISSUER = "https://kubernetes.default.svc";
const CORE = "system:serviceaccount:openfief:openfief-core";
type Key = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];

let dir: string;
let key: Key;
let other: Key;

async function writeKeys(keys: Array<{ kid: string; k: Key }>): Promise<void> {
  const jwks = await Promise.all(keys.map(async ({ kid, k }) => ({ ...(await exportJWK(k)), d: undefined, kid, alg: "ES256", use: "sig" })));
  await writeFile(join(dir, "jwks.json"), JSON.stringify({ keys: jwks.map(({ d: _d, ...pub }) => pub) }));
}

async function token(claims: Record<string, unknown> = {}, k: Key = key, kid = "a"): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ aud: ["openfief-plugin:ecb-fx"], ...claims }).setProtectedHeader({ alg: "ES256", kid }).setIssuer(String(claims["iss"] ?? ISSUER)).setSubject(String(claims["sub"] ?? CORE)).setIssuedAt(now).setExpirationTime(Number(claims["exp"] ?? now + 600)).sign(k);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "core-token-"));
  key = (await generateKeyPair("ES256", { extractable: true })).privateKey;
  other = (await generateKeyPair("ES256", { extractable: true })).privateKey;
  await writeKeys([{ kid: "a", k: key }]);
  await writeFile(join(dir, "issuer"), `${ISSUER}\n`);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the core's token, as the plugin host checks it", () => {
  const verifier = (): CoreTokenVerifier => new CoreTokenVerifier({ jwksDir: dir, coreSubject: CORE });

  it("names the instance its one audience names", async () => {
    expect(await verifier().verify(await token())).toEqual({ ok: true, instance: "ecb-fx" });
  });

  it.each<[string, () => Promise<string | undefined>, string]>([
    ["no token", () => Promise.resolve(undefined), "missing"],
    ["a token that is not a JWT", () => Promise.resolve("abc"), "malformed"],
    ["a token signed by an unknown key", () => token({}, other), "refused"],
    ["a token of another issuer", () => token({ iss: "https://elsewhere" }), "refused"],
    ["an expired token", () => token({ exp: Math.floor(Date.now() / 1000) - 3600 }), "refused"],
    ["a token of a plugin's ServiceAccount", () => token({ sub: "system:serviceaccount:openfief:plugin-ecb-fx" }), "wrong_subject"],
    ["a token for the egress proxy", () => token({ aud: ["openfief-egress"] }), "wrong_audience"],
    ["a token for two instances", () => token({ aud: ["openfief-plugin:a", "openfief-plugin:b"] }), "wrong_audience"],
  ])("refuses %s", async (_what, make, code) => {
    expect(await verifier().verify(await make())).toEqual({ ok: false, code });
  });

  it("takes a rotated key as soon as the mounted file changes", async () => {
    const v = verifier();
    expect((await v.verify(await token({}, other, "b"))).ok).toBe(false);
    await writeKeys([{ kid: "a", k: key }, { kid: "b", k: other }]);
    expect(await v.verify(await token({}, other, "b"))).toEqual({ ok: true, instance: "ecb-fx" });
  });

  it("fails closed when the keys cannot be read", async () => {
    const v = new CoreTokenVerifier({ jwksDir: join(dir, "missing"), coreSubject: CORE });
    expect(await v.verify(await token())).toEqual({ ok: false, code: "keys_unavailable" });
  });

  it.each<[unknown, string | undefined]>([
    ["openfief-plugin:ecb-fx", "ecb-fx"],
    [["openfief-plugin:ecb-fx"], "ecb-fx"],
    [["openfief-plugin:ecb-fx", "x"], undefined],
    ["openfief-plugin:Not_A_Name", undefined],
    ["openfief-plugin:", undefined],
    ["openfief-core", undefined],
    [42, undefined],
  ])("reads the audience %j as the instance %j", (aud, instance) => {
    expect(instanceOfAudience(aud)).toBe(instance);
  });
});
