import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CAPS } from "./caps.js";
import { ErrorCode } from "./errors.js";
import {
  GITHUB_ACTIONS_ISSUER,
  OPENFIEF_CI_SUBJECT,
  identityMatches,
  identityProblems,
  isHttpsUrl,
  openFiefCI,
  publicKeyDer,
} from "./signers.js";
import type { SignerIdentity, VerifiedIdentity } from "./signers.js";

const CASES = "test/fixtures/sigstore/cases";
const expectOf = (name: string): { issuer: string; subject: string | null; subjectRegexp?: string } =>
  JSON.parse(readFileSync(`${CASES}/${name}/expect.json`, "utf8")) as {
    issuer: string;
    subject: string | null;
    subjectRegexp?: string;
  };

// The SAN in the conformance happy-path certificate (sigstore/README.md, "default identity").
const BEACON =
  "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const GH = GITHUB_ACTIONS_ISSUER;
const keyless = (subject: string, issuer = GH): VerifiedIdentity => ({ kind: "keyless", issuer, subject });

const LOCAL_KEY = readFileSync(`${CASES}/local-key-dsse-digest/key.pub`, "utf8");
const MANAGED_KEY = readFileSync(`${CASES}/managed-key-happy-path/key.pub`, "utf8");
const CORRUPTED_KEY = readFileSync(`${CASES}/managed-key-wrong-key_fail/key.pub`, "utf8");
const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
const GENERATED_PUBLIC = pair.publicKey.export({ type: "spki", format: "pem" }).toString();
const GENERATED_PRIVATE = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const bodyOf = (pem: string): string => pem.split("\n").filter((l) => l !== "" && !l.startsWith("-----")).join("");
const rewrap = (pem: string, width: number, eol = "\n"): string => {
  const body = bodyOf(pem);
  const lines: string[] = [];
  for (let i = 0; i < body.length; i += width) lines.push(body.slice(i, i + width));
  return ["-----BEGIN PUBLIC KEY-----", ...lines, "-----END PUBLIC KEY-----", ""].join(eol);
};
const key = (publicKey: string): VerifiedIdentity => ({ kind: "key", publicKey });

describe("identityMatches compares keyless identities exactly", () => {
  const partial = expectOf("identity-regexp-partial_fail");
  const whole = expectOf("identity-regexp-whole-match");
  const prefix = expectOf("identity-subject-prefix_fail");
  const wrongIssuer = expectOf("identity-wrong-issuer_fail");
  it.each<{ name: string; signer: SignerIdentity; verified: VerifiedIdentity; want: boolean }>([
    { name: "the exact issuer and subject match", signer: { issuer: GH, subject: BEACON }, verified: keyless(BEACON), want: true },
    {
      name: "a pattern matching only a prefix of the subject is refused (identity-regexp-partial_fail)",
      signer: { issuer: partial.issuer, subjectPattern: partial.subjectRegexp ?? "" },
      verified: keyless(BEACON),
      want: false,
    },
    {
      name: "a pattern matching the whole subject is accepted (identity-regexp-whole-match)",
      signer: { issuer: whole.issuer, subjectPattern: whole.subjectRegexp ?? "" },
      verified: keyless(BEACON),
      want: true,
    },
    {
      name: "an exact subject that is only a prefix of the signature's subject is refused (identity-subject-prefix_fail)",
      signer: { issuer: prefix.issuer, subject: prefix.subject ?? "" },
      verified: keyless(BEACON),
      want: false,
    },
    {
      name: "a subject that extends the signer's subject is refused",
      signer: { issuer: GH, subject: BEACON },
      verified: keyless(`${BEACON}x`),
      want: false,
    },
    {
      name: "another issuer is refused (identity-wrong-issuer_fail)",
      signer: { issuer: wrongIssuer.issuer, subject: wrongIssuer.subject ?? "" },
      verified: keyless(BEACON),
      want: false,
    },
    {
      name: "an issuer differing only by a trailing slash is refused",
      signer: { issuer: `${GH}/`, subject: BEACON },
      verified: keyless(BEACON),
      want: false,
    },
    {
      name: "an issuer differing only in case is refused",
      signer: { issuer: "https://Token.actions.githubusercontent.com", subject: BEACON },
      verified: keyless(BEACON),
      want: false,
    },
    {
      name: "a signer with an http:// issuer matches nothing, not even the same http issuer",
      signer: { issuer: "http://token.actions.githubusercontent.com", subject: BEACON },
      verified: keyless(BEACON, "http://token.actions.githubusercontent.com"),
      want: false,
    },
    {
      name: "a signer with an empty subject matches nothing, not even an empty subject",
      signer: { issuer: GH, subject: "" },
      verified: keyless(""),
      want: false,
    },
    {
      name: "a signer with an invalid RE2 pattern matches nothing",
      signer: { issuer: GH, subjectPattern: "(https://.*" },
      verified: keyless(BEACON),
      want: false,
    },
    {
      name: "a signer with a backreference (not RE2) matches nothing",
      signer: { issuer: GH, subjectPattern: "(a)\\1" },
      verified: keyless("aa"),
      want: false,
    },
    {
      name: "a pattern's dot does not match a newline hidden in the subject",
      signer: { issuer: GH, subjectPattern: "https://github\\.com/.*" },
      verified: keyless("https://github.com/x\nevil"),
      want: false,
    },
    {
      name: "an unanchored-looking pattern still has to cover the whole subject",
      signer: { issuer: GH, subjectPattern: "sigstore-conformance" },
      verified: keyless(BEACON),
      want: false,
    },
    {
      name: "a keyless signer never matches a key signature",
      signer: { issuer: GH, subject: BEACON },
      verified: key(LOCAL_KEY),
      want: false,
    },
    {
      name: "a signer with both subject and subjectPattern matches nothing",
      signer: { issuer: GH, subject: BEACON, subjectPattern: ".*" } as unknown as SignerIdentity,
      verified: keyless(BEACON),
      want: false,
    },
  ])("$name", ({ signer, verified, want }) => {
    expect(identityMatches(signer, verified)).toBe(want);
  });

  it("matches a nested-quantifier pattern in linear time against a long non-matching subject", () => {
    const subject = `${"a".repeat(CAPS.subject - 1)}b`;
    expect(identityMatches({ issuer: GH, subjectPattern: "(a+)+$" }, keyless(subject))).toBe(false);
    expect(identityMatches({ issuer: GH, subjectPattern: "(a+)+b" }, keyless(subject))).toBe(true);
  });

  it("matches nothing with a verified subject longer than the cap, even one the pattern would match", () => {
    const subject = "a".repeat(CAPS.subject + 1);
    expect(identityMatches({ issuer: GH, subjectPattern: "a+" }, keyless(subject))).toBe(false);
    expect(identityMatches({ issuer: GH, subject }, keyless(subject))).toBe(false);
  });
});

