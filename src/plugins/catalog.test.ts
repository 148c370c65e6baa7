import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { catalogEntriesJSON, emptyCatalog, parseCatalog, parseOwnerSigners } from "./catalog.js";
import type { Catalog } from "./catalog.js";
import { CAPS } from "./caps.js";
import { ErrorCode } from "./errors.js";

const GH = "https://token.actions.githubusercontent.com";
const DIGEST_A = `sha256:${"a".repeat(64)}`;
const DIGEST_B = `sha256:${"b".repeat(64)}`;
const KEY = readFileSync("test/fixtures/sigstore/cases/local-key-dsse-digest/key.pub", "utf8");
const OTHER_KEY = readFileSync("test/fixtures/sigstore/cases/managed-key-happy-path/key.pub", "utf8");

type Json = Record<string, unknown>;
const publisher = (over: Json = {}): Json => ({
  name: "Acme",
  issuer: GH,
  subject: "https://github.com/acme/nbp-fx/.github/workflows/release.yml@refs/heads/main",
  ...over,
});
const entry = (over: Json = {}): Json => ({
  name: "nbp-fx",
  image: `ghcr.io/acme/nbp-fx@${DIGEST_A}`,
  publisher: publisher(),
  ...over,
});
const catalog = (...plugins: Json[]): string => JSON.stringify({ plugins });

describe("parseCatalog accepts a valid catalog", () => {
  it("accepts the catalog shipped in catalog/plugins.json", () => {
    const text = readFileSync(new URL("../../catalog/plugins.json", import.meta.url), "utf8");
    const r = parseCatalog(text);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.entries.map((e) => e.name).sort()).toEqual(["ecb-fx", "ibkr-flex", "ledger-view", "nbp-fx"]);
    for (const e of r.value.entries) expect(e.publisher).toMatchObject({ name: "openfief-release", identity: { publicKey: expect.stringContaining("PUBLIC KEY") } });
  });

  it("reads every entry with its pinned digest and exact publisher", () => {
    const r = parseCatalog(catalog(entry(), entry({ name: "ibkr-flex", image: `registry.example.com:5000/x/ibkr@${DIGEST_B}` })));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.entries.map((e) => [e.name, e.image.digest, e.publisher.kind, e.publisher.name])).toEqual([
      ["nbp-fx", DIGEST_A, "publisher", "Acme"],
      ["ibkr-flex", DIGEST_B, "publisher", "Acme"],
    ]);
    expect(r.value.entries[0]?.publisher.identity).toEqual({ issuer: GH, subject: publisher().subject });
    expect(r.value.entriesForDigest(DIGEST_B).map((e) => e.name)).toEqual(["ibkr-flex"]);
  });

  it("reads a publisher whose exact identity is one public key (a release key)", () => {
    const r = parseCatalog(catalog(entry({ publisher: { name: "openfief-release", publicKey: KEY } })));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.entries[0]?.publisher).toEqual({ name: "openfief-release", kind: "publisher", identity: { publicKey: KEY } });
    expect(catalogEntriesJSON(r.value)).toEqual([{ name: "nbp-fx", image: `ghcr.io/acme/nbp-fx@${DIGEST_A}`, publisher: { name: "openfief-release", publicKey: KEY } }]);
    expect(parseCatalog(JSON.stringify({ plugins: catalogEntriesJSON(r.value) }))).toEqual(r);
  });

  it("offers an empty catalog", () => {
    expect(emptyCatalog().entries).toEqual([]);
  });
});

