import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "./errors.js";
import type { JsonValue } from "./types.js";
import { CAPS } from "./caps.js";
import { newAjv, validateConfig, validateConfigSchema } from "./config-schema.js";
import type { Dialect } from "./config-schema.js";
import { re2RegExp } from "./regex.js";

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

const PATTERN_CAP_SCHEMA = (n: number): JsonValue => ({
  type: "object",
  properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "string", pattern: "^[a-z]{900}$" }])),
});

describe("patterns run on RE2", () => {
  it.each<Dialect>(["draft-07", "2019-09", "2020-12"])("hands ajv the linear-time engine for %s", (dialect) => {
    expect(newAjv(dialect).opts.code.regExp).toBe(re2RegExp);
  });

  it("finds that thirty a's and a '!' do not match ^(a+)+$", () => {
    const schema: JsonValue = { type: "string", pattern: "^(a+)+$" };
    expect(validateConfig(schema, `${"a".repeat(30)}!`, "config")).toEqual([
      expect.objectContaining({ code: ErrorCode.ConfigMismatch, path: "config" }),
    ]);
    expect(validateConfig(schema, "a".repeat(30), "config")).toEqual([]);
  });

  it("matches patternProperties names with RE2 too", () => {
    const schema: JsonValue = { type: "object", patternProperties: { "^(a+)+$": { type: "number" } } };
    expect(validateConfig(schema, { [`${"a".repeat(30)}!`]: "x", aaa: 1 }, "config")).toEqual([]);
    expect(validateConfig(schema, { aaa: "x" }, "config")).toEqual([expect.objectContaining({ path: "config.aaa" })]);
  });

  it.each<[string, unknown, string, string]>([
    ["a lookahead", { properties: { x: { type: "string", pattern: "^(?=a)" } } }, ErrorCode.InvalidConfigSchema, "configSchema.properties.x.pattern"],
    ["a backreference", { $defs: { d: { pattern: "(a)\\1" } } }, ErrorCode.InvalidConfigSchema, "configSchema.$defs.d.pattern"],
    ["a lookbehind in a patternProperties name", { patternProperties: { "(?<=a)b": {} } }, ErrorCode.InvalidConfigSchema, "configSchema.patternProperties.(?<=a)b"],
    ["a lookahead under propertyNames", { propertyNames: { pattern: "(?!x)" } }, ErrorCode.InvalidConfigSchema, "configSchema.propertyNames.pattern"],
    ["RE2 syntax ECMAScript refuses", { pattern: "(?P<n>x)" }, ErrorCode.InvalidConfigSchema, "configSchema.pattern"],
    ["a pattern over the program cap", { items: { pattern: "a{1000}b{100}" } }, ErrorCode.TooLarge, "configSchema.items.pattern"],
    ["a pattern over the length cap", { pattern: "a".repeat(CAPS.patternLength + 1) }, ErrorCode.TooLarge, "configSchema.pattern"],
    ["patterns over the cap together", PATTERN_CAP_SCHEMA(5), ErrorCode.TooLarge, "configSchema"],
  ])("refuses %s, at its path", (_what, schema, code, path) => {
    expect(validateConfigSchema(schema, "configSchema")).toContainEqual(expect.objectContaining({ code, path }));
  });

  it("accepts patterns up to the cap together", () => {
    expect(validateConfigSchema(PATTERN_CAP_SCHEMA(4), "configSchema")).toEqual([]);
  });
});

