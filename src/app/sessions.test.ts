/**
 * The console's sessions and sign-in links: each token for exactly one audience, signed by the
 * data folder's private key, short-lived, a link redeemed once.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPair, importJWK, SignJWT } from "jose";
import type { JWK } from "jose";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MAX_SESSION_AGE_SECONDS, SESSION_KEY_FILE, SESSION_TTL_SECONDS, Sessions } from "./sessions.js";

let dir: string;
let now: number;
const clock = () => new Date(now);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "openfief-sessions-"));
  now = Date.parse("2026-12-01T12:00:00Z");
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Signs claims with the data folder's own key, as a forger who stole nothing could not. */
async function signWithFolderKey(claims: Record<string, unknown>, o: { aud: string | string[]; ttl?: number; alg?: string } = { aud: "openfief-user" }): Promise<string> {
  const jwk = JSON.parse(readFileSync(join(dir, SESSION_KEY_FILE), "utf8")) as JWK;
  const { calculateJwkThumbprint } = await import("jose");
  const { d: _d, ...pub } = jwk;
  const iat = Math.floor(now / 1000);
  return new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid: await calculateJwkThumbprint(pub) }).setIssuer("openfief").setAudience(o.aud).setSubject("alice")
    .setIssuedAt(iat).setExpirationTime(iat + (o.ttl ?? 600)).sign(await importJWK(jwk, "ES256"));
}

describe("a session token", () => {
  it("names its user and role", async () => {
    const s = await Sessions.open(dir, clock);
    const m = await s.mintSession("alice", "viewer");
    expect(await s.verifyUserSession(m.token)).toMatchObject({ ok: true, session: { user: "alice", role: "viewer" } });
    expect(m.expiresAt.getTime() - now).toBe(SESSION_TTL_SECONDS * 1000);
  });

  it.each<[string, string | string[], string]>([
    ["passes with its one audience as a list of one", ["openfief-user"], "ok"],
    ["is refused when it carries two audiences, even one of them its own", ["openfief-user", "openfief-plugin"], "wrong_audience"],
    ["is refused for a plugin's audience", "openfief-plugin", "wrong_audience"],
    ["is refused for the sign-in audience", "openfief-sign-in", "wrong_audience"],
  ])("%s", async (_what, aud, expected) => {
    const s = await Sessions.open(dir, clock);
    const token = await signWithFolderKey({ role: "owner", auth_time: Math.floor(now / 1000) }, { aud });
    const r = await s.verifyUserSession(token);
    expect(r.ok ? "ok" : r.problem).toBe(expected);
  });

  it.each<[string, () => Promise<string>, string]>([
    ["refuses no token", async () => "", "missing"],
    ["refuses garbage", async () => "not.a.jwt", "malformed"],
    ["refuses a token over its size before parsing it", async () => "a".repeat(5000), "too_large"],
    ["refuses an unsigned token", async () => `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from('{"sub":"alice"}').toString("base64url")}.`, "wrong_alg"],
    ["refuses a role it does not know", () => signWithFolderKey({ role: "admin", auth_time: 1 }), "bad_claims"],
    ["refuses a token living longer than a day", () => signWithFolderKey({ role: "owner", auth_time: 1 }, { aud: "openfief-user", ttl: 2 * 86_400 }), "too_long_lived"],
  ])("%s", async (_what, token, expected) => {
    const s = await Sessions.open(dir, clock);
    const r = await s.verifyUserSession(await token());
    expect(r.ok ? "ok" : r.problem).toBe(expected);
  });

  it("is refused once expired", async () => {
    const s = await Sessions.open(dir, clock);
    const m = await s.mintSession("alice", "owner");
    now += (SESSION_TTL_SECONDS + 1) * 1000;
    expect(await s.verifyUserSession(m.token)).toEqual({ ok: false, problem: "expired" });
  });

  it("is refused when another key signed it", async () => {
    const s = await Sessions.open(dir, clock);
    const { privateKey } = await generateKeyPair("ES256");
    const forged = await new SignJWT({ role: "owner", auth_time: 1 }).setProtectedHeader({ alg: "ES256", kid: "x" }).setIssuer("openfief").setAudience("openfief-user").setSubject("mallory").setIssuedAt().setExpirationTime("5m").sign(privateKey);
    expect(await s.verifyUserSession(forged)).toEqual({ ok: false, problem: "bad_signature" });
  });

  it("is refreshed once half its life is gone, and not past the longest session", async () => {
    const s = await Sessions.open(dir, clock);
    const check = async (token: string) => {
      const r = await s.verifyUserSession(token);
      if (!r.ok) throw new Error(r.problem);
      return r.session;
    };
    let session = await check((await s.mintSession("alice", "owner")).token);
    expect(await s.refresh(session)).toBeNull();
    now += (SESSION_TTL_SECONDS / 2 + 1) * 1000;
    const fresh = await s.refresh(session);
    expect(fresh?.expiresAt.getTime()).toBe(Math.floor(now / 1000) * 1000 + SESSION_TTL_SECONDS * 1000);
    session = await check(fresh?.token ?? "");
    expect(session.signedInAt.getTime()).toBe(Date.parse("2026-12-01T12:00:00Z"));
    now = session.signedInAt.getTime() + (MAX_SESSION_AGE_SECONDS + 60) * 1000;
    const old = await check((await s.mintSession("alice", "owner", 3600, session.signedInAt)).token);
    now += 3000 * 1000;
    expect(await s.refresh(old)).toBeNull();
  });
});

