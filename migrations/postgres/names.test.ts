import { describe, expect, it } from "vitest";
import { migrations } from "../index.js";
import { MIGRATION_NAMES } from "../names.js";
import { postgresMigrations } from "./index.js";

describe("the PostgreSQL migrations", () => {
  it("are the one list of migration names, in order: a migration added for one store must be written for the other", () => {
    expect(Object.keys(postgresMigrations).sort()).toEqual([...MIGRATION_NAMES]);
  });

  it("are named as SQLite's, one implementation per store under each name", () => {
    expect(Object.keys(postgresMigrations).sort()).toEqual(Object.keys(migrations).sort());
  });

  it.each(Object.entries(postgresMigrations))("%s has an up step", (_name, m) => {
    expect(typeof m.up).toBe("function");
  });
});
