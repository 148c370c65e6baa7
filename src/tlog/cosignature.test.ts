import { sign as edSign, createPrivateKey } from "node:crypto";
import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { TlogErrorCode } from "./errors.js";
import { cosignatureMessage, cosignerFromSeed, parseCosignature } from "./cosignature.js";
import { KeyType, openNote, signNote } from "./note.js";
import { noteSignerFromSeed, parseCosignerKey, parseVerifierKey, formatSignerKey } from "./keys.js";
import { toHex, value } from "./test-support.js";

// The example of C2SP tlog-cosignature.md (github.com/C2SP/C2SP, commit 5ba5ee830903e91240fc6f9f3a7a9293d49e69c9).
const CHECKPOINT = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
const SPEC_COSIGNATURE = "jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==";
// The witness key of github.com/FiloSottile/litetlog internal/witness/witness_test.go (commit
// 3195373f7620fde5e62977689fbaabd0e43e255d): its Ed25519 seed, and its public key.
const WITNESS_SEED = Buffer.from("31ffc2116ecbe003acaa800ab70757bd7d53206e3febef6a6d0796d95530b34f", "hex");
const WITNESS_PUBLIC = "64848ad8abed6e85981b3b3875b252b8767ebb4b02f703aca3b1e71bbd6a8e50";

describe("cosignature/v1", () => {
  it("signs the message of the specification's example", () => {
    expect(Buffer.from(cosignatureMessage(CHECKPOINT, 1_679_315_147)).toString()).toBe(
      "cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
    );
  });

  it("reads the time of the specification's example cosignature and of a published one", () => {
    expect(value(parseCosignature({ name: "witness.example.com/w1", keyId: 0x8d66cf3f, base64: SPEC_COSIGNATURE })).timestamp).toBe(1_679_315_147);
    // transparency-dev/formats note/note_cosigv1_test.go TestCoSigV1Timestamp, commit 0b850f1a7b4a5b70deeacac6535e4b8023809d21.
    const published = "ZGhGuQAAAABm/qTPeyKXD+R2rzyQsxPiP8mXum7qq/iF0u4vanlqJyocWODBt97w9uL+8qT7S5gxEHWWOworDcFiEBYJXORmnFBOBA==";
    expect(value(parseCosignature({ name: "w", keyId: 0, base64: published })).timestamp).toBe(1_727_964_367);
  });

  it.each([
    ["a plain Ed25519 note signature", "eQjRQm6eSKzFoiYalgwCPXu2y3ijtg68is9M46JKxuZB+dRfTmeQeDBoXnvxZx2ugnkyV+MUMLXpWs1hPb/W/4xkNQY="],
    ["something that is not base64", "5%/$!\n 2"],
  ])("refuses to read a time from %s", (_why, base64) => {
    expect(parseCosignature({ name: "w", keyId: 0, base64 })).toMatchObject({ ok: false, error: { code: TlogErrorCode.MalformedCosignature } });
  });

  it("makes, byte for byte, the Ed25519 signature of the message with the timestamp before it", () => {
    const witness = value(cosignerFromSeed("example.com/witness", WITNESS_SEED));
    expect(toHex(witness.publicKey)).toBe(WITNESS_PUBLIC);
    const line = value(witness.sign(CHECKPOINT, 1_679_315_147));
    const raw = Buffer.from(line.base64, "base64");
    const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), WITNESS_SEED]);
    const independent = edSign(null, Buffer.from(`cosignature/v1\ntime 1679315147\n${CHECKPOINT}`), createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" }));
    expect(raw.subarray(0, 4).readUInt32BE(0)).toBe(witness.keyId);
    expect(raw.subarray(4, 12).readBigUInt64BE(0)).toBe(1_679_315_147n);
    expect(toHex(raw.subarray(12))).toBe(toHex(independent));
  });

  it("gives the key an ID of its own type: the same key as a note key (0x01) is another key", () => {
    const witness = value(cosignerFromSeed("example.com/witness", WITNESS_SEED));
    const asNoteKey = value(noteSignerFromSeed("example.com/witness", WITNESS_SEED));
    expect(witness.keyId).not.toBe(asNoteKey.keyId);
    expect(witness.verifierKey.split("+")[2]?.startsWith("B")).toBe(true); // base64 of 0x04 ‖ key
    expect(value(parseVerifierKey(witness.verifierKey)).type).toBe(KeyType.CosignatureV1);

    const note = value(signNote(CHECKPOINT, [witness.at(1_700_000_000)]));
    expect(value(openNote(note, [value(parseVerifierKey(witness.verifierKey))])).verified).toHaveLength(1);
    expect(openNote(note, [asNoteKey.verifier])).toMatchObject({ ok: false, error: { code: TlogErrorCode.NoVerifiedSignature } });
  });

  it("covers the extension lines and the time", () => {
    const witness = value(cosignerFromSeed("example.com/witness", WITNESS_SEED));
    const withExt = `${CHECKPOINT}extension\n`;
    const note = value(signNote(withExt, [witness.at(1_700_000_000)]));
    expect(openNote(note.replace("extension", "extensioN"), [witness.verifier])).toMatchObject({ ok: false, error: { code: TlogErrorCode.InvalidSignature } });
    const sig = value(witness.sign(withExt, 1_700_000_000));
    const raw = Buffer.from(sig.base64, "base64");
    raw.writeBigUInt64BE(1_700_000_001n, 4);
    const forged = `${withExt}\n— ${sig.name} ${raw.toString("base64")}\n`;
    expect(openNote(forged, [witness.verifier])).toMatchObject({ ok: false, error: { code: TlogErrorCode.InvalidSignature } });
  });

  it("refuses a time past 2^63 - 1 in a line, a negative time, and a text that is not a checkpoint", () => {
    const witness = value(cosignerFromSeed("example.com/witness", WITNESS_SEED));
    const raw = Buffer.from(value(witness.sign(CHECKPOINT, 1)).base64, "base64");
    raw.writeBigUInt64BE(2n ** 63n, 4);
    expect(witness.verifier.verify(Buffer.from(CHECKPOINT), raw.subarray(4))).toBe(false);
    expect(witness.sign(CHECKPOINT, -1).ok).toBe(false);
    expect(witness.sign("not a checkpoint\n", 1)).toMatchObject({ ok: false, error: { code: TlogErrorCode.MalformedCheckpoint } });
  });

  it("reads a cosigner key of type 0x04 back to the same cosigner, and no other type", () => {
    const skey = value(formatSignerKey("example.com/witness", KeyType.CosignatureV1, WITNESS_SEED));
    expect(value(parseCosignerKey(skey)).verifierKey).toBe(value(cosignerFromSeed("example.com/witness", WITNESS_SEED)).verifierKey);
    const noteKey = value(formatSignerKey("example.com/witness", KeyType.Ed25519, WITNESS_SEED));
    expect(parseCosignerKey(noteKey)).toMatchObject({ ok: false, error: { code: TlogErrorCode.UnknownKeyType } });
  });
});