describe("the caps on a config schema", () => {
  const props = (n: number): JsonValue => ({ type: "object", properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "string" }])) });
  let deep: JsonValue = { type: "string" };
  for (let i = 0; i < 40; i++) deep = { type: "object", properties: { a: deep } };

  it.each<[string, unknown, string]>([
    ["a 200,000-item enum", { enum: Array.from({ length: 200_000 }, (_, i) => i) }, "configSchema.enum"],
    ["more properties than the cap", props(CAPS.schemaKeys + 1), "configSchema.properties"],
    ["a schema nested deeper than the cap", deep, "configSchema.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a.properties.a"],
    ["a description longer than the cap", { description: "x".repeat(CAPS.schemaString + 1) }, "configSchema.description"],
    ["a member name longer than the cap", { properties: { ["k".repeat(CAPS.schemaString + 1)]: {} } }, `configSchema.properties.${"k".repeat(CAPS.shownName)}…`],
    ["more values than the cap", { enum: Array.from({ length: 9 }, () => Array.from({ length: 1000 }, () => 0)) }, "configSchema"],
    ["more bytes than the cap", { enum: Array.from({ length: 20 }, () => "x".repeat(4000)) }, "configSchema"],
    ["more subschemas than the cap", { anyOf: Array.from({ length: 700 }, () => ({ anyOf: [{}, {}] })) }, "configSchema"],
  ])("refuses %s with too_large, before compiling", (_what, schema, path) => {
    expect(validateConfigSchema(schema, "configSchema")).toEqual([expect.objectContaining({ code: ErrorCode.TooLarge, path })]);
  });

  it("refuses a schema a million levels deep without overflowing the stack", () => {
    let v: unknown = {};
    for (let i = 0; i < 1_000_000; i++) v = { not: v };
    expect(validateConfigSchema(v, "configSchema")).toEqual([expect.objectContaining({ code: ErrorCode.TooLarge })]);
  });

  it.each<[string, unknown]>([
    ["an enum at the cap", { enum: Array.from({ length: CAPS.schemaListItems }, (_, i) => `v${i}`) }],
    ["properties at the cap", props(CAPS.schemaKeys)],
  ])("accepts %s", (_what, schema) => {
    expect(validateConfigSchema(schema, "configSchema")).toEqual([]);
  });
});

describe("reference loops", () => {
  const D19 = "https://json-schema.org/draft/2019-09/schema";
  const D20 = "https://json-schema.org/draft/2020-12/schema";
  it.each<[string, unknown, string]>([
    ["a schema that $refs itself", { $ref: "#" }, "configSchema.$ref"],
    ["a schema that $refs itself through allOf", { allOf: [{ $ref: "#" }] }, "configSchema.allOf[0].$ref"],
    ["a definition that $refs itself", { $ref: "#/definitions/a", definitions: { a: { $ref: "#/definitions/a" } } }, "configSchema.definitions.a.$ref"],
    [
      "two definitions that $ref each other through anyOf and not",
      { $ref: "#/definitions/a", definitions: { a: { anyOf: [{ $ref: "#/definitions/b" }] }, b: { not: { $ref: "#/definitions/a" } } } },
      "configSchema.definitions.b.not.$ref",
    ],
    ["a loop through the schema's own $id", { $id: "https://vendor.example/s.json", if: { $ref: "s.json" } }, "configSchema.if.$ref"],
    ["a loop through then", { if: true, then: { $ref: "#" } }, "configSchema.then.$ref"],
    ["a loop through dependentSchemas", { $schema: D19, dependentSchemas: { a: { $ref: "#" } } }, "configSchema.dependentSchemas.a.$ref"],
    ["a loop through an anchor", { $schema: D20, $defs: { a: { $anchor: "x", allOf: [{ $ref: "#x" }] } } }, "configSchema.$defs.a.allOf[0].$ref"],
    ["a loop through a draft-07 plain-name $id", { definitions: { a: { $id: "#x", oneOf: [{ $ref: "#x" }] } } }, "configSchema.definitions.a.oneOf[0].$ref"],
    ["a loop through $recursiveRef", { $schema: D19, $recursiveAnchor: true, anyOf: [{ $recursiveRef: "#" }] }, "configSchema.anyOf[0].$recursiveRef"],
    ["a loop through $dynamicRef", { $schema: D20, $dynamicAnchor: "m", allOf: [{ $dynamicRef: "#m" }] }, "configSchema.allOf[0].$dynamicRef"],
  ])("refuses %s", (_what, schema, path) => {
    expect(validateConfigSchema(schema, "configSchema")).toContainEqual(expect.objectContaining({ code: ErrorCode.SchemaRefCycle, path }));
  });

  it.each<[string, unknown, JsonValue]>([
    ["recursion through properties", { type: "object", properties: { child: { $ref: "#" } } }, { child: { child: {} } }],
    ["recursion through items", { $ref: "#/definitions/list", definitions: { list: { type: "array", items: { $ref: "#/definitions/list" } } } }, [[[]], []]],
    ["recursion through additionalProperties inside anyOf", { anyOf: [{ type: "string" }, { type: "object", additionalProperties: { $ref: "#" } }] }, { a: { b: "c" } }],
    ["a definition used twice", { properties: { a: { $ref: "#/$defs/s" }, b: { allOf: [{ $ref: "#/$defs/s" }] } }, $defs: { s: { type: "string" } } }, { a: "x", b: "y" }],
  ])("accepts %s, and checks a config with it", (_what, schema, config) => {
    expect(validateConfigSchema(schema, "configSchema")).toEqual([]);
    expect(validateConfig(schema as JsonValue, config, "config")).toEqual([]);
  });

  it("refuses every config under a looping schema instead of failing to check it", () => {
    expect(validateConfig({ $ref: "#" }, {}, "config")).toEqual([expect.objectContaining({ code: ErrorCode.InvalidConfigSchema, path: "config" })]);
  });

  it("refuses a reference into data, which ajv would compile as a schema", () => {
    expect(validateConfigSchema({ $ref: "#/enum/0", enum: [{ $ref: "#/enum/0" }] }, "configSchema")).toContainEqual(
      expect.objectContaining({ code: ErrorCode.InvalidConfigSchema, path: "configSchema.$ref" }),
    );
  });
});

