import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OwnerSignersError, loadOwnerSignersAtStart, loadOwnerSignersFile } from "./owner-signers-file.js";

const dir = mkdtempSync(join(tmpdir(), "openfief-signers-"));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const GOOD = JSON.stringify({
  signers: [
    { name: "me", issuer: "https://token.actions.githubusercontent.com", subjectPattern: "https://github\\.com/me/.+" },
  ],
});

describe("the owner's trusted signers file", () => {
  it("reads a valid file", () => {
    expect(loadOwnerSignersFile(file("good.json", GOOD))).toEqual([
      { name: "me", kind: "owner", identity: { issuer: "https://token.actions.githubusercontent.com", subjectPattern: "https://github\\.com/me/.+" } },
    ]);
  });

  it("treats a missing optional file as no owner signers, and a missing required one as an error", () => {
    expect(loadOwnerSignersFile(join(dir, "absent.json"), { optional: true })).toEqual([]);
    expect(() => loadOwnerSignersFile(join(dir, "absent.json"))).toThrow(OwnerSignersError);
  });

  it.each([
    ["an http issuer", { signers: [{ name: "a", issuer: "http://x.example", subject: "s" }] }, "signers[0].issuer"],
    ["a pattern that is not RE2", { signers: [{ name: "ok", issuer: "https://x.example", subject: "s" }, { name: "b", issuer: "https://x.example", subjectPattern: "(?=x)" }] }, "signers[1].subjectPattern"],
    ["an unknown field", { signers: [{ name: "c", publicKey: "x", extra: 1 }] }, "signers[0].extra"],
  ])("stops the process at start for %s, naming the bad entry", (_what, content, path) => {
    const p = file("bad.json", JSON.stringify(content));
    let written = "";
    let code: number | undefined;
    expect(() =>
      loadOwnerSignersAtStart(p, {
        write: (line) => (written += line),
        exit: (c) => {
          code = c;
          throw new Error("exited");
        },
      }),
    ).toThrow("exited");
    expect(code).toBe(1);
    expect(written).toContain(path);
    expect(written).toContain(p);
  });
});
