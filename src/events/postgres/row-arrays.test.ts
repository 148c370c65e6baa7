import { describe, expect, it } from "vitest";
import { int4Array, int8Array, textArray, unnestInsertSql } from "./row-arrays.js";

const header = (hasNulls: number, oid: number, n: number): number[] => [0, 0, 0, 1, 0, 0, 0, hasNulls, 0, 0, 0, oid, 0, 0, 0, n, 0, 0, 0, 1];

describe("column arrays in PostgreSQL's binary format", () => {
  it("writes int8 elements big-endian, with -1 as a null's length", () => {
    expect([...int8Array([1, null, 2 ** 53 - 1])]).toEqual([
      ...header(1, 20, 3),
      0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1,
      255, 255, 255, 255,
      0, 0, 0, 8, 0, 0x1f, 255, 255, 255, 255, 255, 255,
    ]);
  });

  it("writes int4 elements, and refuses what is not a 32-bit whole number", () => {
    expect([...int4Array([258])]).toEqual([...header(0, 23, 1), 0, 0, 0, 4, 0, 0, 1, 2]);
    expect(() => int4Array([2 ** 31])).toThrow(/32-bit/);
    expect(() => int4Array([1.5])).toThrow(/whole number/);
    expect(() => int8Array([2 ** 53])).toThrow(/whole number/);
  });

  it("writes texts as their UTF-8 bytes after their length, and refuses a NUL", () => {
    expect([...textArray(["a", "é", ""])]).toEqual([...header(0, 25, 3), 0, 0, 0, 1, 0x61, 0, 0, 0, 2, 0xc3, 0xa9, 0, 0, 0, 0]);
    expect(() => textArray(["ok", "a\0b"])).toThrow(expect.objectContaining({ code: "invalid_event" }));
  });

  it("names every column once, each with its array type", () => {
    expect(unnestInsertSql("events")).toBe("INSERT INTO events (seq, stream, version, type, schema_version, time, actor, caused_by, data, prev_hash, hash) " +
      "SELECT * FROM unnest($1::int8[], $2::text[], $3::int4[], $4::text[], $5::int4[], $6::text[], $7::text[], $8::int8[], $9::text[], $10::text[], $11::text[])");
  });
});
