/**
 * The committed module is the one recorded next to the source: build/ibkr-flex.wasm hashes to the
 * SHA-256 in build/ibkr-flex.wasm.sha256, and the manifest module it was built from is generated
 * from manifest.json. `npm run verify-build` (in this folder, with AssemblyScript installed)
 * rebuilds from source and compares bytes; this check needs no compiler.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const here = import.meta.dirname;

describe("plugins/ibkr-flex/build", () => {
  it("holds the module whose SHA-256 build/ibkr-flex.wasm.sha256 records", () => {
    const hex = createHash("sha256").update(readFileSync(join(here, "build/ibkr-flex.wasm"))).digest("hex");
    expect(readFileSync(join(here, "build/ibkr-flex.wasm.sha256"), "utf8")).toBe(`${hex}  ibkr-flex.wasm\n`);
  });

  it("was built from a manifest module generated from manifest.json", () => {
    const compact = JSON.stringify(JSON.parse(readFileSync(join(here, "manifest.json"), "utf8")));
    expect(readFileSync(join(here, "assembly/manifest.ts"), "utf8")).toContain(`export const MANIFEST_JSON: string = ${JSON.stringify(compact)};\n`);
  });
});
