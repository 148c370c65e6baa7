import { describe, expect, it } from "vitest";
import { oneLineError } from "./program.js";

describe("a usage error from the argument parser", () => {
  it.each([
    ["error: unknown option '--dta'\n(Did you mean --data?)\n", "openfief: unknown option '--dta' (Did you mean --data?)\n"],
    ["error: unknown command 'gett'\n(Did you mean get?)\n", "openfief: unknown command 'gett' (Did you mean get?)\n"],
    ["error: missing required argument 'method'\n", "openfief: missing required argument 'method'\n"],
    ["error: too many arguments for 'why'. Expected 1 argument but got 2.\n", "openfief: too many arguments for 'why'. Expected 1 argument but got 2.\n"],
  ])("%j reads as one line: %j", (commander, want) => {
    expect(oneLineError(commander)).toBe(want);
  });
});