describe("parseCatalog refuses the whole file for any problem, naming each", () => {
  it.each<{ name: string; text: string; errors: Array<[string, string]> }>([
    { name: "invalid JSON", text: '{"plugins": [', errors: [[ErrorCode.InvalidJSON, ""]] },
    { name: "trailing data", text: `${catalog(entry())}\n{"plugins": []}`, errors: [[ErrorCode.InvalidJSON, ""]] },
    { name: "a repeated key", text: `{"plugins": [], "plugins": [${JSON.stringify(entry())}]}`, errors: [[ErrorCode.Duplicate, "plugins"]] },
    {
      name: "a repeated subject in a publisher",
      text: catalog(entry()).replace('"subject":', '"subject":"https://evil.example/x","subject":'),
      errors: [[ErrorCode.Duplicate, "plugins[0].publisher.subject"]],
    },
    { name: "a root that is a list", text: "[]", errors: [[ErrorCode.InvalidType, ""]] },
    { name: "a missing plugins list", text: "{}", errors: [[ErrorCode.Required, "plugins"]] },
    { name: "an unknown top-level field", text: '{"plugins": [], "version": 1}', errors: [[ErrorCode.UnknownField, "version"]] },
    { name: "an unknown field in an entry", text: catalog(entry({ verified: true })), errors: [[ErrorCode.UnknownField, "plugins[0].verified"]] },
    {
      name: "an unknown field in a publisher",
      text: catalog(entry({ publisher: publisher({ email: "a@b.c" }) })),
      errors: [[ErrorCode.UnknownField, "plugins[0].publisher.email"]],
    },
    {
      name: "one bad plugin name among good entries",
      text: catalog(entry(), entry({ name: "1password", image: `x/y@${DIGEST_B}` })),
      errors: [[ErrorCode.InvalidName, "plugins[1].name"]],
    },
    { name: "an image with a tag", text: catalog(entry({ image: "ghcr.io/acme/nbp-fx:1.4" })), errors: [[ErrorCode.TagNotAllowed, "plugins[0].image"]] },
    {
      name: "a publisher with a subject pattern instead of an exact subject",
      text: catalog(entry({ publisher: { name: "Acme", issuer: GH, subjectPattern: "https://github\\.com/acme/.*" } })),
      errors: [
        [ErrorCode.InvalidCatalog, "plugins[0].publisher.subjectPattern"],
        [ErrorCode.Required, "plugins[0].publisher.subject"],
      ],
    },
    {
      name: "a publisher with a pattern beside its subject",
      text: catalog(entry({ publisher: publisher({ subjectPattern: ".*" }) })),
      errors: [[ErrorCode.InvalidCatalog, "plugins[0].publisher.subjectPattern"]],
    },
    {
      name: "a key publisher with an issuer besides",
      text: catalog(entry({ publisher: { name: "Acme", issuer: GH, publicKey: KEY } })),
      errors: [[ErrorCode.InvalidCatalog, "plugins[0].publisher.issuer"]],
    },
    {
      name: "a publisher with both a subject and a key",
      text: catalog(entry({ publisher: publisher({ publicKey: KEY }) })),
      errors: [
        [ErrorCode.InvalidCatalog, "plugins[0].publisher.issuer"],
        [ErrorCode.InvalidCatalog, "plugins[0].publisher.subject"],
      ],
    },
    {
      name: "a publisher whose key is not a PEM public key",
      text: catalog(entry({ publisher: { name: "Acme", publicKey: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n" } })),
      errors: [[ErrorCode.InvalidIdentity, "plugins[0].publisher.publicKey"]],
    },
    { name: "a wrong digest (too short)", text: catalog(entry({ image: `ghcr.io/acme/nbp-fx@sha256:${"a".repeat(63)}` })), errors: [[ErrorCode.InvalidImageRef, "plugins[0].image"]] },
    { name: "a wrong digest (upper-case hex)", text: catalog(entry({ image: `ghcr.io/acme/nbp-fx@sha256:${"A".repeat(64)}` })), errors: [[ErrorCode.InvalidImageRef, "plugins[0].image"]] },
    { name: "a wrong digest (not sha256)", text: catalog(entry({ image: `ghcr.io/acme/nbp-fx@sha512:${"a".repeat(128)}` })), errors: [[ErrorCode.InvalidImageRef, "plugins[0].image"]] },
    {
      name: "one digest pinned by two entries",
      text: catalog(entry(), entry({ name: "nbp-fx-mirror", image: `mirror.example/acme/nbp-fx@${DIGEST_A}` })),
      errors: [[ErrorCode.Duplicate, "plugins[1].image"]],
    },
    {
      name: "a wrong publisher: an OIDC issuer that is not https",
      text: catalog(entry({ publisher: publisher({ issuer: "token.actions.githubusercontent.com" }) })),
      errors: [[ErrorCode.InvalidIdentity, "plugins[0].publisher.issuer"]],
    },
    { name: "a publisher that is a string", text: catalog(entry({ publisher: "Acme" })), errors: [[ErrorCode.InvalidType, "plugins[0].publisher"]] },
    { name: "trailing data after the catalog", text: `${catalog(entry())} x`, errors: [[ErrorCode.InvalidJSON, ""]] },
    { name: "a second JSON value after the catalog", text: `${catalog(entry())}[]`, errors: [[ErrorCode.InvalidJSON, ""]] },
    {
      name: "a publisher with an http:// issuer",
      text: catalog(entry({ publisher: publisher({ issuer: "http://token.actions.githubusercontent.com" }) })),
      errors: [[ErrorCode.InvalidIdentity, "plugins[0].publisher.issuer"]],
    },
    { name: "a publisher with an empty subject", text: catalog(entry({ publisher: publisher({ subject: "" }) })), errors: [[ErrorCode.InvalidIdentity, "plugins[0].publisher.subject"]] },
    { name: "a publisher without a name", text: catalog(entry({ publisher: publisher({ name: undefined }) })), errors: [[ErrorCode.Required, "plugins[0].publisher.name"]] },
    { name: "a missing publisher", text: catalog(entry({ publisher: undefined })), errors: [[ErrorCode.Required, "plugins[0].publisher"]] },
    {
      name: "a duplicate plugin name",
      text: catalog(entry(), entry({ image: `x/y@${DIGEST_B}` })),
      errors: [[ErrorCode.Duplicate, "plugins[1].name"]],
    },
    { name: "an entry that is not an object", text: '{"plugins": ["nbp-fx"]}', errors: [[ErrorCode.InvalidType, "plugins[0]"]] },
    {
      name: "several bad entries, all listed",
      text: catalog(
        entry(),
        entry({ name: "Bad_Name", image: `x/y@${DIGEST_B}` }),
        entry({ name: "ok-name", image: "x/y", publisher: publisher({ subject: "" }) }),
      ),
      errors: [
        [ErrorCode.InvalidName, "plugins[1].name"],
        [ErrorCode.InvalidImageRef, "plugins[2].image"],
        [ErrorCode.InvalidIdentity, "plugins[2].publisher.subject"],
      ],
    },
  ])("refuses $name", ({ text, errors }) => {
    const r = parseCatalog(text);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => [e.code, e.path])).toEqual(errors);
    for (const e of r.errors) expect(e.message).not.toBe("");
  });
});

describe("parseOwnerSigners accepts the three identity forms", () => {
  it("reads exact, pattern and key signers as owner signers", () => {
    const text = JSON.stringify({
      signers: [
        { name: "me", issuer: GH, subject: "https://github.com/me/p/.github/workflows/b.yml@refs/heads/main" },
        { name: "my-org", issuer: GH, subjectPattern: "https://github\\.com/my-org/[^/]+/\\.github/workflows/release\\.yml@refs/tags/v.+" },
        { name: "laptop", publicKey: KEY },
      ],
    });
    const r = parseOwnerSigners(text);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.map((s) => [s.name, s.kind, Object.keys(s.identity).sort().join(",")])).toEqual([
      ["me", "owner", "issuer,subject"],
      ["my-org", "owner", "issuer,subjectPattern"],
      ["laptop", "owner", "publicKey"],
    ]);
  });

  it("accepts an empty list", () => {
    expect(parseOwnerSigners('{"signers": []}')).toEqual({ ok: true, value: [] });
  });
});

describe("parseOwnerSigners refuses the whole file for any problem, naming each", () => {
  const good = { name: "me", issuer: GH, subject: "https://github.com/me/p" };
  const file = (...signers: Json[]): string => JSON.stringify({ signers });
  it.each<{ name: string; text: string; errors: Array<[string, string]> }>([
    { name: "trailing data", text: `${file(good)} x`, errors: [[ErrorCode.InvalidJSON, ""]] },
    { name: "a repeated key", text: '{"signers": [{"name": "a", "name": "b", "publicKey": "x"}]}', errors: [[ErrorCode.Duplicate, "signers[0].name"]] },
    { name: "an unknown top-level field", text: '{"signers": [], "catalog": []}', errors: [[ErrorCode.UnknownField, "catalog"]] },
    { name: "an unknown field in a signer", text: file({ ...good, kind: "publisher" }), errors: [[ErrorCode.UnknownField, "signers[0].kind"]] },
    {
      name: "both a subject and a pattern",
      text: file({ ...good, subjectPattern: ".*" }),
      errors: [[ErrorCode.InvalidSigner, "signers[0]"]],
    },
    { name: "no identity at all", text: file({ name: "x", issuer: GH }), errors: [[ErrorCode.InvalidSigner, "signers[0]"]] },
    { name: "a key beside a subject", text: file({ ...good, publicKey: KEY }), errors: [[ErrorCode.InvalidSigner, "signers[0]"]] },
    { name: "a key with an issuer", text: file({ name: "k", issuer: GH, publicKey: KEY }), errors: [[ErrorCode.InvalidSigner, "signers[0].issuer"]] },
    { name: "a subject without an issuer", text: file({ name: "x", subject: "s" }), errors: [[ErrorCode.Required, "signers[0].issuer"]] },
    { name: "an http:// issuer", text: file({ ...good, issuer: "http://issuer.example" }), errors: [[ErrorCode.InvalidIdentity, "signers[0].issuer"]] },
    { name: "a pattern that is not RE2", text: file({ name: "x", issuer: GH, subjectPattern: "(?=lookahead)" }), errors: [[ErrorCode.InvalidIdentity, "signers[0].subjectPattern"]] },
    { name: "a PEM holding two keys", text: file({ name: "k", publicKey: KEY + OTHER_KEY }), errors: [[ErrorCode.InvalidIdentity, "signers[0].publicKey"]] },
    { name: "a PEM holding no key", text: file({ name: "k", publicKey: "" }), errors: [[ErrorCode.InvalidIdentity, "signers[0].publicKey"]] },
    { name: "a subject that is not a string", text: file({ ...good, subject: 5 }), errors: [[ErrorCode.InvalidType, "signers[0].subject"]] },
    { name: "an empty name", text: file({ ...good, name: "" }), errors: [[ErrorCode.InvalidName, "signers[0].name"]] },
    { name: "a duplicate name", text: file(good, { name: "me", publicKey: KEY }), errors: [[ErrorCode.Duplicate, "signers[1].name"]] },
    {
      name: "one bad signer among good ones",
      text: file(good, { name: "k", publicKey: KEY }, { name: "bad", issuer: GH, subject: "" }),
      errors: [[ErrorCode.InvalidIdentity, "signers[2].subject"]],
    },
  ])("refuses $name", ({ text, errors }) => {
    const r = parseOwnerSigners(text);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => [e.code, e.path])).toEqual(errors);
  });
});

