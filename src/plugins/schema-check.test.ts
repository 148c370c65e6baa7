/**
 * The parsers reach the config-schema checks through schema-check.ts (ADR 0186): a plugin whose
 * schema the log vouched for parses without them loaded, one that it did not is never read as
 * valid or invalid without them (the parser throws), and once loaded they answer as before.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode } from "./errors.js";
import { parseManifest, parsePlugin, parsePluginUnchecked } from "./parse.js";
import type { SchemaChecks } from "./schema-check.js";
import { SchemaChecksNotLoaded, loadSchemaChecks, rememberCheckedSchema, resetSchemaChecksForTests, schemaCheckReady, schemaChecksLoaded } from "./schema-check.js";

const IMAGE = `registry.example/echo@sha256:${"a".repeat(64)}`;
const SCHEMA = { type: "object", additionalProperties: false, properties: { startDate: { type: "string", pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" } } };
const BAD_SCHEMA = { type: "object", properties: { a: { type: "strnig" } } };
const plugin = (configSchema?: unknown, config?: unknown) => ({
  name: "echo",
  spec: { image: IMAGE, manifest: { capabilities: ["connector"], ...(configSchema === undefined ? {} : { configSchema }) }, ...(config === undefined ? {} : { config }) },
});

let checks: SchemaChecks;
beforeAll(async () => {
  checks = await loadSchemaChecks();
});
afterAll(() => resetSchemaChecksForTests(checks));

describe("parsing without the config-schema checks loaded", () => {
  it("parses a plugin without a schema as with them", () => {
    const withChecks = parsePlugin(plugin());
    resetSchemaChecksForTests();
    expect(schemaChecksLoaded()).toBe(false);
    expect(parsePlugin(plugin())).toEqual(withChecks);
    resetSchemaChecksForTests(checks);
  });

  it("throws, rather than guessing, for a schema nothing vouched for", () => {
    resetSchemaChecksForTests();
    expect(schemaCheckReady(SCHEMA)).toBe(false);
    expect(() => parsePlugin(plugin(SCHEMA))).toThrow(SchemaChecksNotLoaded);
    expect(() => parseManifest({ capabilities: ["connector"], configSchema: SCHEMA })).toThrow(SchemaChecksNotLoaded);
    resetSchemaChecksForTests(checks);
  });

  it("parses a remembered schema as the checks do, and only that schema", () => {
    const withChecks = parsePlugin(plugin(SCHEMA, { startDate: "2026-11-02" }));
    expect(withChecks.ok).toBe(true);
    resetSchemaChecksForTests();
    rememberCheckedSchema(SCHEMA);
    expect(schemaCheckReady(SCHEMA)).toBe(true);
    expect(parsePlugin(plugin(SCHEMA, { startDate: "2026-11-02" }))).toEqual(withChecks);
    expect(() => parsePlugin(plugin({ ...SCHEMA, required: ["startDate"] }))).toThrow(SchemaChecksNotLoaded);
    resetSchemaChecksForTests(checks);
  });

  it("loads them on demand, and they refuse a bad schema as before", async () => {
    resetSchemaChecksForTests();
    await loadSchemaChecks();
    expect(schemaChecksLoaded()).toBe(true);
    const bad = parsePlugin(plugin(BAD_SCHEMA));
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.errors.map((e) => e.code)).toContain(ErrorCode.InvalidConfigSchema);
    resetSchemaChecksForTests(checks);
  });
});

describe("parsePluginUnchecked", () => {
  it("gives parsePlugin's plugin whenever parsePlugin accepts it", () => {
    for (const p of [plugin(), plugin(SCHEMA), plugin(SCHEMA, { startDate: "2026-11-02" }), plugin(true)]) {
      expect(parsePluginUnchecked(p)).toEqual(parsePlugin(p));
    }
  });

  it("leaves the schema unchecked but for its size and JSON, and refuses the rest as parsePlugin does", () => {
    expect(parsePluginUnchecked(plugin(BAD_SCHEMA)).ok).toBe(true);
    expect(parsePlugin(plugin(BAD_SCHEMA)).ok).toBe(false);
    const notJson = parsePluginUnchecked(plugin({ a: Number.NaN }));
    expect(notJson.ok).toBe(false);
    const noCaps = { name: "echo", spec: { image: IMAGE, manifest: { capabilities: [], configSchema: SCHEMA } } };
    const unchecked = parsePluginUnchecked(noCaps);
    const checked = parsePlugin(noCaps);
    expect(unchecked.ok || checked.ok).toBe(false);
    if (!unchecked.ok && !checked.ok) expect(unchecked.errors).toEqual(checked.errors);
  });

  it("needs no checks loaded", () => {
    resetSchemaChecksForTests();
    expect(parsePluginUnchecked(plugin(SCHEMA)).ok).toBe(true);
    resetSchemaChecksForTests(checks);
  });
});
