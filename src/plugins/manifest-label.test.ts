import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MANIFEST_LABEL } from "./constants.js";
import { CAPS } from "./caps.js";
import { ErrorCode } from "./errors.js";
import { parseManifestLabel } from "./manifest-label.js";

const LABEL = JSON.stringify({
  capabilities: ["connector"],
  egress: [{ host: "api.example.com" }, { host: "files.example.com", port: 8443 }],
  secrets: [{ name: "creds", mountPath: "/etc/creds" }],
  dataTiers: ["ledger"],
  configSchema: { type: "object", properties: { account: { type: "string" } } },
});

describe("parseManifestLabel reads a valid label", () => {
  it("returns the manifest with the default port filled in", () => {
    const r = parseManifestLabel(LABEL);
    expect(r).toEqual({
      ok: true,
      value: {
        capabilities: ["connector"],
        egress: [
          { host: "api.example.com", port: 443 },
          { host: "files.example.com", port: 8443 },
        ],
        secrets: [{ name: "creds", mountPath: "/etc/creds" }],
        dataTiers: ["ledger"],
        configSchema: { type: "object", properties: { account: { type: "string" } } },
      },
    });
  });

  it.each([
    { name: "pretty-printed with surrounding whitespace", text: `\n  ${JSON.stringify(JSON.parse(LABEL), null, 2)}\n` },
    { name: "with only a capability", text: '{"capabilities":["view"]}' },
  ])("accepts it $name", ({ text }) => {
    expect(parseManifestLabel(text).ok).toBe(true);
  });
});

describe("parseManifestLabel refuses a label it cannot read exactly", () => {
  it.each([
    { name: "invalid JSON", text: '{"capabilities": ["connector"]', code: ErrorCode.InvalidManifestLabel, path: "label" },
    { name: "trailing data", text: `${LABEL}{"capabilities":["view"]}`, code: ErrorCode.InvalidManifestLabel, path: "label" },
    { name: "an empty label", text: "", code: ErrorCode.InvalidManifestLabel, path: "label" },
    {
      name: "a repeated top-level key",
      text: '{"capabilities":["connector"],"egress":[{"host":"a.example.com"}],"egress":[]}',
      code: ErrorCode.Duplicate,
      path: "label.egress",
    },
    {
      name: "a repeated key inside an egress host",
      text: '{"capabilities":["connector"],"egress":[{"host":"a.example.com","host":"b.example.com"}]}',
      code: ErrorCode.Duplicate,
      path: "label.egress[0].host",
    },
    { name: "an unknown top-level field", text: '{"capabilities":["connector"],"name":"x"}', code: ErrorCode.UnknownField, path: "label.name" },
    {
      name: "an unknown field in a Secret mount",
      text: '{"capabilities":["connector"],"secrets":[{"name":"s","mountPath":"/etc/s","readOnly":false}]}',
      code: ErrorCode.UnknownField,
      path: "label.secrets[0].readOnly",
    },
    {
      name: "an unknown field in an egress host",
      text: '{"capabilities":["connector"],"egress":[{"host":"a.example.com","tls":false}]}',
      code: ErrorCode.UnknownField,
      path: "label.egress[0].tls",
    },
    { name: "a manifest that is not an object", text: '["connector"]', code: ErrorCode.InvalidType, path: "label" },
    { name: "a manifest without a capability", text: '{"egress":[]}', code: ErrorCode.NoCapability, path: "label.capabilities" },
    { name: "an IP literal egress host", text: '{"capabilities":["connector"],"egress":[{"host":"10.0.0.1"}]}', code: ErrorCode.InvalidEgressHost, path: "label.egress[0].host" },
  ])("refuses $name", ({ text, code, path }) => {
    const r = parseManifestLabel(text);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toContainEqual(expect.objectContaining({ code, path }));
  });

  it("reports each unknown field once", () => {
    const r = parseManifestLabel('{"capabilities":["connector"],"version":"1","egress":[{"host":"a.example.com","x":1}]}');
    expect(r.ok ? [] : r.errors.map((e) => [e.code, e.path])).toEqual([
      [ErrorCode.UnknownField, "label.version"],
      [ErrorCode.UnknownField, "label.egress[0].x"],
    ]);
  });

  it("names errors under the path it is given", () => {
    const r = parseManifestLabel('{"capabilities":["connector"],"x":1}', "image.config.labels");
    expect(r.ok ? [] : r.errors.map((e) => e.path)).toEqual(["image.config.labels.x"]);
  });

  it("refuses the shared test image's label, which carries name and version instead of a manifest", () => {
    const config = JSON.parse(readFileSync("test/fixtures/sigstore/image/config.json", "utf8")) as {
      config: { Labels: Record<string, string> };
    };
    const label = config.config.Labels[MANIFEST_LABEL];
    expect(label).toBeDefined();
    const r = parseManifestLabel(label ?? "");
    expect(r.ok ? [] : r.errors.map((e) => e.path)).toEqual(
      expect.arrayContaining(["label.name", "label.version", "label.capabilities"]),
    );
  });
});

describe("parseManifestLabel on labels of any size", () => {
  it("refuses a label over the cap before parsing it", () => {
    const label = JSON.stringify({ capabilities: ["connector"], configSchema: { description: "x".repeat(CAPS.manifestLabelBytes) } });
    expect(parseManifestLabel(label)).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "label" })] });
  });

  it("counts the label's bytes in UTF-8, not its characters", () => {
    const label = JSON.stringify({ capabilities: ["connector"], configSchema: { description: "é".repeat(CAPS.manifestLabelBytes / 2) } });
    expect(label.length).toBeLessThan(CAPS.manifestLabelBytes);
    expect(parseManifestLabel(label)).toEqual({ ok: false, errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "label" })] });
  });

  it("refuses a label with one Secret over the list cap at the list's path", () => {
    const secrets = Array.from({ length: CAPS.listItems + 1 }, (_, i) => ({ name: `s${i}`, mountPath: `/m/${i}` }));
    expect(parseManifestLabel(JSON.stringify({ capabilities: ["connector"], secrets }))).toEqual({
      ok: false,
      errors: [expect.objectContaining({ code: ErrorCode.TooLarge, path: "label.secrets" })],
    });
  });

  it.each([[5], [null], [{}]])("refuses a label that is not a string: %j", (label) => {
    expect(parseManifestLabel(label as unknown as string).ok).toBe(false);
  });
});
