import { describe, expect, it } from "vitest";
import { StoreError } from "../errors.js";
import { clientConfig, DEFAULT_TIMEOUTS, readUrl, redact, storeError } from "./connection.js";

describe("reading the log's URL", () => {
  it.each([
    ["postgres://app:s3cret@db.example:6543/openfief", "postgres://app@db.example:6543/openfief", ["s3cret"]],
    ["postgresql://app:p%40ss%2Fw%3Ard@[::1]:5432/log?sslmode=require", "postgresql://app@[::1]:5432/log", ["p@ss/w:rd", "p%40ss%2Fw%3Ard"]],
    ["postgres://app@127.0.0.1/log?application_name=console", "postgres://app@127.0.0.1/log", []],
    ["postgres://127.0.0.1/log", "postgres://127.0.0.1/log", []],
  ])("reads %s as located at %s, never showing the password", (url, location, secrets) => {
    const parsed = readUrl(url);
    expect(parsed.location).toBe(location);
    expect(parsed.secrets).toEqual(secrets);
    for (const s of secrets) expect(parsed.location).not.toContain(s);
  });

  it("reads the host, port, user, database and TLS mode the URL names", () => {
    expect(readUrl("postgresql://app:pw@[::1]:6000/log?sslmode=verify-full").config).toEqual({
      host: "::1", port: 6000, user: "app", password: "pw", database: "log", ssl: { rejectUnauthorized: true },
    });
  });

  it.each([
    ["a parameter that would override the deadlines", "postgres://a@h/d?options=-c%20statement_timeout%3D0"],
    ["a TLS mode it does not know", "postgres://a@h/d?sslmode=maybe"],
    ["another scheme", "http://a@h/d"],
    ["text that is no URL", "a:b@c"],
  ])("refuses %s", (_what, url) => {
    expect(() => readUrl(url)).toThrow(StoreError);
  });

  it("sets every deadline and session setting on each connection, over what the URL says", () => {
    const c = clientConfig(readUrl("postgres://a:pw@h/d?application_name=mine"), DEFAULT_TIMEOUTS, "openfief");
    expect(c).toMatchObject({
      application_name: "mine", statement_timeout: 30_000, lock_timeout: 5_000, idle_in_transaction_session_timeout: 10_000,
      connectionTimeoutMillis: 10_000, query_timeout: 40_000,
    });
    expect(c.options).toContain("synchronous_commit=on");
    expect(c.options).toContain("standard_conforming_strings=on");
  });
});

describe("the database's refusals", () => {
  const pgError = (code: string, severity = "ERROR") => Object.assign(new Error(`failed with pw=hunter2`), { code, severity });

  it.each([
    ["55P03", "busy"],
    ["57014", "timeout"],
    ["25P03", "timeout"],
    ["42501", "forbidden"],
    ["23505", "conflict"],
    ["23514", "invalid_event"],
    ["40P01", "busy"],
    ["42P01", "migration"],
    ["57P01", "unavailable"],
    ["XX000", "unavailable"],
  ])("reads SQLSTATE %s as %s", (state, code) => {
    const e = storeError(pgError(state), "appending", ["hunter2"]);
    expect(e.code).toBe(code);
    expect(e.message).not.toContain("hunter2");
    expect(e.message).toContain(`SQLSTATE ${state}`);
  });

  it("reads a lost connection as unavailable, or as an unknown outcome while committing", () => {
    expect(storeError(new Error("Connection terminated unexpectedly"), "appending", []).code).toBe("unavailable");
    expect(storeError(new Error("Connection terminated unexpectedly"), "appending", [], true).code).toBe("outcome_unknown");
  });

  it("removes every secret from a message, however often it appears", () => {
    expect(redact("a pw b pw", ["pw"])).toBe("a *** b ***");
    expect(redact("nothing here", [""])).toBe("nothing here");
  });
});
