/**
 * The core's token, as the cluster's plugin host checks it (D-59; ADR 0081): what the SDK's
 * `JwksVerifier` checks for one instance, for every instance the host serves. The cluster's
 * issuer and public keys come from the mounted `openfief-sa-jwks` ConfigMap (re-read on every
 * call, parsed again only when their bytes change, so a rotated key works as soon as the kubelet
 * updates the mount); the subject must be the core's ServiceAccount; the token carries exactly
 * one audience, `openfief-plugin:<instance>`, and that names the instance called.
 */
import { open } from "node:fs/promises";
import { join } from "node:path";
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from "jose";
import { INSTANCE_AUDIENCE_PREFIX, isValidPluginName } from "../plugins/index.js";

/** The algorithms Kubernetes signs ServiceAccount tokens with; `none` and HMAC never pass. */
export const CORE_TOKEN_ALGORITHMS: readonly string[] = ["RS256", "ES256", "ES384", "ES512"];
/** The leeway on expiry and not-before, as the SDKs allow. */
export const CORE_TOKEN_LEEWAY_SECONDS = 60;
const MAX_JWKS_BYTES = 1024 * 1024;
const MAX_ISSUER_BYTES = 4096;
/** A bearer token longer than this is refused unread. */
export const MAX_CORE_TOKEN_CHARS = 16 * 1024;

/** Why a token was refused: a stable code, never the token. */
export type CoreTokenRefusal = "missing" | "malformed" | "keys_unavailable" | "refused" | "wrong_subject" | "wrong_audience";

/** The outcome of one check. */
export type CoreTokenResult = { readonly ok: true; readonly instance: string } | { readonly ok: false; readonly code: CoreTokenRefusal };

/** Options of {@link CoreTokenVerifier}. */
export interface CoreTokenVerifierOptions {
  /** The directory holding `jwks.json` and `issuer`. */
  readonly jwksDir: string;
  /** The core's ServiceAccount username, the only subject accepted. */
  readonly coreSubject: string;
  readonly now?: () => Date;
}

interface Keys {
  readonly jwks: Buffer;
  readonly issuerBytes: Buffer;
  readonly issuer: string;
  readonly set: ReturnType<typeof createLocalJWKSet>;
}

async function readCapped(path: string, max: number): Promise<Buffer> {
  const handle = await open(path, "r");
  try {
    const buf = Buffer.alloc(max + 1);
    let n = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n > max) throw new Error(`${path} is larger than ${max} bytes`);
    }
    return buf.subarray(0, n);
  } finally {
    await handle.close();
  }
}

/** The instance an audience claim names, when it is exactly one `openfief-plugin:<instance>`. */
export function instanceOfAudience(aud: unknown): string | undefined {
  const one = Array.isArray(aud) ? (aud.length === 1 ? aud[0] : undefined) : aud;
  if (typeof one !== "string" || !one.startsWith(INSTANCE_AUDIENCE_PREFIX)) return undefined;
  const instance = one.slice(INSTANCE_AUDIENCE_PREFIX.length);
  return isValidPluginName(instance) ? instance : undefined;
}

/** Checks the core's tokens for every instance; see the module comment. */
export class CoreTokenVerifier {
  readonly #o: CoreTokenVerifierOptions;
  #keys: Keys | undefined;

  constructor(options: CoreTokenVerifierOptions) {
    if (options.coreSubject === "") throw new Error("the core's subject is empty");
    this.#o = options;
  }

  async #load(): Promise<Keys> {
    const [jwks, issuerBytes] = await Promise.all([readCapped(join(this.#o.jwksDir, "jwks.json"), MAX_JWKS_BYTES), readCapped(join(this.#o.jwksDir, "issuer"), MAX_ISSUER_BYTES)]);
    const cached = this.#keys;
    if (cached !== undefined && cached.jwks.equals(jwks) && cached.issuerBytes.equals(issuerBytes)) return cached;
    const issuer = issuerBytes.toString("utf8").trim();
    if (issuer === "") throw new Error("the issuer is empty");
    const set = createLocalJWKSet(JSON.parse(jwks.toString("utf8")) as JSONWebKeySet);
    this.#keys = { jwks, issuerBytes, issuer, set };
    return this.#keys;
  }

  /** The instance the core's token names, or why it is refused. Never throws. */
  async verify(token: string | undefined): Promise<CoreTokenResult> {
    if (token === undefined || token === "") return { ok: false, code: "missing" };
    if (token.length > MAX_CORE_TOKEN_CHARS || token.split(".").length !== 3) return { ok: false, code: "malformed" };
    let keys: Keys;
    try {
      keys = await this.#load();
    } catch {
      return { ok: false, code: "keys_unavailable" };
    }
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, keys.set, {
        algorithms: [...CORE_TOKEN_ALGORITHMS],
        issuer: keys.issuer,
        requiredClaims: ["exp", "sub", "aud"],
        clockTolerance: CORE_TOKEN_LEEWAY_SECONDS,
        currentDate: (this.#o.now ?? (() => new Date()))(),
      }));
    } catch {
      return { ok: false, code: "refused" };
    }
    if (payload["sub"] !== this.#o.coreSubject) return { ok: false, code: "wrong_subject" };
    const instance = instanceOfAudience(payload["aud"]);
    return instance === undefined ? { ok: false, code: "wrong_audience" } : { ok: true, instance };
  }
}