describe("$id", () => {
  it.each<[string, unknown, string]>([
    ["a subschema naming another document", { properties: { a: { $id: "https://evil.example/a.json", type: "string" } } }, "configSchema.properties.a.$id"],
    ["a relative subschema $id", { definitions: { a: { $id: "a.json" } } }, "configSchema.definitions.a.$id"],
    ["a root $id naming the draft-07 meta-schema", { $id: "http://json-schema.org/draft-07/schema#" }, "configSchema.$id"],
    ["a root $id naming a meta-schema the dialect has not loaded", { $id: "https://json-schema.org/draft/2019-09/schema", type: "object" }, "configSchema.$id"],
  ])("refuses %s", (_what, schema, path) => {
    expect(validateConfigSchema(schema, "configSchema")).toContainEqual(expect.objectContaining({ code: ErrorCode.ForbiddenSchemaId, path }));
  });

  it.each<[string, unknown]>([
    ["a root $id of its own", { $id: "https://vendor.example/cfg.json", type: "object" }],
    ["a draft-07 plain-name $id in a subschema, referenced", { definitions: { a: { $id: "#a", type: "string" } }, properties: { x: { $ref: "#a" } } }],
  ])("accepts %s", (_what, schema) => {
    expect(validateConfigSchema(schema, "configSchema")).toEqual([]);
  });
});