describe("the catalog and owner signers on hostile files", () => {
  it.each<[string, unknown]>([
    ["a number", 5],
    ["null", null],
    ["an object", { plugins: [] }],
    ["a buffer", new Uint8Array([123, 125])],
  ])("refuses %s instead of throwing", (_what, text) => {
    expect(parseCatalog(text as string)).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.InvalidType, path: "" })] });
    expect(parseOwnerSigners(text as string)).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.InvalidType, path: "" })] });
  });

  it("refuses a catalog over the byte cap before parsing it", () => {
    expect(parseCatalog(" ".repeat(CAPS.catalogBytes + 1))).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "" })] });
  });

  it("refuses a signer list over the byte cap before parsing it", () => {
    expect(parseOwnerSigners(" ".repeat(CAPS.ownerSignersBytes + 1))).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "" })] });
  });

  it("refuses more catalog entries than the cap", () => {
    const plugins = Array.from({ length: CAPS.catalogEntries + 1 }, (_, i) => ({ i }));
    expect(parseCatalog(JSON.stringify({ plugins }))).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "plugins" })] });
  });

  it("refuses more owner signers than the cap", () => {
    const signers = Array.from({ length: CAPS.ownerSigners + 1 }, (_, i) => ({ name: `s${i}`, issuer: GH, subject: `x${i}` }));
    expect(parseOwnerSigners(JSON.stringify({ signers }))).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "signers" })] });
  });

  it("refuses subject patterns over the cap together", () => {
    const signers = Array.from({ length: Math.floor(CAPS.ownerSignerPrograms / 900) + 1 }, (_, i) => ({ name: `s${i}`, issuer: GH, subjectPattern: "[ab]*a[ab]{900}" }));
    expect(parseOwnerSigners(JSON.stringify({ signers }))).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "signers" })] });
    expect(parseOwnerSigners(JSON.stringify({ signers: signers.slice(0, -2) })).ok).toBe(true);
  });

  it.each<[string, Json, string]>([
    ["an issuer over the cap", { name: "s", issuer: `${GH}/${"a".repeat(CAPS.issuer)}`, subject: "x" }, "signers[0].issuer"],
    ["a subject over the cap", { name: "s", issuer: GH, subject: "x".repeat(CAPS.subject + 1) }, "signers[0].subject"],
    ["a subject pattern over the length cap", { name: "s", issuer: GH, subjectPattern: "x".repeat(CAPS.patternLength + 1) }, "signers[0].subjectPattern"],
    ["a subject pattern over the program cap", { name: "s", issuer: GH, subjectPattern: "[a-z]{1000}[0-9]{100}" }, "signers[0].subjectPattern"],
    ["a public key over the cap", { name: "s", publicKey: `${KEY}${" ".repeat(CAPS.publicKeyPem)}` }, "signers[0].publicKey"],
  ])("refuses a signer with %s, at its path", (_what, signer, path) => {
    const r = parseOwnerSigners(JSON.stringify({ signers: [signer] }));
    expect(r.ok ? [] : r.errors).toContainEqual(expect.objectContaining({ code: ErrorCode.TooLarge, path }));
  });
});

