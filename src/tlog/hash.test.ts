import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { decodeBase64 } from "./base64.js";
import { EMPTY_ROOT, formatHash, hashFromBytes, leafHash, nodeHash, parseHash } from "./hash.js";
import { TlogErrorCode } from "./errors.js";
import { hex, toHex, utf8, value } from "./test-support.js";

describe("RFC 6962 hashing", () => {
  // Vectors from github.com/transparency-dev/merkle rfc6962/rfc6962_test.go and
  // testonly/constants.go at commit 417fb0c314750d94e53942e9f92e79b6d35915db.
  it.each([
    ["the empty tree", () => EMPTY_ROOT, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
    ["an empty leaf", () => leafHash(new Uint8Array(0)), "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"],
    ["the leaf L123456", () => leafHash(utf8("L123456")), "395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56"],
    ["the leaf 0x00", () => leafHash(Buffer.from("00", "hex")), "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"],
    [
      "the node over the first two leaves of the RFC 6962 test tree",
      () => nodeHash(hex("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"), hex("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7")),
      "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    ],
  ])("hashes %s as published", (_what, make, want) => {
    expect(toHex(make())).toBe(want);
  });

  it("does not let a leaf pass for a node: the leaf of two hashes differs from their node", () => {
    const a = leafHash(utf8("Hello"));
    const b = leafHash(utf8("World"));
    expect(toHex(leafHash(Buffer.concat([a, b])))).not.toBe(toHex(nodeHash(a, b)));
    expect(toHex(nodeHash(a, b))).not.toBe(toHex(nodeHash(b, a)));
  });

  it("hashes a leaf larger than the node buffer", () => {
    const big = new Uint8Array(100_000).fill(7);
    expect(toHex(leafHash(big))).toBe(toHex(leafHash(Uint8Array.from(big))));
  });
});

describe("hashes as text", () => {
  it("reads and writes canonical base64", () => {
    const h = value(parseHash("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="));
    expect(toHex(h)).toBe(toHex(EMPTY_ROOT));
    expect(formatHash(h)).toBe("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
  });

  it.each([
    ["a 31-byte value", Buffer.alloc(31).toString("base64")],
    ["a 33-byte value", Buffer.alloc(33).toString("base64")],
    ["base64 without padding", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"],
    ["base64 with non-zero padding bits", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFV="],
    ["URL-safe base64", "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU="],
    ["base64 with a space inside", "47DEQpj8HBSa+/TImW+5JCeu QeRkm5NMpJWZG3hSuFU="],
    ["the empty string", ""],
  ])("refuses %s", (_what, text) => {
    const r = parseHash(text, "root");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatchObject({ code: TlogErrorCode.MalformedHash, path: "root" });
  });

  it("takes only 32 bytes as a hash, and copies them", () => {
    expect(hashFromBytes(new Uint8Array(32)).ok).toBe(true);
    expect(hashFromBytes(new Uint8Array(31)).ok).toBe(false);
    const bytes = new Uint8Array(32);
    const h = value(hashFromBytes(bytes));
    bytes[0] = 1;
    expect(h[0]).toBe(0);
  });
});

describe("base64 decoding", () => {
  it.each([
    ["AA==", "canonical", "00"],
    ["AB==", "canonical", null],
    ["AB==", "padding-bits-ignored", "00"],
    ["A===", "padding-bits-ignored", null],
    ["====", "padding-bits-ignored", null],
    ["A=A=", "padding-bits-ignored", null],
    ["AAA", "padding-bits-ignored", null],
    ["AA\nA", "padding-bits-ignored", null],
    ["", "canonical", ""],
  ] as const)("decodes %j in %s mode as %j", (text, mode, want) => {
    const got = decodeBase64(text, mode);
    expect(got === null ? null : toHex(got)).toBe(want);
  });
});
