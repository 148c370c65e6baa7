import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "./errors.js";
import type { JsonValue } from "./types.js";
import { validateConfig, validateConfigSchema } from "./config-schema.js";

const ibkrSchema: JsonValue = {
  type: "object",
  properties: {
    tokenFile: { type: "string" },
    accounts: { type: "array", items: { $ref: "#/definitions/account" } },
  },
  required: ["tokenFile"],
  additionalProperties: false,
  definitions: { account: { type: "object", properties: { id: { type: "string" } }, required: ["id"] } },
};

describe("validateConfigSchema", () => {
  it.each<[string, unknown]>([
    ["a typical object schema", ibkrSchema],
    ["the boolean schema true", true],
    ["the boolean schema false", false],
    ["an empty schema", {}],
    ["a reference to the root", { type: "object", properties: { child: { $ref: "#" } } }],
    ["a reference into $defs", { $defs: { a: { type: "string" } }, properties: { a: { $ref: "#/$defs/a" } } }],
    [
      "a reference through the schema's own $id",
      { $id: "https://vendor.example/cfg.json", definitions: { a: { type: "string" } }, properties: { a: { $ref: "https://vendor.example/cfg.json#/definitions/a" } } },
    ],
    [
      "a relative reference that resolves to its own $id",
      { $id: "https://vendor.example/cfg.json", definitions: { a: { type: "string" } }, properties: { a: { $ref: "cfg.json#/definitions/a" } } },
    ],
    ["a reference to the draft-07 meta-schema", { properties: { s: { $ref: "http://json-schema.org/draft-07/schema#" } } }],
    ["an explicit draft-07 $schema", { $schema: "http://json-schema.org/draft-07/schema#", type: "object" }],
    ["a 2019-09 schema", { $schema: "https://json-schema.org/draft/2019-09/schema", type: "object", unevaluatedProperties: false }],
    ["a 2020-12 schema", { $schema: "https://json-schema.org/draft/2020-12/schema", prefixItems: [{ type: "string" }], items: false, minItems: 1 }],
    [
      "a 2020-12 schema referencing its meta-schema",
      { $schema: "https://json-schema.org/draft/2020-12/schema", properties: { s: { $ref: "https://json-schema.org/draft/2020-12/schema" } } },
    ],
    ["a conditional schema without type keywords", { if: { properties: { k: { const: "a" } } }, then: { required: ["x"] } }],
    ["a $ref-looking string inside data keywords", { type: "object", default: { $ref: "https://evil.example/x" }, enum: [{ $ref: "file:///etc/passwd" }] }],
    ["a property named $ref", { type: "object", properties: { $ref: { type: "string" } } }],
  ])("accepts %s", (_what, schema) => {
    expect(validateConfigSchema(schema, "configSchema")).toEqual([]);
  });

  it.each<[string, unknown, string, string]>([
    ["a URL reference", { properties: { a: { $ref: "https://evil.example/schema.json" } } }, ErrorCode.ForbiddenSchemaRef, "configSchema.properties.a.$ref"],
    ["a file reference", { $ref: "file:///etc/passwd" }, ErrorCode.ForbiddenSchemaRef, "configSchema.$ref"],
    ["a relative file reference", { items: { $ref: "other.json#/a" } }, ErrorCode.ForbiddenSchemaRef, "configSchema.items.$ref"],
    [
      "a reference to another $id inside the schema",
      { $id: "https://vendor.example/cfg.json", definitions: { a: { $id: "https://vendor.example/a.json", type: "string" } }, properties: { b: { $ref: "a.json" } } },
      ErrorCode.ForbiddenSchemaRef,
      "configSchema.properties.b.$ref",
    ],
    [
      "a $dynamicRef to outside",
      { $schema: "https://json-schema.org/draft/2020-12/schema", properties: { a: { $dynamicRef: "https://evil.example/s#meta" } } },
      ErrorCode.ForbiddenSchemaRef,
      "configSchema.properties.a.$dynamicRef",
    ],
    ["a reference hidden in allOf", { allOf: [{}, { $ref: "http://localhost/x" }] }, ErrorCode.ForbiddenSchemaRef, "configSchema.allOf[1].$ref"],
    ["a reference hidden in an unknown keyword", { x: { $ref: "http://localhost/x" } }, ErrorCode.ForbiddenSchemaRef, "configSchema.x.$ref"],
    ["a reference to a look-alike meta-schema host", { $ref: "https://json-schema.org.evil.example/draft-07/schema" }, ErrorCode.ForbiddenSchemaRef, "configSchema.$ref"],
    ["an unsupported $schema", { $schema: "http://json-schema.org/draft-04/schema#" }, ErrorCode.InvalidConfigSchema, "configSchema.$schema"],
    ["a $schema that is not a string", { $schema: 7 }, ErrorCode.InvalidConfigSchema, "configSchema.$schema"],
    ["an unknown keyword", { type: "object", propertes: {} }, ErrorCode.InvalidConfigSchema, "configSchema"],
    ["an unknown format", { type: "string", format: "no-such-format" }, ErrorCode.InvalidConfigSchema, "configSchema"],
    ["a wrong keyword type", { type: "strnig" }, ErrorCode.InvalidConfigSchema, "configSchema"],
    ["a tuple that leaves extra items unchecked", { type: "array", items: [{ type: "string" }] }, ErrorCode.InvalidConfigSchema, "configSchema"],
    ["an invalid pattern", { type: "string", pattern: "(" }, ErrorCode.InvalidConfigSchema, "configSchema.pattern"],
    ["a dangling fragment reference", { $ref: "#/definitions/missing" }, ErrorCode.InvalidConfigSchema, "configSchema.$ref"],
    ["a number", 5, ErrorCode.InvalidConfigSchema, "configSchema"],
    ["null", null, ErrorCode.InvalidConfigSchema, "configSchema"],
    ["an array", [{}], ErrorCode.InvalidConfigSchema, "configSchema"],
    ["a value that is not JSON", { type: "object", default: Number.NaN }, ErrorCode.InvalidJSON, "configSchema"],
  ])("refuses %s", (_what, schema, code, path) => {
    expect(validateConfigSchema(schema, "configSchema")).toContainEqual(expect.objectContaining({ code, path }));
  });

  it("names the forbidden reference in its message", () => {
    const [error] = validateConfigSchema({ $ref: "https://evil.example/s.json" }, "configSchema");
    expect(error?.message).toContain("https://evil.example/s.json");
  });

  it("reports every forbidden reference at once", () => {
    const errors = validateConfigSchema({ properties: { a: { $ref: "http://x.example/a" }, b: { $ref: "http://x.example/b" } } }, "s");
    expect(errors.map((e) => e.path)).toEqual(["s.properties.a.$ref", "s.properties.b.$ref"]);
  });

  it("never throws, whatever it is given", () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.jsonValue()), (v) => {
        expect(Array.isArray(validateConfigSchema(v, "s"))).toBe(true);
      }),
      { numRuns: 100 },
    );
  });
});