describe("identityMatches compares key identities by the DER of one PEM block", () => {
  it.each<{ name: string; signer: string; verified: string; want: boolean }>([
    { name: "the same PEM matches", signer: LOCAL_KEY, verified: LOCAL_KEY, want: true },
    { name: "a generated key matches itself", signer: GENERATED_PUBLIC, verified: GENERATED_PUBLIC, want: true },
    { name: "the same key wrapped at 76 columns with CRLF matches", signer: LOCAL_KEY, verified: rewrap(LOCAL_KEY, 76, "\r\n"), want: true },
    { name: "the same key on one line matches", signer: rewrap(LOCAL_KEY, 1000), verified: LOCAL_KEY, want: true },
    { name: "the same key with surrounding blank lines and indentation matches", signer: `\n\n  ${LOCAL_KEY.replace(/\n/g, "\n  ")}\n`, verified: LOCAL_KEY, want: true },
    { name: "a different key is refused", signer: LOCAL_KEY, verified: MANAGED_KEY, want: false },
    { name: "a corrupted PEM matches nothing (managed-key-wrong-key_fail)", signer: CORRUPTED_KEY, verified: CORRUPTED_KEY, want: false },
    { name: "a signer PEM holding two keys matches nothing", signer: LOCAL_KEY + MANAGED_KEY, verified: LOCAL_KEY, want: false },
    { name: "a signer PEM holding the same key twice matches nothing", signer: LOCAL_KEY + LOCAL_KEY, verified: LOCAL_KEY, want: false },
    { name: "an empty signer key matches nothing", signer: "", verified: LOCAL_KEY, want: false },
    { name: "a private key matches nothing", signer: GENERATED_PRIVATE, verified: GENERATED_PRIVATE, want: false },
    {
      name: "a private key relabelled as a public key matches nothing",
      signer: GENERATED_PRIVATE.replace(/PRIVATE KEY/g, "PUBLIC KEY"),
      verified: GENERATED_PRIVATE.replace(/PRIVATE KEY/g, "PUBLIC KEY"),
      want: false,
    },
    { name: "text outside the block matches nothing", signer: `my key:\n${LOCAL_KEY}`, verified: LOCAL_KEY, want: false },
    { name: "a block without its END line matches nothing", signer: LOCAL_KEY.replace("-----END PUBLIC KEY-----", ""), verified: LOCAL_KEY, want: false },
    { name: "base64 with non-zero padding bits matches nothing", signer: LOCAL_KEY.replace("Hww==", "Hwx=="), verified: LOCAL_KEY, want: false },
    { name: "a malformed verified key matches nothing", signer: LOCAL_KEY, verified: LOCAL_KEY.replace("MFkw", "MFk*"), want: false },
  ])("$name", ({ signer, verified, want }) => {
    expect(identityMatches({ publicKey: signer }, key(verified))).toBe(want);
  });

  it("a key signer never matches a keyless signature", () => {
    expect(identityMatches({ publicKey: LOCAL_KEY }, keyless(BEACON))).toBe(false);
  });

  it("decodes the DER of a P-256 SubjectPublicKeyInfo to its 91 bytes", () => {
    const der = publicKeyDer(LOCAL_KEY);
    expect(der?.length).toBe(91);
    expect(der?.[0]).toBe(0x30);
  });
});

