import { describe, expect, it } from "vitest";
import { AppError } from "./errors.js";
import { parseStoreLocation, storeLocationOf } from "./store-location.js";

describe("a --store value", () => {
  it.each([
    ["sqlite:/tmp/log.db", { kind: "sqlite", file: "/tmp/log.db" }],
    ["sqlite:relative/log.db", { kind: "sqlite", file: "relative/log.db" }],
    ["sqlite:///tmp/log.db", { kind: "sqlite", file: "/tmp/log.db" }],
    ["postgres://app@127.0.0.1:5432/openfief", { kind: "postgres", url: "postgres://app@127.0.0.1:5432/openfief", shown: "postgres://app@127.0.0.1:5432/openfief" }],
    ["postgresql://app:s3cret@db.example:5432/openfief?sslmode=require", { kind: "postgres", shown: "postgresql://app@db.example:5432/openfief" }],
    ["postgres:///openfief?host=/run/postgresql", { kind: "postgres", shown: "postgres:///openfief" }],
  ])("reads %s", (text, want) => {
    expect(parseStoreLocation(text)).toMatchObject(want);
  });

  it.each([
    ["", /--store is empty/],
    ["sqlite:", /names no file/],
    ["mysql://root:hunter2@db/x", /has the scheme "mysql:", which is not sqlite: or postgres:\/\//],
    ["/var/lib/openfief.db", /is neither a sqlite: path nor a postgres:\/\/ URL/],
    ["postgres://app:hunter2@db.example:5432/", /names no database \(postgres:\/\/app@db\.example:5432\/\)/],
    ["postgres://app:hunter2@:5432/x", /is not a URL that parses|names no host/],
    [`postgres://app@h/${"x".repeat(3000)}`, /longer than 2048/],
  ])("refuses %j in one line, without its password", (text, message) => {
    let err: unknown;
    try {
      parseStoreLocation(text);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.code).toBe("usage");
    expect(e.message).toMatch(message);
    expect(e.message).not.toContain("hunter2");
    expect(e.message.split("\n")).toHaveLength(1);
  });

  it.each([
    [{}, {}, null],
    [{}, { OPENFIEF_STORE: "" }, null],
    [{}, { OPENFIEF_STORE: "sqlite:/a" }, { kind: "sqlite", file: "/a" }],
    [{ store: "sqlite:/b" }, { OPENFIEF_STORE: "sqlite:/a" }, { kind: "sqlite", file: "/b" }],
  ])("is taken from the flag before the environment (%j, %j)", (o, env, want) => {
    expect(storeLocationOf(o, env)).toEqual(want);
  });

  it("names the environment variable when its value is refused", () => {
    expect(() => storeLocationOf({}, { OPENFIEF_STORE: "oops" })).toThrow(/^\$OPENFIEF_STORE /);
  });
});
