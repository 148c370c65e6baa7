import { describe, expect, it } from "vitest";
import { manifestEqual, jsonEqual } from "./manifest-equal.js";
import type { JsonValue, Manifest } from "./types.js";

const base: Manifest = {
  capabilities: ["connector", "view"],
  egress: [
    { host: "api.example.com", port: 443 },
    { host: "files.example.com", port: 8443 },
  ],
  secrets: [
    { name: "creds", mountPath: "/etc/creds" },
    { name: "token", mountPath: "/etc/token" },
  ],
  dataTiers: ["ledger", "prices"],
  configSchema: { type: "object", properties: { account: { type: "string", minLength: 1 } }, required: ["account"] },
};

const withSchema = (configSchema: JsonValue): Manifest => ({ ...base, configSchema });
const { configSchema: _dropped, ...noSchema } = base;

describe("manifestEqual holds for the same permissions in any order", () => {
  it.each<{ name: string; other: Manifest }>([
    { name: "the same manifest", other: base },
    { name: "capabilities in another order", other: { ...base, capabilities: ["view", "connector"] } },
    { name: "egress hosts in another order", other: { ...base, egress: [...base.egress].reverse() } },
    { name: "Secret mounts in another order", other: { ...base, secrets: [...base.secrets].reverse() } },
    { name: "data tiers in another order", other: { ...base, dataTiers: ["prices", "ledger"] } },
    {
      name: "schema object keys in another order",
      other: withSchema({ required: ["account"], properties: { account: { minLength: 1, type: "string" } }, type: "object" }),
    },
    {
      name: "a schema number written as 1.0 instead of 1",
      other: withSchema(JSON.parse('{"type": "object", "properties": {"account": {"type": "string", "minLength": 1.0}}, "required": ["account"]}') as JsonValue),
    },
  ])("with $name", ({ other }) => {
    expect(manifestEqual(base, other)).toBe(true);
    expect(manifestEqual(other, base)).toBe(true);
  });

  it("with both schemas absent", () => {
    expect(manifestEqual(noSchema, { ...noSchema })).toBe(true);
  });
});

describe("manifestEqual fails on any difference in what is asked for", () => {
  it.each<{ name: string; other: Manifest }>([
    { name: "one capability fewer", other: { ...base, capabilities: ["connector"] } },
    { name: "one extra egress host", other: { ...base, egress: [...base.egress, { host: "evil.example.com", port: 443 }] } },
    { name: "an egress host on another port", other: { ...base, egress: [{ host: "api.example.com", port: 444 }, base.egress[1]!] } },
    { name: "one egress host fewer", other: { ...base, egress: [base.egress[0]!] } },
    {
      name: "hosts and ports swapped between two entries",
      other: { ...base, egress: [{ host: "api.example.com", port: 8443 }, { host: "files.example.com", port: 443 }] },
    },
    { name: "a different Secret mount path", other: { ...base, secrets: [{ name: "creds", mountPath: "/etc/other" }, base.secrets[1]!] } },
    {
      name: "Secret names swapped between mount paths",
      other: { ...base, secrets: [{ name: "token", mountPath: "/etc/creds" }, { name: "creds", mountPath: "/etc/token" }] },
    },
    { name: "an extra data tier", other: { ...base, dataTiers: ["ledger", "prices", "raw"] } },
    { name: "a schema number 1.5 instead of 1", other: withSchema({ ...(base.configSchema as object), properties: { account: { type: "string", minLength: 1.5 } } }) },
    {
      name: "a schema number 1.0000000000000002 instead of 1",
      other: withSchema(JSON.parse('{"type": "object", "properties": {"account": {"type": "string", "minLength": 1.0000000000000002}}, "required": ["account"]}') as JsonValue),
    },
    { name: "a schema number written as a string", other: withSchema({ ...(base.configSchema as object), properties: { account: { type: "string", minLength: "1" } } }) },
    { name: "a schema array in another order", other: withSchema({ ...(base.configSchema as object), required: [] }) },
    { name: "a schema with an extra key", other: withSchema({ ...(base.configSchema as object), additionalProperties: false }) },
    { name: "no schema", other: noSchema },
    { name: "an empty object schema", other: withSchema({}) },
    { name: "the schema true", other: withSchema(true) },
    { name: "the schema null", other: withSchema(null) },
  ])("such as $name", ({ other }) => {
    expect(manifestEqual(base, other)).toBe(false);
    expect(manifestEqual(other, base)).toBe(false);
  });

  it.each<{ name: string; a: Manifest; b: Manifest }>([
    { name: "an absent schema differs from {}", a: noSchema, b: withSchema({}) },
    { name: "an absent schema differs from true", a: noSchema, b: withSchema(true) },
    { name: "{} differs from true", a: withSchema({}), b: withSchema(true) },
    { name: "[] differs from {}", a: withSchema([]), b: withSchema({}) },
  ])("such as $name", ({ a, b }) => {
    expect(manifestEqual(a, b)).toBe(false);
  });
});

describe("jsonEqual compares JSON values exactly", () => {
  it.each<{ a: JsonValue; b: JsonValue; want: boolean }>([
    { a: 0, b: -0, want: true },
    { a: 1e21, b: 1000000000000000000000, want: true },
    { a: [1, 2], b: [2, 1], want: false },
    { a: [[1]], b: [[1], []], want: false },
    { a: { a: null }, b: {}, want: false },
    { a: "1", b: 1, want: false },
    { a: false, b: null, want: false },
    { a: { x: [{ y: 2 }] }, b: { x: [{ y: 2 }] }, want: true },
  ])("says $want for $a and $b", ({ a, b, want }) => {
    expect(jsonEqual(a, b)).toBe(want);
    expect(jsonEqual(b, a)).toBe(want);
  });
});