describe("identityProblems names what is wrong with an identity", () => {
  it.each<{ name: string; identity: SignerIdentity; paths: string[] }>([
    { name: "a valid exact identity has none", identity: { issuer: GH, subject: BEACON }, paths: [] },
    { name: "a valid pattern identity has none", identity: { issuer: GH, subjectPattern: "https://github\\.com/.+" }, paths: [] },
    { name: "a valid key identity has none", identity: { publicKey: LOCAL_KEY }, paths: [] },
    { name: "an http issuer is named", identity: { issuer: "http://issuer.example", subject: "x" }, paths: ["id.issuer"] },
    { name: "an empty subject is named", identity: { issuer: GH, subject: "" }, paths: ["id.subject"] },
    { name: "an empty pattern is named", identity: { issuer: GH, subjectPattern: "" }, paths: ["id.subjectPattern"] },
    { name: "a pattern that does not compile is named", identity: { issuer: GH, subjectPattern: "[" }, paths: ["id.subjectPattern"] },
    { name: "a bad key is named", identity: { publicKey: "nope" }, paths: ["id.publicKey"] },
    { name: "an identity with no form is refused whole", identity: { issuer: GH } as unknown as SignerIdentity, paths: ["id"] },
  ])("$name", ({ identity, paths }) => {
    const errors = identityProblems(identity, "id");
    expect(errors.map((e) => e.path)).toEqual(paths);
    for (const e of errors) expect(e.code).toBe(ErrorCode.InvalidIdentity);
  });
});

describe("isHttpsUrl accepts only plain https issuers", () => {
  it.each([
    { url: GH, want: true },
    { url: "https://accounts.google.com", want: true },
    { url: "https://issuer.example:8443/realms/x", want: true },
    { url: "http://token.actions.githubusercontent.com", want: false },
    { url: "HTTPS://token.actions.githubusercontent.com", want: false },
    { url: "https://", want: false },
    { url: "https://user:pw@issuer.example", want: false },
    { url: "https://issuer.example/?a=b", want: false },
    { url: "https://issuer.example/?", want: false },
    { url: "https://issuer.example/#x", want: false },
    { url: "https://issuer.example/ x", want: false },
    { url: "https://issuer.example\n", want: false },
    { url: "token.actions.githubusercontent.com", want: false },
  ])("says $want for $url", ({ url, want }) => {
    expect(isHttpsUrl(url)).toBe(want);
  });
});

describe("openFiefCI is OpenFief's images workflow on main", () => {
  it("has the GitHub Actions issuer and the exact images.yml subject", () => {
    const ci = openFiefCI();
    expect(ci.kind).toBe("openfief-ci");
    expect(ci.identity).toEqual({
      issuer: "https://token.actions.githubusercontent.com",
      subject: "https://github.com/arkadiuss/openfief/.github/workflows/images.yml@refs/heads/main",
    });
    expect(OPENFIEF_CI_SUBJECT).toBe("https://github.com/arkadiuss/openfief/.github/workflows/images.yml@refs/heads/main");
  });

  it.each([
    { name: "matches a signature from images.yml on main", subject: OPENFIEF_CI_SUBJECT, want: true },
    { name: "refuses images.yml on another branch", subject: OPENFIEF_CI_SUBJECT.replace("refs/heads/main", "refs/heads/dev"), want: false },
    { name: "refuses another workflow in the repository", subject: OPENFIEF_CI_SUBJECT.replace("images.yml", "release.yml"), want: false },
    { name: "refuses a fork", subject: OPENFIEF_CI_SUBJECT.replace("arkadiuss/", "mallory/"), want: false },
  ])("$name", ({ subject, want }) => {
    expect(identityMatches(openFiefCI().identity, keyless(subject))).toBe(want);
  });
});

describe("identityMatches on malformed values", () => {
  it.each<[string, unknown]>([
    ["null", null],
    ["a number", 5],
    ["a keyless identity without a subject", { kind: "keyless", issuer: GH }],
    ["a key identity whose key is a number", { kind: "key", publicKey: 5 }],
    ["a proxy that throws", new Proxy({}, { get: () => { throw new Error("boom"); } })],
  ])("matches nothing against %s, without throwing", (_what, verified) => {
    expect(identityMatches({ issuer: GH, subjectPattern: ".*" }, verified as VerifiedIdentity)).toBe(false);
    expect(identityMatches({ issuer: GH, subject: BEACON }, verified as VerifiedIdentity)).toBe(false);
  });

  it.each<[string, unknown]>([
    ["null", null],
    ["a string", "signer"],
    ["a pattern that is not a string", { issuer: GH, subjectPattern: 5 }],
    ["a proxy that throws", new Proxy({}, { get: () => { throw new Error("boom"); } })],
  ])("matches nothing for a signer that is %s", (_what, signer) => {
    expect(identityMatches(signer as SignerIdentity, keyless(BEACON))).toBe(false);
  });
});
