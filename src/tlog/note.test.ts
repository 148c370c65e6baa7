import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { TlogErrorCode } from "./errors.js";
import { fail } from "./errors.js";
import { isValidKeyName, KeyType, keyIdOf, openNote, signNote } from "./note.js";
import type { NoteSigner, NoteVerifier } from "./note.js";
import { formatSignerKey, formatVerifierKey, noteSignerFromSeed, parseSignerKey, parseVerifierKey } from "./keys.js";
import { value } from "./test-support.js";

// Keys and notes of golang.org/x/mod sumdb/note note.go and note_test.go (github.com/golang/mod,
// commit fe2ec04f7c3c3aa6fad97631aafcff6e49e2d1db).
const PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG = "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
const ENOCH_SIG = "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";
const PETER = { name: "PeterNeumann", keyId: 0xc74f20a3, base64: "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=" };
const ENOCH = { name: "EnochRoot", keyId: 0xaf0cfe78, base64: "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=" };

const peter = () => value(parseVerifierKey(PETER_VKEY));
const enoch = () => value(parseVerifierKey(ENOCH_VKEY));
const codeOf = (r: { ok: boolean; error?: { code: string } }) => (r.ok ? "ok" : r.error?.code);

describe("signing a note", () => {
  it("reproduces the PeterNeumann note byte for byte", () => {
    const signer = value(parseSignerKey(PETER_SKEY));
    expect(value(signNote(TEXT, [signer]))).toBe(`${TEXT}\n${PETER_SIG}`);
    expect(signer.verifierKey).toBe(PETER_VKEY);
  });

  it("replaces an earlier signature by the same key", () => {
    const signer = value(parseSignerKey(PETER_SKEY));
    expect(value(signNote(TEXT, [signer], [{ name: "PeterNeumann", keyId: 0xc74f20a3, base64: "BADSIGN=" }]))).toBe(`${TEXT}\n${PETER_SIG}`);
  });

  it("keeps other keys' signatures first, then adds its own", () => {
    const signer = value(parseSignerKey(PETER_SKEY));
    expect(value(signNote(TEXT, [signer], [ENOCH]))).toBe(`${TEXT}\n${ENOCH_SIG}${PETER_SIG}`);
  });

  it.each([
    ["a text without a final newline", "abc", [], TlogErrorCode.MalformedNote],
    ["a text with a control character", "a\tb\n", [], TlogErrorCode.MalformedNote],
    ["a text with a lone surrogate", "a\ud800\n", [], TlogErrorCode.MalformedNote],
    ["a kept signature with a bad name", TEXT, [{ name: "a+b", keyId: 0, base64: "ABCD" }], TlogErrorCode.MalformedNote],
    ["a kept signature whose base64 does not start with its key ID", TEXT, [{ name: "PeterNeumann", keyId: 0xc74f20a3, base64: "BADHASH=" }], TlogErrorCode.MalformedNote],
    ["no signer and nothing kept", TEXT, [], TlogErrorCode.MalformedNote],
  ])("refuses %s", (_why, text, keep, code) => {
    expect(codeOf(signNote(text, [], keep))).toBe(code);
  });

  it("refuses a signer with a bad name, and passes on a signer's own failure", () => {
    const signer = value(parseSignerKey(PETER_SKEY));
    expect(codeOf(signNote(TEXT, [{ ...signer, name: "bad name" }]))).toBe(TlogErrorCode.InvalidKeyName);
    const failing: NoteSigner = { name: "x", keyId: 1, sign: () => fail(TlogErrorCode.MalformedCheckpoint, "checkpoint", "not a checkpoint") };
    expect(codeOf(signNote(TEXT, [failing]))).toBe(TlogErrorCode.MalformedCheckpoint);
  });
});