describe("validateConfig", () => {
  it.each<[string, JsonValue | undefined]>([
    ["a matching config", { tokenFile: "/x", accounts: [{ id: "U1" }] }],
    ["a minimal config", { tokenFile: "/x" }],
  ])("accepts %s", (_what, config) => {
    expect(validateConfig(ibkrSchema, config, "config")).toEqual([]);
  });

  it("checks an absent config as the empty object", () => {
    expect(validateConfig({ type: "object" }, undefined, "config")).toEqual([]);
    expect(validateConfig(ibkrSchema, undefined, "config")).toEqual([
      expect.objectContaining({ code: ErrorCode.ConfigMismatch, path: "config" }),
    ]);
  });

  it("reports every mismatch with the path of the value", () => {
    const errors = validateConfig(ibkrSchema, { tokenFile: 1, accounts: [{ id: "U1" }, { id: 2 }], extra: true }, "config");
    expect(errors.every((e) => e.code === ErrorCode.ConfigMismatch)).toBe(true);
    expect(errors.map((e) => e.path).sort()).toEqual(["config", "config.accounts[1].id", "config.tokenFile"]);
    expect(errors.find((e) => e.path === "config")?.message).toContain('"extra"');
  });

  it("tells an object key that looks like an index from an array index", () => {
    const schema: JsonValue = { type: "object", properties: { m: { type: "object", additionalProperties: { type: "string" } } } };
    expect(validateConfig(schema, { m: { "0": 1 } }, "config").map((e) => e.path)).toEqual(["config.m.0"]);
  });

  it("never includes a config value in a message", () => {
    const errors = validateConfig({ type: "object", properties: { token: { type: "integer" } } }, { token: "s3cr3t-value" }, "config");
    expect(errors).toHaveLength(1);
    expect(JSON.stringify(errors)).not.toContain("s3cr3t-value");
  });

  it("refuses every config under an invalid schema", () => {
    expect(validateConfig({ $ref: "https://evil.example/x" }, {}, "config")).toEqual([
      expect.objectContaining({ code: ErrorCode.InvalidConfigSchema, path: "config" }),
    ]);
  });

  it("refuses every config under the schema false", () => {
    expect(validateConfig(false, {}, "config")).toEqual([expect.objectContaining({ code: ErrorCode.ConfigMismatch })]);
  });
});

describe("standard formats", () => {
  const schema = { type: "object", properties: { url: { type: "string", format: "uri" }, at: { type: "string", format: "date" } } };

  it("accepts a schema that uses the standard formats", () => {
    expect(validateConfigSchema(schema, "configSchema")).toEqual([]);
  });

  it.each([
    ["a config whose uri is not a URI", { url: "not a uri" }, "config.url"],
    ["a config whose date is not a date", { at: "2026-13-45" }, "config.at"],
  ])("refuses %s", (_what, config, path) => {
    expect(validateConfig(schema, config, "config")).toContainEqual(expect.objectContaining({ code: ErrorCode.ConfigMismatch, path }));
  });

  it("accepts a config whose values have the declared formats", () => {
    expect(validateConfig(schema, { url: "https://api.nbp.pl/", at: "2026-11-30" }, "config")).toEqual([]);
  });
});
