import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generate, OUTPUT } from "../../scripts/gen-meta-schemas.js";
import { checkMetaSchema, newAjv } from "./config-schema.js";
import type { Dialect } from "./config-schema.js";
import type { JsonValue } from "./types.js";

/** What ajv itself answers, compiling the meta-schema at run time as config-schema.ts once did. */
function atRunTime(schema: JsonValue, dialect: Dialect): { ok: true } | { ok: false; text: string } {
  const ajv = newAjv(dialect);
  return ajv.validateSchema(schema as object) === true ? { ok: true } : { ok: false, text: ajv.errorsText(ajv.errors) };
}

const DIALECTS: readonly Dialect[] = ["draft-07", "2019-09", "2020-12"];

const SCHEMAS: readonly [string, JsonValue][] = [
  ["an empty schema", {}],
  ["a boolean schema", false],
  ["a typical object schema", { type: "object", properties: { a: { type: "string", pattern: "^[a-z]+$" } }, required: ["a"], additionalProperties: false }],
  ["a type that is a number", { type: 5 }],
  ["an unknown type name", { type: "strng" }],
  ["a type list with a repeat", { type: ["string", "null", "string"] }],
  ["required with a repeat", { required: ["a", "b", "a"] }],
  ["an enum with equal objects written in another order", { enum: [{ a: 1, b: 2 }, { b: 2, a: 1 }] }],
  ["a negative minLength", { minLength: -1 }],
  ["a minLength that is not an integer", { minLength: 1.5 }],
  ["properties that are not schemas", { properties: { a: 3 } }],
  ["items that are an empty list", { items: [] }],
  ["a pattern that is not a string", { pattern: 7 }],
  ["an $anchor with a character the meta-schema refuses", { $anchor: "1bad" }],
  ["a $defs entry that is not a schema", { $defs: { a: "x" } }],
  ["nested problems in several places", { properties: { a: { type: 1 }, b: { minimum: "0" } }, allOf: [{ maxItems: -2 }] }],
];

describe("the precompiled meta-schema checks", () => {
  it("are what scripts/gen-meta-schemas.ts generates now (run `npm run gen:meta-schemas` when this fails)", () => {
    expect(readFileSync(OUTPUT, "utf8")).toBe(generate());
  });

  for (const dialect of DIALECTS) {
    it.each(SCHEMAS)(`answer as ajv does at run time, in ${dialect}, for %s`, (_what, schema) => {
      const precompiled = checkMetaSchema(schema, dialect);
      expect(precompiled).toEqual(atRunTime(schema, dialect));
    });
  }

  it("refuse with the repeat's positions as ajv's own uniqueItems words them", () => {
    expect(checkMetaSchema({ required: ["a", "b", "a"] }, "draft-07")).toEqual({
      ok: false,
      text: "data/required must NOT have duplicate items (items ## 0 and 2 are identical)",
    });
  });
});
