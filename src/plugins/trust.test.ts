import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { emptyCatalog, parseCatalog, parseOwnerSigners } from "./catalog.js";
import type { Catalog } from "./catalog.js";
import { CAPS } from "./caps.js";
import { ErrorCode } from "./errors.js";
import { parseImageRef } from "./image-ref.js";
import { OPENFIEF_CI_SUBJECT } from "./signers.js";
import type { Signer, VerifiedIdentity } from "./signers.js";
import { newTrustPolicy } from "./trust.js";
import type { SignedImage } from "./trust.js";
import type { Manifest } from "./types.js";

const GH = "https://token.actions.githubusercontent.com";
const HEX_A = "a".repeat(64);
const HEX_B = "b".repeat(64);
const HEX_C = "c".repeat(64);
const ACME = "https://github.com/acme/nbp-fx/.github/workflows/release.yml@refs/heads/main";
const GLOBEX = "https://github.com/globex/ibkr/.github/workflows/release.yml@refs/heads/main";
const OWNER = "https://github.com/me/fork/.github/workflows/build.yml@refs/heads/main";
const KEY = readFileSync("test/fixtures/sigstore/cases/local-key-dsse-digest/key.pub", "utf8");

const mustCatalog = (text: string): Catalog => {
  const r = parseCatalog(text);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
};
const mustSigners = (text: string): Signer[] => {
  const r = parseOwnerSigners(text);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
};

const CATALOG = mustCatalog(
  JSON.stringify({
    plugins: [
      { name: "nbp-fx", image: `ghcr.io/acme/nbp-fx@sha256:${HEX_A}`, publisher: { name: "Acme", issuer: GH, subject: ACME } },
      { name: "ibkr-flex", image: `ghcr.io/globex/ibkr@sha256:${HEX_B}`, publisher: { name: "Globex", issuer: GH, subject: GLOBEX } },
    ],
  }),
);
const OWNER_SIGNERS = mustSigners(
  JSON.stringify({
    signers: [
      { name: "me", issuer: GH, subject: OWNER },
      { name: "my-org", issuer: GH, subjectPattern: "https://github\\.com/my-org/[^/]+/\\.github/workflows/release\\.yml@refs/heads/main" },
      { name: "laptop", publicKey: KEY },
    ],
  }),
);
const policy = newTrustPolicy(CATALOG, OWNER_SIGNERS);

const mirrorDigest = (ref: string): string => {
  const r = parseImageRef(ref);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value.digest;
};
const keyless = (subject: string, issuer = GH): VerifiedIdentity => ({ kind: "keyless", issuer, subject });
const image = (hex: string, ...identities: VerifiedIdentity[]): SignedImage => ({ digest: `sha256:${hex}`, identities });

describe("TrustPolicy.decide refuses images no trusted signer signed", () => {
  it.each<{ name: string; policy: ReturnType<typeof newTrustPolicy>; image: SignedImage; code: string }>([
    { name: "an image without any signature is unsigned", policy, image: image(HEX_A), code: ErrorCode.Unsigned },
    {
      name: "an image without any signature is unsigned even when the catalog pins its digest",
      policy,
      image: { digest: `sha256:${HEX_A}`, identities: [], manifest: { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [] } },
      code: ErrorCode.Unsigned,
    },
    { name: "a stranger's signature is untrusted", policy, image: image(HEX_C, keyless("https://github.com/mallory/x")), code: ErrorCode.UntrustedSigner },
    {
      name: "a subject that only starts like a publisher's is untrusted",
      policy,
      image: image(HEX_A, keyless(`${ACME}-evil`)),
      code: ErrorCode.UntrustedSigner,
    },
    {
      name: "a publisher's subject from another issuer is untrusted",
      policy,
      image: image(HEX_A, keyless(ACME, "https://accounts.google.com")),
      code: ErrorCode.UntrustedSigner,
    },
    {
      name: "an owner pattern matching only part of the subject is untrusted",
      policy,
      image: image(HEX_C, keyless("https://github.com/my-org/p/.github/workflows/release.yml@refs/heads/main/extra")),
      code: ErrorCode.UntrustedSigner,
    },
    {
      name: "a key nobody trusts is untrusted",
      policy,
      image: image(HEX_C, { kind: "key", publicKey: readFileSync("test/fixtures/sigstore/cases/managed-key-happy-path/key.pub", "utf8") }),
      code: ErrorCode.UntrustedSigner,
    },
    {
      name: "an owner signer's image is untrusted by a policy without owner signers",
      policy: newTrustPolicy(emptyCatalog(), []),
      image: image(HEX_C, keyless(OWNER)),
      code: ErrorCode.UntrustedSigner,
    },
  ])("$name", ({ policy: p, image: img, code }) => {
    const r = p.decide(img);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => e.code)).toEqual([code]);
  });

  it("refuses a digest that is not sha256:<64 lower-case hex>", () => {
    const r = policy.decide({ digest: `sha256:${HEX_A.toUpperCase()}`, identities: [keyless(OPENFIEF_CI_SUBJECT)] });
    expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual([ErrorCode.InvalidImageRef]);
  });
});