describe("opening a note", () => {
  it("verifies the known key and sets the unknown one aside", () => {
    const n = value(openNote(`${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, [peter()]));
    expect(n).toEqual({ text: TEXT, verified: [PETER], unverified: [ENOCH] });
  });

  it("verifies both keys when both are known", () => {
    expect(value(openNote(Buffer.from(`${TEXT}\n${PETER_SIG}${ENOCH_SIG}`), [peter(), enoch()]))).toEqual({ text: TEXT, verified: [PETER, ENOCH], unverified: [] });
  });

  it("refuses a note no known key signed", () => {
    expect(codeOf(openNote(`${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, []))).toBe(TlogErrorCode.NoVerifiedSignature);
  });

  it("refuses a note signed by a key known twice, but not one whose twice-known key did not sign", () => {
    expect(codeOf(openNote(`${TEXT}\n${ENOCH_SIG}`, [enoch(), peter(), enoch()]))).toBe(TlogErrorCode.AmbiguousKey);
    expect(codeOf(openNote(`${TEXT}\n${PETER_SIG}`, [enoch(), peter(), enoch()]))).toBe("ok");
  });

  it("refuses a known key's bad signature", () => {
    const bad = `${TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`;
    expect(openNote(bad, [peter()])).toMatchObject({ ok: false, error: { code: TlogErrorCode.InvalidSignature, path: "note.signatures[0]" } });
  });

  it("keeps one of repeated signatures, and unknown ones once per line", () => {
    const enochABCD = { ...ENOCH, base64: `${ENOCH.base64.slice(0, 48)}ABCD${ENOCH.base64.slice(48)}` };
    const msg = `${TEXT}\n${PETER_SIG}${PETER_SIG}${ENOCH_SIG}${ENOCH_SIG}${ENOCH_SIG.slice(0, 60)}ABCD${ENOCH_SIG.slice(60)}`;
    expect(value(openNote(msg, [peter()]))).toEqual({ text: TEXT, verified: [PETER], unverified: [ENOCH, enochABCD] });
  });

  it("counts the signature lines before parsing them: 101 lines are refused even from a known key", () => {
    expect(codeOf(openNote(`${TEXT}\n${PETER_SIG.repeat(101)}`, [peter()]))).toBe(TlogErrorCode.TooManySignatures);
    expect(codeOf(openNote(`${TEXT}\n${"— x y\n".repeat(101)}`, []))).toBe(TlogErrorCode.TooManySignatures);
    expect(codeOf(openNote(`${TEXT}\n${PETER_SIG.repeat(16)}`, [peter()]))).toBe("ok");
  });

  it("refuses a note over its byte cap before reading it", () => {
    expect(codeOf(openNote(`${TEXT}\n${PETER_SIG}`, [peter()], { maxBytes: 100, maxSignatures: 100 }))).toBe(TlogErrorCode.NoteTooLarge);
  });

  it.each([
    ["the text alone", TEXT],
    ["the text and a blank line", `${TEXT}\n`],
    ["a signature line without its newline", `${TEXT}\n${PETER_SIG.slice(0, -1)}`],
    ["a control character", `\x01${TEXT}\n${PETER_SIG}`],
    ["a byte that is not UTF-8", Buffer.concat([Buffer.from([0xff]), Buffer.from(`${TEXT}\n${PETER_SIG}`)])],
    ["a key name with a space", `${TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`],
    ["a line after the signatures", `${TEXT}\n${PETER_SIG}Unexpected line.\n`],
    ["a signature of fewer than 5 bytes", `${TEXT}\n— PeterNeumann x08gow==\n`],
    ["a signature line without base64", `${TEXT}\n— PeterNeumann \n`],
    ["a lone surrogate in a string", `\ud800${TEXT}\n${PETER_SIG}`],
  ])("refuses a note with %s", (_why, msg) => {
    expect(codeOf(openNote(msg, [peter()]))).toBe(TlogErrorCode.MalformedNote);
  });

  it("verifies the example of the signed-note specification", () => {
    // C2SP signed-note.md, "Verifier keys", "Example" (github.com/C2SP/C2SP, commit 5ba5ee830903e91240fc6f9f3a7a9293d49e69c9).
    const v = value(parseVerifierKey("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"));
    const note = "This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
    expect(value(openNote(note, [v])).text).toBe("This is an example message.\n");
  });

  it("verifies a real checkpoint of the Go checksum database with its published key", () => {
    // github.com/FiloSottile/litetlog cmd/litewitness/testdata/sumdb.txt, commit 3195373f7620fde5e62977689fbaabd0e43e255d.
    const v = value(parseVerifierKey("sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"));
    const note =
      "go.sum database tree\n35225469\nvt5T6GaLCXvyHFl9VUvvItR43XZxfLgftEcTyO3eJCQ=\n\n— sum.golang.org Az3grpukl5AXaVfYkLiDGORx/DN2nlcS5kZHR5uYOBV2KA2HgXpD+gu9HHONebHLAyaKbbTM75QTtPydhKCExixSfwQ=\n";
    expect(value(openNote(note, [v])).verified).toHaveLength(1);
    expect(codeOf(openNote(note.replace("35225469", "35225470"), [v]))).toBe(TlogErrorCode.InvalidSignature);
  });

  it("keeps the text exactly, blank lines inside it included", () => {
    const signer = value(parseSignerKey(PETER_SKEY));
    for (const text of ["\n", "a\n\nb\n", "a\n\n", "ünïcödé — ✓\n"]) {
      expect(value(openNote(value(signNote(text, [signer])), [signer.verifier])).text).toBe(text);
    }
  });
});

