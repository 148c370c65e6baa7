import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  SHIPPED_TRUSTED_ROOT_PATH,
  SHIPPED_TRUSTED_ROOT_SHA256,
  TrustRootError,
  loadShippedTrustedRoot,
  parseTrustedRoot,
  sha256Hex,
} from "./trusted-root.js";

const shipped = readFileSync(SHIPPED_TRUSTED_ROOT_PATH, "utf8");

function edited(edit: (root: Record<string, unknown[]> & Record<string, unknown>) => void): string {
  const root = JSON.parse(shipped) as Record<string, unknown[]> & Record<string, unknown>;
  edit(root);
  return JSON.stringify(root);
}

type Json = Record<string, Record<string, Record<string, unknown>>>;

describe("the trusted root", () => {
  it("ships with the pinned SHA-256", () => {
    expect(sha256Hex(readFileSync(SHIPPED_TRUSTED_ROOT_PATH))).toBe(SHIPPED_TRUSTED_ROOT_SHA256);
    expect(loadShippedTrustedRoot().root.tlogs.length).toBeGreaterThan(0);
  });

  it("refuses a shipped file whose bytes differ from the pin", () => {
    const dir = mkdtempSync(join(tmpdir(), "openfief-root-"));
    const path = join(dir, "root.json");
    writeFileSync(path, `${shipped}\n`);
    expect(() => loadShippedTrustedRoot(path)).toThrow(TrustRootError);
    expect(() => loadShippedTrustedRoot(path)).toThrow(/expected 6494e21e/);
  });

  it.each([
    ["a tlog without validFor.start", (r: Record<string, unknown[]>) => delete ((r.tlogs?.[0] as Json).publicKey as Json).validFor?.start, /tlogs\[0\]\.publicKey\.validFor\.start is missing/],
    ["a ctlog without validFor", (r: Record<string, unknown[]>) => delete ((r.ctlogs?.[0] as Json).publicKey as Record<string, unknown>).validFor, /ctlogs\[0\]\.publicKey\.validFor\.start is missing/],
    ["a CA without validFor.start", (r: Record<string, unknown[]>) => delete (r.certificateAuthorities?.[0] as Json).validFor?.start, /certificateAuthorities\[0\]\.validFor\.start is missing/],
    ["a timestamp authority without validFor", (r: Record<string, unknown[]>) => delete (r.timestampAuthorities?.[0] as Record<string, unknown>).validFor, /timestampAuthorities\[0\]\.validFor\.start is missing/],
    ["an unknown media type", (r: Record<string, unknown>) => (r.mediaType = "application/json"), /mediaType/],
    ["a tlog without a key", (r: Record<string, unknown[]>) => delete (r.tlogs?.[0] as Record<string, unknown>).publicKey, /tlogs\[0\]\.publicKey\.rawBytes is missing/],
  ])("refuses %s", (_what, edit, message) => {
    const text = edited(edit as (r: Record<string, unknown[]> & Record<string, unknown>) => void);
    expect(() => parseTrustedRoot(text)).toThrow(message);
  });

  it.each([["not JSON", "{"], ["an array", "[]"], ["an empty object", "{}"]])("refuses %s", (_what, text) => {
    expect(() => parseTrustedRoot(text)).toThrow(TrustRootError);
  });

  it("gives every refusal the code trust_root_invalid", () => {
    try {
      parseTrustedRoot("{");
      expect.unreachable();
    } catch (err) {
      expect((err as TrustRootError).code).toBe("trust_root_invalid");
    }
  });
});