describe("TrustPolicy.decide tells verified from only signed", () => {
  it.each<{ name: string; image: SignedImage; status: string; signers: string[]; entry?: string }>([
    { name: "the publisher signing the digest its entry pins is verified", image: image(HEX_A, keyless(ACME)), status: "verified", signers: ["Acme"], entry: "nbp-fx" },
    {
      name: "a mirror of a pinned image is verified, since only the digest counts",
      image: { digest: mirrorDigest(`mirror.example.com:5000/copies/ibkr@sha256:${HEX_B}`), identities: [keyless(GLOBEX)] },
      status: "verified",
      signers: ["Globex"],
      entry: "ibkr-flex",
    },
    { name: "a publisher signing an image the catalog does not pin is unverified", image: image(HEX_C, keyless(ACME)), status: "unverified", signers: ["Acme"] },
    {
      name: "a publisher signing a digest another publisher's entry pins is unverified",
      image: image(HEX_B, keyless(ACME)),
      status: "unverified",
      signers: ["Acme"],
    },
    { name: "OpenFief's CI signing a pinned digest is unverified", image: image(HEX_A, keyless(OPENFIEF_CI_SUBJECT)), status: "unverified", signers: ["openfief-ci"] },
    { name: "OpenFief's CI signing any image is unverified", image: image(HEX_C, keyless(OPENFIEF_CI_SUBJECT)), status: "unverified", signers: ["openfief-ci"] },
    { name: "an owner's exact signer is unverified", image: image(HEX_C, keyless(OWNER)), status: "unverified", signers: ["me"] },
    {
      name: "an owner's pattern signer matching the whole subject is unverified",
      image: image(HEX_C, keyless("https://github.com/my-org/p/.github/workflows/release.yml@refs/heads/main")),
      status: "unverified",
      signers: ["my-org"],
    },
    { name: "an owner's key signer is unverified", image: image(HEX_C, { kind: "key", publicKey: KEY }), status: "unverified", signers: ["laptop"] },
    {
      name: "an untrusted signature beside a trusted one does not block it",
      image: image(HEX_C, keyless("https://github.com/mallory/x"), keyless(OWNER)),
      status: "unverified",
      signers: ["me"],
    },
    {
      name: "several trusted signers are all listed, sorted by name",
      image: image(HEX_A, keyless(OWNER), { kind: "key", publicKey: KEY }, keyless(OPENFIEF_CI_SUBJECT), keyless(ACME)),
      status: "verified",
      signers: ["Acme", "laptop", "me", "openfief-ci"],
      entry: "nbp-fx",
    },
  ])("$name", ({ image: img, status, signers, entry }) => {
    const r = policy.decide(img);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.status).toBe(status);
    expect(r.value.signers.map((s) => s.name)).toEqual(signers);
    expect(r.value.catalogEntry).toBe(entry);
  });

  it("lists one publisher once even when it has several entries", () => {
    const twoEntries = mustCatalog(
      JSON.stringify({
        plugins: [
          { name: "a", image: `x/a@sha256:${HEX_A}`, publisher: { name: "Acme", issuer: GH, subject: ACME } },
          { name: "b", image: `x/b@sha256:${HEX_B}`, publisher: { name: "Acme", issuer: GH, subject: ACME } },
        ],
      }),
    );
    const p = newTrustPolicy(twoEntries, []);
    expect(p.signers.map((s) => s.name)).toEqual(["Acme", "openfief-ci"]);
    const r = p.decide(image(HEX_B, keyless(ACME)));
    expect(r.ok ? [r.value.status, r.value.catalogEntry, r.value.signers.length] : r.errors).toEqual(["verified", "b", 1]);
  });

  it("trusts OpenFief's CI with an empty catalog and no owner signers", () => {
    const r = newTrustPolicy(emptyCatalog(), []).decide(image(HEX_C, keyless(OPENFIEF_CI_SUBJECT)));
    expect(r.ok ? r.value : r.errors).toEqual({ status: "unverified", signers: [expect.objectContaining({ kind: "openfief-ci" })] });
  });
});