describe("uniqueItems", () => {
  const schema: JsonValue = { type: "array", uniqueItems: true };

  it.each<[string, JsonValue, number[]]>([
    ["objects equal in another key order", [{ a: 1, b: [2] }, { b: [2], a: 1 }], [0, 1]],
    ["numbers written two ways", [1, 2, 1.0], [0, 2]],
    ["two nulls among other values", [null, "null", 0, null], [0, 3]],
  ])("refuses %s, naming the first repeat as ajv does", (_what, config, [j, i]) => {
    expect(validateConfig(schema, config, "config")).toEqual([
      expect.objectContaining({ code: ErrorCode.ConfigMismatch, path: "config", message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)` }),
    ]);
  });

  it.each<[string, JsonValue]>([
    ["values of different types", [1, "1", [1], { "1": 1 }, true, null]],
    ["8,000 distinct small arrays", Array.from({ length: 8_000 }, (_, i) => [i])],
  ])("accepts %s", (_what, config) => {
    expect(validateConfig(schema, config, "config")).toEqual([]);
  });

  it("checks nothing under uniqueItems: false", () => {
    expect(validateConfig({ type: "array", uniqueItems: false }, [1, 1], "config")).toEqual([]);
  });

  it("still checks uniqueItems in the schema itself (required lists repeat no name)", () => {
    expect(validateConfigSchema({ required: ["a", "a"] }, "configSchema")).toEqual([expect.objectContaining({ code: ErrorCode.InvalidConfigSchema })]);
  });
});

describe("the caps on a config and its formats", () => {
  it.each<[string, JsonValue]>([
    ["a config larger than the cap", { a: "x".repeat(CAPS.configBytes) }],
    ["a config nested deeper than the cap", JSON.parse(`${"[".repeat(CAPS.configDepth + 1)}${"]".repeat(CAPS.configDepth + 1)}`) as JsonValue],
  ])("refuses %s with too_large", (_what, config) => {
    expect(validateConfig({}, config, "config")).toEqual([expect.objectContaining({ code: ErrorCode.TooLarge })]);
  });

  it("fails a format on a string longer than the format cap", () => {
    const long = `https://example.com/${"a".repeat(CAPS.formatString)}`;
    expect(validateConfig({ type: "string", format: "uri" }, long, "config")).toEqual([expect.objectContaining({ code: ErrorCode.ConfigMismatch })]);
    expect(validateConfig({ type: "string", format: "uri" }, "https://example.com/a", "config")).toEqual([]);
  });

  it("checks a long base64 string, whose check is linear", () => {
    expect(validateConfig({ type: "string", format: "byte" }, "QUJD".repeat(CAPS.formatString), "config")).toEqual([]);
  });
});

describe("the meta-schema check shared per dialect", () => {
  const DIALECTS: [Dialect, Record<string, JsonValue>][] = [
    ["draft-07", {}],
    ["2019-09", { $schema: "https://json-schema.org/draft/2019-09/schema" }],
    ["2020-12", { $schema: "https://json-schema.org/draft/2020-12/schema" }],
  ];

  it.each(DIALECTS)("words a %s schema's refusal as ajv does, whatever was checked before it", (_dialect, head) => {
    const bad = { ...head, properties: { a: { minLength: -1 } } };
    const first = validateConfigSchema(bad, "configSchema");
    expect(validateConfigSchema({ ...head, type: "object" }, "configSchema")).toEqual([]);
    expect(validateConfigSchema(bad, "configSchema")).toEqual(first);
    expect(first).toEqual([{ code: ErrorCode.InvalidConfigSchema, path: "configSchema", message: "the config schema does not compile: schema is invalid: data/properties/a/minLength must be >= 0" }]);
  });

  it.each(DIALECTS)("compiles two %s schemas with the same $id one after another", (_dialect, head) => {
    const schema = { ...head, $id: "https://vendor.example/config", type: "object" };
    expect(validateConfigSchema(schema, "configSchema")).toEqual([]);
    expect(validateConfigSchema({ ...schema, required: ["a"] }, "configSchema")).toEqual([]);
  });
});

describe("a schema checked again and again", () => {
  it("gives each config its own problems, the same as the first time, whatever was checked in between", () => {
    const schema: JsonValue = { type: "object", properties: { region: { type: "string" }, n: { type: "integer" } }, additionalProperties: false };
    const first = validateConfig(schema, { region: 7 }, "spec.config");
    for (let i = 0; i < 3; i++) {
      expect(validateConfig(schema, { n: "x" }, "spec.config").map((e) => e.path)).toEqual(["spec.config.n"]);
      expect(validateConfig(schema, { region: "eu" }, "spec.config")).toEqual([]);
      expect(validateConfig(schema, { region: 7 }, "spec.config")).toEqual(first);
    }
    // A schema equal in every way but one keyword is another schema.
    expect(validateConfig({ ...schema, additionalProperties: true }, { other: 1 }, "spec.config")).toEqual([]);
    expect(validateConfig(schema, { other: 1 }, "spec.config").map((e) => e.code)).toEqual([ErrorCode.ConfigMismatch]);
  });
});
