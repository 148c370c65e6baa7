import { describe, expect, it } from "vitest";
import { migrations } from "./index.js";
import { MIGRATION_NAMES } from "./names.js";

describe("the migration names", () => {
  it("are exactly the migrations index.ts loads, in order (add a new migration to both)", () => {
    expect([...MIGRATION_NAMES]).toEqual(Object.keys(migrations).sort());
  });
});