describe("TrustPolicy.decide compares the declared manifest with the signed label", () => {
  const signed: Manifest = {
    capabilities: ["connector"],
    egress: [{ host: "api.example.com", port: 443 }],
    secrets: [{ name: "creds", mountPath: "/etc/creds" }],
    dataTiers: ["ledger"],
    configSchema: { type: "object", properties: { n: { type: "number", maximum: 1 } } },
  };
  const withLabel = (manifest?: Manifest): SignedImage =>
    manifest === undefined ? image(HEX_A, keyless(ACME)) : { ...image(HEX_A, keyless(ACME)), manifest };

  it.each<{ name: string; declared: Manifest; label?: Manifest; ok: boolean }>([
    { name: "an equal manifest is admitted", declared: signed, label: signed, ok: true },
    {
      name: "a manifest with schema keys in another order is admitted",
      declared: { ...signed, configSchema: { properties: { n: { maximum: 1, type: "number" } }, type: "object" } },
      label: signed,
      ok: true,
    },
    { name: "one extra egress host is a mismatch", declared: { ...signed, egress: [...signed.egress, { host: "evil.example.com", port: 443 }] }, label: signed, ok: false },
    { name: "a different mount path is a mismatch", declared: { ...signed, secrets: [{ name: "creds", mountPath: "/etc/other" }] }, label: signed, ok: false },
    {
      name: "a schema number 1.5 instead of 1 is a mismatch",
      declared: { ...signed, configSchema: { type: "object", properties: { n: { type: "number", maximum: 1.5 } } } },
      label: signed,
      ok: false,
    },
    { name: "a declared manifest without a signed label is a mismatch", declared: signed, ok: false },
  ])("$name", ({ declared, label, ok }) => {
    const r = policy.decide(withLabel(label), declared);
    expect(r.ok).toBe(ok);
    if (!r.ok) expect(r.errors.map((e) => e.code)).toEqual([ErrorCode.ManifestMismatch]);
  });

  it("does not compare manifests when none is declared", () => {
    const r = policy.decide(withLabel());
    expect(r.ok ? r.value.status : r.errors).toBe("verified");
  });

  it("refuses an unsigned image before it looks at the manifest", () => {
    const r = policy.decide({ digest: `sha256:${HEX_A}`, identities: [], manifest: signed }, signed);
    expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual([ErrorCode.Unsigned]);
  });
});

describe("TrustPolicy.decide on what an adapter got wrong", () => {
  const junk: unknown[] = [null, 5, "keyless", [], { kind: "keyless" }, { kind: "keyless", issuer: GH, subject: 7 }, { kind: "key", publicKey: null }];

  it.each<[string, unknown, string, string]>([
    ["no image at all", null, ErrorCode.InvalidType, "image"],
    ["a string for the image", "sha256:x", ErrorCode.InvalidType, "image"],
    ["identities that are not a list", { digest: `sha256:${HEX_A}`, identities: { 0: keyless(ACME) } }, ErrorCode.InvalidType, "image.identities"],
    ["no identities field", { digest: `sha256:${HEX_A}` }, ErrorCode.InvalidType, "image.identities"],
    ["more identities than the cap", image(HEX_A, ...Array.from({ length: CAPS.verifiedIdentities + 1 }, () => keyless(ACME))), ErrorCode.TooLarge, "image.identities"],
    ["only malformed identities", { digest: `sha256:${HEX_A}`, identities: junk }, ErrorCode.UntrustedSigner, "image"],
    ["a digest that is not a string", { digest: 5, identities: [keyless(ACME)] }, ErrorCode.InvalidImageRef, "image.digest"],
  ])("refuses %s", (_what, img, code, path) => {
    expect(policy.decide(img as SignedImage)).toEqual({ ok: false, errors: [expect.objectContaining({ code, path })] });
  });

  it("ignores malformed identities beside one that verifies", () => {
    const r = policy.decide({ digest: `sha256:${HEX_A}`, identities: [...junk, keyless(ACME)] as VerifiedIdentity[] });
    expect(r.ok ? r.value.status : r.errors).toBe("verified");
  });

  it("fails closed on an identity whose reading throws", () => {
    const hostile = new Proxy({}, { get: () => { throw new Error("boom"); } }) as VerifiedIdentity;
    expect(policy.decide(image(HEX_A, hostile)).ok).toBe(false);
  });

  it.each<[string, unknown, unknown]>([
    ["a declared manifest that is a string", "manifest", undefined],
    ["a declared manifest without lists", { capabilities: "connector" }, undefined],
  ])("refuses %s", (_what, declared, label) => {
    const r = policy.decide({ ...image(HEX_A, keyless(ACME)), manifest: label as Manifest }, declared as Manifest);
    expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual([ErrorCode.InvalidType]);
  });

  it("calls a malformed signed label a mismatch", () => {
    const declared: Manifest = { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [] };
    const r = policy.decide({ ...image(HEX_A, keyless(ACME)), manifest: { capabilities: [null] } as unknown as Manifest }, declared);
    expect(r.ok ? [] : r.errors.map((e) => e.code)).toEqual([ErrorCode.ManifestMismatch]);
  });

  it("trusts no malformed owner signer, and no catalog that is not one", () => {
    const p = newTrustPolicy({ entries: [] } as unknown as Catalog, [null, { name: "x", kind: "owner", identity: { issuer: GH } }, 7] as unknown as Signer[]);
    expect(p.signers.map((s) => s.name)).toEqual(["openfief-ci"]);
    expect(p.decide(image(HEX_A, keyless(ACME))).ok).toBe(false);
  });
});
