import { describe, expect, it } from "vitest";
import { ErrorCode } from "./errors.js";
import { isValidPluginName, validateDataTier, validatePluginName, validateSecretName } from "./names.js";

const codes = (errors: readonly { code: string }[]): string[] => errors.map((e) => e.code);

describe("validatePluginName", () => {
  it.each([
    ["a one-letter name", "a"],
    ["a name with digits and hyphens", "ibkr-flex-2"],
    ["a name of exactly 56 characters", "a".repeat(56)],
    ["a name with an inner double hyphen", "nbp--fx"],
  ])("accepts %s", (_what, name) => {
    expect(validatePluginName(name, "name")).toEqual([]);
    expect(isValidPluginName(name)).toBe(true);
  });

  it.each([
    ["a name of 57 characters", "a".repeat(57)],
    ["a name starting with a digit", "1password"],
    ["a name starting with a hyphen", "-x"],
    ["a name ending with a hyphen", "x-"],
    ["an upper-case name", "Ibkr"],
    ["a name with a dot", "ibkr.flex"],
    ["a name with an underscore", "ibkr_flex"],
    ["an empty name", ""],
    ["a name with a trailing newline", "ibkr\n"],
  ])("refuses %s with invalid_name", (_what, name) => {
    const errors = validatePluginName(name, "name");
    expect(codes(errors)).toContain(ErrorCode.InvalidName);
    expect(errors.every((e) => e.path === "name")).toBe(true);
    expect(isValidPluginName(name)).toBe(false);
  });

  it.each([
    ["a number", 5, ErrorCode.InvalidType],
    ["null", null, ErrorCode.InvalidType],
    ["a missing name", undefined, ErrorCode.Required],
  ])("refuses %s with its own code", (_what, name, code) => {
    expect(codes(validatePluginName(name, "name"))).toEqual([code]);
  });
});

describe("validateSecretName", () => {
  it.each([
    ["a simple name", "ibkr-flex-credentials"],
    ["a dotted name", "a.b-c.d"],
    ["a name starting with a digit", "1secret"],
    ["a name of 253 characters", `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`],
  ])("accepts %s", (_what, name) => {
    expect(validateSecretName(name, "s")).toEqual([]);
  });

  it.each([
    ["a name of 254 characters", "a".repeat(254)],
    ["an upper-case name", "Secret"],
    ["a label ending in a hyphen", "a-.b"],
    ["a label starting with a hyphen", "a.-b"],
    ["an empty label", "a..b"],
    ["a trailing dot", "a."],
    ["an underscore", "a_b"],
    ["an empty name", ""],
    ["a slash", "a/b"],
  ])("refuses %s with invalid_secret_name", (_what, name) => {
    expect(codes(validateSecretName(name, "s"))).toContain(ErrorCode.InvalidSecretName);
  });

  it("refuses a name that is not a string with invalid_type", () => {
    expect(codes(validateSecretName(["x"], "s"))).toEqual([ErrorCode.InvalidType]);
  });
});

describe("validateDataTier", () => {
  it.each([["a letter", "a"], ["mixed case with - and _", "Tier_1-b"], ["32 characters", "x".repeat(32)]])(
    "accepts %s",
    (_what, tier) => {
      expect(validateDataTier(tier, "t")).toEqual([]);
    },
  );

  it.each([["an empty tier", ""], ["33 characters", "x".repeat(33)], ["a dot", "a.b"], ["a space", "a b"], ["non-ASCII", "ä"]])(
    "refuses %s with invalid_data_tier",
    (_what, tier) => {
      expect(codes(validateDataTier(tier, "t"))).toEqual([ErrorCode.InvalidDataTier]);
    },
  );

  it("refuses a tier that is not a string with invalid_type", () => {
    expect(codes(validateDataTier(1, "t"))).toEqual([ErrorCode.InvalidType]);
  });
});