describe("a sign-in link", () => {
  it("is redeemed once for a session", async () => {
    const s = await Sessions.open(dir, clock);
    const link = await s.mintSignIn("alice", "owner");
    const first = await s.redeemSignIn(link.token);
    expect(first).toMatchObject({ ok: true, session: { user: "alice", role: "owner" } });
    expect(await s.redeemSignIn(link.token)).toEqual({ ok: false, problem: "already_used" });
  });

  it("is not a session, and a session is not a link", async () => {
    const s = await Sessions.open(dir, clock);
    const link = await s.mintSignIn("alice", "owner");
    const session = await s.mintSession("alice", "owner");
    expect(await s.verifyUserSession(link.token)).toEqual({ ok: false, problem: "wrong_audience" });
    expect(await s.redeemSignIn(session.token)).toEqual({ ok: false, problem: "wrong_audience" });
  });

  it("made before the control plane restarted is refused after it", async () => {
    const before = await Sessions.open(dir, clock);
    const link = await before.mintSignIn("alice", "owner");
    now += 2000;
    const after = await Sessions.open(dir, clock);
    expect(await after.redeemSignIn(link.token)).toEqual({ ok: false, problem: "from_before_start" });
  });

  it("expires after ten minutes", async () => {
    const s = await Sessions.open(dir, clock);
    const link = await s.mintSignIn("alice", "owner");
    now += 601_000;
    expect(await s.redeemSignIn(link.token)).toEqual({ ok: false, problem: "expired" });
  });
});

describe("the session key", () => {
  it("is made private to its owner", async () => {
    await Sessions.open(dir, clock);
    expect(statSync(join(dir, SESSION_KEY_FILE)).mode & 0o777).toBe(0o600);
  });

  it.each<[string, number]>([["readable by others", 0o644], ["writable by the group", 0o620]])("is refused when %s", async (_what, mode) => {
    await Sessions.open(dir, clock);
    chmodSync(join(dir, SESSION_KEY_FILE), mode);
    await expect(Sessions.open(dir, clock)).rejects.toMatchObject({ code: "bad_setting" });
  });

  it("is refused when it is not a key, saying how to make a new one", async () => {
    writeFileSync(join(dir, SESSION_KEY_FILE), "{}", { mode: 0o600 });
    await expect(Sessions.open(dir, clock)).rejects.toThrow(/not a usable session key .*remove it/);
  });
});