describe("key texts", () => {
  it("accepts the PeterNeumann keys and refuses every other substring and every one-character change", () => {
    for (const [key, parse] of [
      [PETER_VKEY, parseVerifierKey],
      [PETER_SKEY, parseSignerKey],
    ] as const) {
      expect(parse(key).ok).toBe(true);
      const b = Buffer.from(key);
      for (let i = 0; i <= b.length; i++) {
        for (let j = i + 1; j <= b.length; j++) if (i !== 0 || j !== b.length) expect(parse(b.subarray(i, j).toString()).ok, b.subarray(i, j).toString()).toBe(false);
      }
      for (let i = 0; i < b.length; i++) {
        const c = Buffer.from(b);
        c[i] = (c[i] as number) + 1;
        expect(parse(c.toString()).ok, c.toString()).toBe(false);
      }
    }
  });

  it.each([
    ["a key of the wrong length, with its key ID adjusted", "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==", TlogErrorCode.MalformedKey],
    ["an unknown type, with its key ID adjusted", "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", TlogErrorCode.UnknownKeyType],
    ["two parts", "bananas.sigstore.dev+12344556", TlogErrorCode.MalformedKey],
    ["invalid base64", "rekor.sigstore.dev+12345678+THIS_IS_NOT_BASE64!", TlogErrorCode.MalformedKey],
    ["type 3", "rekor.sigstore.dev+12345678+AwEB", TlogErrorCode.UnknownKeyType],
    ["a key ID that is not hex", "PeterNeumann+NOT_A_NUMBER+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", TlogErrorCode.MalformedKey],
    ["an uppercase key ID", "PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", TlogErrorCode.MalformedKey],
    ["another key's ID", "PeterNeumann+00000000+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", TlogErrorCode.KeyIdMismatch],
    // An ECDSA key (type 0x02) of transparency-dev/formats note/note_verifier_test.go, commit 0b850f1a7b4a5b70deeacac6535e4b8023809d21.
    ["an ECDSA key, a type this room does not implement", "rekor.sigstore.dev+c0d23d6a+AjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABNhtmPtrWm3U1eQXBogSMdGvXwBcK5AW5i0hrZLOC96l+smGNM7nwZ4QvFK/4sueRoVj//QP22Ni4Qt9DPfkWLc=", TlogErrorCode.UnknownKeyType],
  ])("refuses a verifier key with %s", (_why, vkey, code) => {
    expect(codeOf(parseVerifierKey(vkey))).toBe(code);
  });

  it.each([
    // transparency-dev/formats note/note_cosigv1_test.go, commit 0b850f1a7b4a5b70deeacac6535e4b8023809d21.
    ["a note key whose base64 holds a plus sign", "TEST+7997405c+AQcC+FTVKf0jlTdHDY3rbevmnKxxPjigCXlVtGe6RIr6", KeyType.Ed25519],
    ["a witness's cosignature/v1 key", "remora.n621.de+da77ade7+BOvN63jn/bLvkieywe8R6UYAtVtNbZpXh34x7onlmtw2", KeyType.CosignatureV1],
  ])("accepts %s, its key ID computed with its type byte", (_why, vkey, type) => {
    expect(value(parseVerifierKey(vkey)).type).toBe(type);
  });

  it("derives the published verifier keys from the published signer keys", () => {
    // transparency-dev/formats witness/witness_test.go, commit 0b850f1a7b4a5b70deeacac6535e4b8023809d21.
    for (const [skey, vkey] of [
      ["PRIVATE+KEY+Wit1+55ee4561+AeadRiG7XM4XiieCHzD8lxysXMwcViy5nYsoXURWGrlE", "Wit1+55ee4561+AVhZSmQj9+SoL+p/nN0Hh76xXmF7QcHfytUrI1XfSClk"],
      ["PRIVATE+KEY+Wit2+85ecc407+AfPTvxw5eUcqSgivo2vaiC7JPOMUZ/9baHPSDrWqgdGm", "Wit2+85ecc407+AWVbwFJte9wMQIPSnEnj4KibeO6vSIOEDUTDp3o63c2x"],
      ["PRIVATE+KEY+Wit3+d3ed3be7+AR2Kg8k6ccBr5QXz5SHtnkOS4UGQGEQaWi6Gfr6Mm3X5", "Wit3+d3ed3be7+ASb6Uz1+fxAcXkMvDd7nGa3FjDce7LxIKmbbTCT0MpVn"],
    ]) {
      expect(value(parseSignerKey(skey as string)).verifierKey).toBe(vkey);
    }
  });

  it("writes signer and verifier keys from a seed that read back to the same key", () => {
    const seed = new Uint8Array(32).fill(9);
    const skey = value(formatSignerKey("example.com/log", KeyType.Ed25519, seed));
    const signer = value(parseSignerKey(skey));
    expect(signer.verifierKey).toBe(value(formatVerifierKey("example.com/log", KeyType.Ed25519, signer.publicKey)));
    expect(value(noteSignerFromSeed("example.com/log", seed)).keyId).toBe(signer.keyId);
    expect(signer.keyId).toBe(keyIdOf("example.com/log", KeyType.Ed25519, signer.publicKey));
  });

  it("never repeats a signer key in its errors", () => {
    const secret = PETER_SKEY.replace("c74f20a3", "c74f20a4");
    const r = parseSignerKey(secret);
    expect(r.ok).toBe(false);
    expect(JSON.stringify(r)).not.toContain("AYEKFALVFGyNhPJEMzD1QIDr");
    expect(JSON.stringify(value(parseSignerKey(PETER_SKEY)))).not.toContain("AYEKFALVFGyNhPJEMzD1QIDr");
  });

  it.each([
    ["", false],
    ["a b", false],
    ["a+b", false],
    ["a\u00a0b", false],
    ["a\u2003b", false],
    ["a\u3000b", false],
    ["a\u0085b", false],
    ["a\u0001b", false],
    ["example.com/log42", true],
    ["oid/1.3.6.1.4.1.44363.47.1", true],
    ["ünïcödé", true],
    ["a\ufeffb", true],
  ])("takes %j as a key name: %s", (name, valid) => {
    expect(isValidKeyName(name)).toBe(valid);
  });

  it("treats a verifier that is not the one a line names as unknown", () => {
    const misnamed = PETER_SIG.replace("PeterNeumann", "CarmenSandiego");
    const n = value(openNote(`${TEXT}\n${misnamed}${PETER_SIG}`, [peter()]));
    expect(n.unverified.map((s) => s.name)).toEqual(["CarmenSandiego"]);
    const fixed: NoteVerifier = { ...peter(), verify: () => true };
    expect(codeOf(openNote(`${TEXT}\n${PETER_SIG.replace("x08g", "xxxx")}`, [fixed]))).toBe(TlogErrorCode.NoVerifiedSignature);
  });
});