describe("where an image stands with the catalog", () => {
  const keyId = { kind: "key" as const, publicKey: KEY };
  const otherKeyId = { kind: "key" as const, publicKey: OTHER_KEY };
  const keyless = { kind: "keyless" as const, issuer: GH, subject: publisher().subject as string };
  const parsed = (text: string): Catalog => {
    const r = parseCatalog(text);
    if (!r.ok) throw new Error("bad test catalog");
    return r.value;
  };
  const cat = parsed(catalog(entry({ publisher: { name: "release", publicKey: KEY } }), entry({ name: "ecb-fx", image: `ghcr.io/acme/ecb-fx@${DIGEST_B}` })));
  const nbp = { name: "nbp-fx", repository: "ghcr.io/acme/nbp-fx", digest: DIGEST_A };

  it.each<[string, typeof nbp, Array<typeof keyId | typeof keyless>, string, string | null]>([
    ["the pinned digest signed by its publisher's key", nbp, [otherKeyId, keyId], "verified", "nbp-fx"],
    ["the pinned digest signed by its keyless publisher, pulled from a mirror", { name: "fx", repository: "mirror.example/ecb", digest: DIGEST_B }, [keyless], "verified", "ecb-fx"],
    ["the pinned digest signed by someone else only", nbp, [otherKeyId, keyless], "other_publisher", "nbp-fx"],
    ["another digest of a plugin the catalog lists by name", { ...nbp, digest: `sha256:${"c".repeat(64)}` }, [keyId], "other_digest", "nbp-fx"],
    ["another digest from a repository the catalog lists", { name: "my-fx", repository: "ghcr.io/acme/ecb-fx", digest: `sha256:${"c".repeat(64)}` }, [keyless], "other_digest", "ecb-fx"],
    ["an image the catalog does not know", { name: "hello", repository: "x/hello", digest: `sha256:${"c".repeat(64)}` }, [keyId], "not_listed", null],
  ])("%s", (_what, image, ids, kind, entryName) => {
    const s = cat.standing(image, ids);
    expect(s.kind).toBe(kind);
    expect(s.kind === "not_listed" ? null : s.entry.name).toBe(entryName);
  });

  it("fails closed on identities it cannot read", () => {
    expect(cat.standing(nbp, [null as unknown as typeof keyId]).kind).toBe("other_publisher");
    expect(emptyCatalog().standing(nbp, [keyId])).toEqual({ kind: "not_listed" });
  });
});
