import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
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

describe("a log's location from a file (a Secret mounted as a file)", () => {
  const dir = mkdtempSync(join(tmpdir(), "store-file-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("reads --store-file, then $OPENFIEF_STORE_FILE, its trailing newline ignored", () => {
    const url = file("url", "postgres://app:hunter2@db.example:5432/openfief\n");
    const want = { kind: "postgres", url: "postgres://app:hunter2@db.example:5432/openfief", shown: "postgres://app@db.example:5432/openfief" };
    expect(storeLocationOf({ storeFile: url }, {})).toEqual(want);
    expect(storeLocationOf({}, { OPENFIEF_STORE_FILE: url })).toEqual(want);
    // The variable holding the URL comes before the one naming a file; the flags before both.
    expect(storeLocationOf({ store: "sqlite:/b" }, { OPENFIEF_STORE_FILE: url })).toEqual({ kind: "sqlite", file: "/b" });
  });

  it.each([
    ["both flags", { store: "sqlite:/a", storeFile: "/x" }, {}, /give --store or --store-file, not both/],
    ["both variables", {}, { OPENFIEF_STORE: "sqlite:/a", OPENFIEF_STORE_FILE: "/x" }, /set \$OPENFIEF_STORE or \$OPENFIEF_STORE_FILE, not both/],
    ["a file that is not there", { storeFile: "/nonexistent/openfief-url" }, {}, /--store-file \/nonexistent\/openfief-url: cannot read/],
    ["a file whose URL names no database", { storeFile: "BAD1" }, {}, /--store-file \S+ names no database \(postgres:\/\/app@db:5432\/\)/],
    ["a file holding another scheme", {}, { OPENFIEF_STORE_FILE: "BAD2" }, /\$OPENFIEF_STORE_FILE \S+ has the scheme "mysql:"/],
  ] as [string, { store?: string; storeFile?: string }, Record<string, string>, RegExp][])("refuses %s in one line, never showing the file's secret", (_what, o, env, message) => {
    const paths: Record<string, string> = { BAD1: file("bad1", "postgres://app:hunter2@db:5432/\n"), BAD2: file("bad2", "mysql://root:hunter2@db/x") };
    const at = (v: string | undefined): string | undefined => (v === undefined ? undefined : (paths[v] ?? v));
    let err: unknown;
    try {
      storeLocationOf({ ...o, ...(o.storeFile === undefined ? {} : { storeFile: at(o.storeFile) }) }, { ...env, ...(env["OPENFIEF_STORE_FILE"] === undefined ? {} : { OPENFIEF_STORE_FILE: at(env["OPENFIEF_STORE_FILE"]) }) });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("usage");
    expect((err as AppError).message).toMatch(message);
    expect((err as AppError).message).not.toContain("hunter2");
    expect((err as AppError).message.split("\n")).toHaveLength(1);
  });
});
