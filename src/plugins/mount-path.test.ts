import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CAPS } from "./caps.js";
import { ErrorCode } from "./errors.js";
import { MountTable, checkSecretMount, mountPathsOverlap, validateMountPath } from "./mount-path.js";

const FUZZ_RUNS = Number(process.env["FUZZ_RUNS"] ?? 300);

describe("validateMountPath", () => {
  it("refuses a path longer than the cap before reading it", () => {
    expect(validateMountPath(`/${"a".repeat(CAPS.mountPath)}`, "m")).toEqual([expect.objectContaining({ code: ErrorCode.TooLarge, path: "m" })]);
  });

  it("accepts a path exactly at the cap", () => {
    expect(validateMountPath(`/${"a".repeat(CAPS.mountPath - 1)}`, "m")).toEqual([]);
  });

  it.each([[1, "/a"], ["/a", null], [undefined, undefined]])("says %s and %s do not overlap when either is not a string", (a, b) => {
    expect(mountPathsOverlap(a as string, b as string)).toBe(false);
  });
});

describe("MountTable", () => {
  it.each<[string, string[], (string | undefined)[]]>([
    ["distinct paths", ["/a", "/b", "/c/d"], [undefined, undefined, undefined]],
    ["the same path twice", ["/a/b", "/a/b"], [undefined, "m0"]],
    ["a path under an earlier one", ["/a", "/a/b/c"], [undefined, "m0"]],
    ["a path above an earlier one", ["/a/b/c", "/a"], [undefined, "m0"]],
    ["a shared name prefix, which is no overlap", ["/a", "/ab", "/a-b"], [undefined, undefined, undefined]],
    ["the first of several it overlaps", ["/x/y", "/x/z", "/x"], [undefined, undefined, "m0"]],
    ["an earlier one below, before one above", ["/p/q/r", "/p", "/p/q"], [undefined, "m0", "m0"]],
  ])("finds %s", (_what, paths, want) => {
    const table = new MountTable();
    expect(paths.map((p, i) => table.place(p, `m${i}`)?.at)).toEqual(want);
  });

  it("finds the same first overlap as comparing every pair", () => {
    const segment = fc.constantFrom("a", "b", "ab", "a-b", "c");
    const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => `/${s.join("/")}`);
    fc.assert(
      fc.property(fc.array(path, { maxLength: 12 }), (paths) => {
        const table = new MountTable();
        paths.forEach((p, i) => {
          const naive = paths.slice(0, i).findIndex((q) => mountPathsOverlap(q, p));
          expect(table.place(p, `m${i}`)?.at).toBe(naive < 0 ? undefined : `m${naive}`);
        });
      }),
      { numRuns: FUZZ_RUNS * 3 },
    );
  });

  it("places 40,000 mounts, each overlap found, without comparing pairs", () => {
    const table = new MountTable();
    const found = Array.from({ length: 40_000 }, (_, i) => table.place(`/m/${i}`, `m${i}`)).filter((x) => x !== undefined);
    expect([found.length, table.place("/m", "top")?.at]).toEqual([0, "m0"]);
  });
});

describe("checkSecretMount", () => {
  it("reports an overlap with the earlier mount's path and field", () => {
    const table = new MountTable();
    expect(checkSecretMount(table, "/etc/a", "s[0]")).toEqual([]);
    expect(checkSecretMount(table, "/etc/a/b", "s[1]")).toEqual([
      { code: ErrorCode.MountOverlap, path: "s[1]", message: "mount path /etc/a/b overlaps /etc/a at s[0]" },
    ]);
  });

  it("does not place an invalid path", () => {
    const table = new MountTable();
    expect(checkSecretMount(table, "/var/run/secrets", "s[0]")).toEqual([expect.objectContaining({ code: ErrorCode.ReservedMountPath })]);
    expect(checkSecretMount(table, "/var/run/secrets", "s[1]")).toEqual([expect.objectContaining({ code: ErrorCode.ReservedMountPath })]);
  });
});
