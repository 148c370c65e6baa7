import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CAPS } from "./caps.js";
import { ErrorCode } from "./errors.js";
import type { FieldError, Result } from "./errors.js";
import { mountPathsOverlap, parseGrant, parseManifest, parsePlugin, validateMountPath } from "./validate.js";

const DIGEST = `sha256:${"a1".repeat(32)}`;
const IMAGE = `ghcr.io/openfief/ibkr-flex@${DIGEST}`;

const manifest = {
  capabilities: ["connector"],
  egress: [{ host: "gdcdyn.interactivebrokers.com" }, { host: "ndcdyn.interactivebrokers.com", port: 8443 }],
  secrets: [{ name: "ibkr-flex-credentials", mountPath: "/etc/ibkr" }],
  dataTiers: ["statements"],
  configSchema: { type: "object", properties: { queryId: { type: "string" } } },
};

function errorsOf<T>(result: Result<T>): readonly FieldError[] {
  return result.ok ? [] : result.errors;
}

function withField(field: string, value: unknown): Record<string, unknown> {
  return { ...manifest, [field]: value };
}

describe("parseManifest", () => {
  it("accepts a full manifest and fills in the default port", () => {
    expect(parseManifest(manifest)).toEqual({
      ok: true,
      value: {
        capabilities: ["connector"],
        egress: [
          { host: "gdcdyn.interactivebrokers.com", port: 443 },
          { host: "ndcdyn.interactivebrokers.com", port: 8443 },
        ],
        secrets: [{ name: "ibkr-flex-credentials", mountPath: "/etc/ibkr" }],
        dataTiers: ["statements"],
        configSchema: { type: "object", properties: { queryId: { type: "string" } } },
      },
    });
  });

  it("accepts a manifest with only a capability, the other lists empty", () => {
    expect(parseManifest({ capabilities: ["view"] })).toEqual({
      ok: true,
      value: { capabilities: ["view"], egress: [], secrets: [], dataTiers: [] },
    });
  });

  it("returns a copy that shares nothing with its input", () => {
    const input = structuredClone(manifest);
    const result = parseManifest(input);
    input.configSchema.type = "string";
    input.secrets[0]!.mountPath = "/changed";
    expect(result.ok && result.value.configSchema).toEqual({ type: "object", properties: { queryId: { type: "string" } } });
    expect(result.ok && result.value.secrets[0]?.mountPath).toBe("/etc/ibkr");
  });

  it.each<[string, unknown, string, string]>([
    ["no capability", withField("capabilities", []), ErrorCode.NoCapability, "manifest.capabilities"],
    ["a missing capability list", { egress: [] }, ErrorCode.NoCapability, "manifest.capabilities"],
    ["an unknown capability", withField("capabilities", ["connector", "admin"]), ErrorCode.UnknownCapability, "manifest.capabilities[1]"],
    ["a repeated capability", withField("capabilities", ["view", "view"]), ErrorCode.Duplicate, "manifest.capabilities[1]"],
    ["a capability that is not a string", withField("capabilities", [1]), ErrorCode.InvalidType, "manifest.capabilities[0]"],
    ["a capability list that is not a list", withField("capabilities", "connector"), ErrorCode.InvalidType, "manifest.capabilities"],
    ["an unknown field", withField("network", true), ErrorCode.UnknownField, "manifest.network"],
    ["a repeated egress host", withField("egress", [{ host: "a.io" }, { host: "a.io", port: 443 }]), ErrorCode.Duplicate, "manifest.egress[1]"],
    ["an IP literal egress host", withField("egress", [{ host: "a.io" }, { host: "1.2.3.4" }]), ErrorCode.InvalidEgressHost, "manifest.egress[1].host"],
    ["a single-label egress host", withField("egress", [{ host: "core" }]), ErrorCode.InvalidEgressHost, "manifest.egress[0].host"],
    ["an egress port of 0", withField("egress", [{ host: "a.io", port: 0 }]), ErrorCode.InvalidPort, "manifest.egress[0].port"],
    ["an unknown egress field", withField("egress", [{ host: "a.io", path: "/" }]), ErrorCode.UnknownField, "manifest.egress[0].path"],
    ["an egress list that is not a list", withField("egress", { host: "a.io" }), ErrorCode.InvalidType, "manifest.egress"],
    ["an invalid Secret name", withField("secrets", [{ name: "Creds", mountPath: "/c" }]), ErrorCode.InvalidSecretName, "manifest.secrets[0].name"],
    ["a missing Secret name", withField("secrets", [{ mountPath: "/c" }]), ErrorCode.Required, "manifest.secrets[0].name"],
    ["a missing mount path", withField("secrets", [{ name: "c" }]), ErrorCode.Required, "manifest.secrets[0].mountPath"],
    ["an unknown Secret field", withField("secrets", [{ name: "c", mountPath: "/c", readOnly: false }]), ErrorCode.UnknownField, "manifest.secrets[0].readOnly"],
    ["a repeated Secret", withField("secrets", [{ name: "c", mountPath: "/c" }, { name: "c", mountPath: "/d" }]), ErrorCode.Duplicate, "manifest.secrets[1].name"],
    ["two Secrets at one mount path", withField("secrets", [{ name: "c", mountPath: "/c" }, { name: "d", mountPath: "/c" }]), ErrorCode.MountOverlap, "manifest.secrets[1].mountPath"],
    ["a mount under another", withField("secrets", [{ name: "c", mountPath: "/a" }, { name: "d", mountPath: "/a/b" }]), ErrorCode.MountOverlap, "manifest.secrets[1].mountPath"],
    ["a mount above another", withField("secrets", [{ name: "c", mountPath: "/a/b" }, { name: "d", mountPath: "/a" }]), ErrorCode.MountOverlap, "manifest.secrets[1].mountPath"],
    ["a mount under the token root", withField("secrets", [{ name: "c", mountPath: "/var/run/secrets/x" }]), ErrorCode.ReservedMountPath, "manifest.secrets[0].mountPath"],
    ["an invalid data tier", withField("dataTiers", ["a.b"]), ErrorCode.InvalidDataTier, "manifest.dataTiers[0]"],
    ["a repeated data tier", withField("dataTiers", ["a", "a"]), ErrorCode.Duplicate, "manifest.dataTiers[1]"],
    ["a config schema with a URL reference", withField("configSchema", { $ref: "https://x.example/s" }), ErrorCode.ForbiddenSchemaRef, "manifest.configSchema.$ref"],
    ["a config schema that does not compile", withField("configSchema", { type: "nope" }), ErrorCode.InvalidConfigSchema, "manifest.configSchema"],
    ["a config schema that is not JSON", withField("configSchema", { default: Number.POSITIVE_INFINITY }), ErrorCode.InvalidJSON, "manifest.configSchema"],
    ["a manifest that is not an object", ["connector"], ErrorCode.InvalidType, "manifest"],
    ["a missing manifest", undefined, ErrorCode.Required, "manifest"],
  ])("refuses %s", (_what, value, code, path) => {
    expect(errorsOf(parseManifest(value))).toContainEqual(expect.objectContaining({ code, path }));
  });

  it("accepts two mounts that only share a name prefix", () => {
    const result = parseManifest(withField("secrets", [{ name: "c", mountPath: "/a" }, { name: "d", mountPath: "/ab" }]));
    expect(errorsOf(result)).toEqual([]);
  });

  it("returns every problem at once", () => {
    const result = parseManifest({
      capabilities: ["connector", "connector"],
      egress: [{ host: "core" }, { host: "a.io", port: 65536 }],
      secrets: [{ name: "c", mountPath: "/var" }],
      dataTiers: [""],
      extra: 1,
    });
    expect(errorsOf(result).map((e) => `${e.code} ${e.path}`).sort()).toEqual(
      [
        "duplicate manifest.capabilities[1]",
        "invalid_egress_host manifest.egress[0].host",
        "invalid_port manifest.egress[1].port",
        "reserved_mount_path manifest.secrets[0].mountPath",
        "invalid_data_tier manifest.dataTiers[0]",
        "unknown_field manifest.extra",
      ].sort(),
    );
  });

  it("uses the path it is given", () => {
    expect(errorsOf(parseManifest({ capabilities: [] }, "label"))).toEqual([
      expect.objectContaining({ code: ErrorCode.NoCapability, path: "label.capabilities" }),
    ]);
  });
});

describe("validateMountPath", () => {
  it.each([["/etc/ibkr"], ["/a"], ["/var/lib/x"], ["/var/run/other"], ["/var/run/secretsx"], ["/srv/a.b/c..d"]])(
    "accepts %s",
    (path) => {
      expect(validateMountPath(path, "m")).toEqual([]);
    },
  );

  it.each([
    ["a relative path", "etc/ibkr", ErrorCode.InvalidMountPath],
    ["an empty path", "", ErrorCode.InvalidMountPath],
    ["the root", "/", ErrorCode.InvalidMountPath],
    ["a doubled slash", "/a//b", ErrorCode.InvalidMountPath],
    ["a dot-dot segment", "/a/../b", ErrorCode.InvalidMountPath],
    ["a dot segment", "/a/./b", ErrorCode.InvalidMountPath],
    ["a trailing slash", "/a/", ErrorCode.InvalidMountPath],
    ["a control character", "/a\nb", ErrorCode.InvalidMountPath],
    ["the token root itself", "/var/run/secrets", ErrorCode.ReservedMountPath],
    ["a path under the token root", "/var/run/secrets/x", ErrorCode.ReservedMountPath],
    ["the core token's directory", "/var/run/secrets/openfief", ErrorCode.ReservedMountPath],
    ["/var, which would shadow the tokens", "/var", ErrorCode.ReservedMountPath],
    ["/var/run, which would shadow the tokens", "/var/run", ErrorCode.ReservedMountPath],
    ["/run/secrets, the same directory through the /var/run symlink", "/run/secrets/x", ErrorCode.ReservedMountPath],
    ["a number", 5, ErrorCode.InvalidType],
  ])("refuses %s", (_what, path, code) => {
    expect(validateMountPath(path, "m")).toEqual([expect.objectContaining({ code, path: "m" })]);
  });

  it.each([
    ["/a", "/a/b", true],
    ["/a/b", "/a", true],
    ["/a", "/a", true],
    ["/a", "/ab", false],
    ["/a/b", "/a/c", false],
  ])("says %s and %s overlap: %s", (a, b, expected) => {
    expect(mountPathsOverlap(a, b)).toBe(expected);
  });
});

describe("parsePlugin", () => {
  const plugin = { name: "ibkr-main", spec: { image: IMAGE, manifest, config: { queryId: "123" } } };

  it("accepts a valid plugin and normalizes its manifest", () => {
    const result = parsePlugin(plugin);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.name).toBe("ibkr-main");
    expect(result.value.spec.image).toBe(IMAGE);
    expect(result.value.spec.manifest.egress[0]).toEqual({ host: "gdcdyn.interactivebrokers.com", port: 443 });
    expect(result.value.spec.config).toEqual({ queryId: "123" });
  });

  it("leaves config out when none is given", () => {
    const result = parsePlugin({ name: "x", spec: { image: IMAGE, manifest } });
    expect(result.ok && "config" in result.value.spec).toBe(false);
  });

  it("does not check the config against the schema", () => {
    const result = parsePlugin({ name: "x", spec: { image: IMAGE, manifest, config: { queryId: 5 } } });
    expect(result.ok).toBe(true);
  });

  it.each<[string, unknown, string, string]>([
    ["a name starting with a digit", { ...plugin, name: "1x" }, ErrorCode.InvalidName, "name"],
    ["a name of 57 characters", { ...plugin, name: "a".repeat(57) }, ErrorCode.InvalidName, "name"],
    ["a missing name", { spec: plugin.spec }, ErrorCode.Required, "name"],
    ["a missing spec", { name: "x" }, ErrorCode.Required, "spec"],
    ["an unknown top-level field", { ...plugin, status: {} }, ErrorCode.UnknownField, "status"],
    ["an unknown spec field", { ...plugin, spec: { ...plugin.spec, replicas: 2 } }, ErrorCode.UnknownField, "spec.replicas"],
    ["an image with a tag", { ...plugin, spec: { ...plugin.spec, image: "ghcr.io/x/y:1.4" } }, ErrorCode.TagNotAllowed, "spec.image"],
    ["a missing image", { ...plugin, spec: { manifest } }, ErrorCode.Required, "spec.image"],
    ["a missing manifest", { ...plugin, spec: { image: IMAGE } }, ErrorCode.Required, "spec.manifest"],
    [
      "a bad mount path deep in the manifest",
      { ...plugin, spec: { ...plugin.spec, manifest: withField("secrets", [{ name: "c", mountPath: "/var/run/secrets/x" }]) } },
      ErrorCode.ReservedMountPath,
      "spec.manifest.secrets[0].mountPath",
    ],
    ["a config that is not JSON", { ...plugin, spec: { ...plugin.spec, config: { a: Number.NaN } } }, ErrorCode.InvalidJSON, "spec.config"],
    ["a value that is not an object", "ibkr", ErrorCode.InvalidType, ""],
  ])("refuses %s", (_what, value, code, path) => {
    expect(errorsOf(parsePlugin(value))).toContainEqual(expect.objectContaining({ code, path }));
  });

  it("reports problems in name, image, manifest and config together", () => {
    const result = parsePlugin({ name: "X", spec: { image: "nope", manifest: { capabilities: [] }, config: { a: undefined } } });
    const paths = errorsOf(result).map((e) => e.path);
    expect(paths).toEqual(expect.arrayContaining(["name", "spec.image", "spec.manifest.capabilities", "spec.config"]));
  });
});

describe("parseGrant", () => {
  it("accepts an empty grant, every list empty", () => {
    expect(parseGrant({ name: "ibkr-main", spec: {} })).toEqual({
      ok: true,
      value: { name: "ibkr-main", spec: { capabilities: [], egress: [], secrets: [], dataTiers: [] } },
    });
  });

  it("accepts a full grant and fills in the default port", () => {
    const result = parseGrant({
      name: "ibkr-main",
      spec: { capabilities: ["connector"], egress: [{ host: "a.io" }], secrets: ["creds"], dataTiers: ["t1"] },
    });
    expect(result).toEqual({
      ok: true,
      value: {
        name: "ibkr-main",
        spec: { capabilities: ["connector"], egress: [{ host: "a.io", port: 443 }], secrets: ["creds"], dataTiers: ["t1"] },
      },
    });
  });

  it.each<[string, unknown, string, string]>([
    ["an unknown capability", { name: "x", spec: { capabilities: ["root"] } }, ErrorCode.UnknownCapability, "spec.capabilities[0]"],
    ["a repeated capability", { name: "x", spec: { capabilities: ["view", "view"] } }, ErrorCode.Duplicate, "spec.capabilities[1]"],
    ["a repeated egress host", { name: "x", spec: { egress: [{ host: "a.io", port: 443 }, { host: "a.io" }] } }, ErrorCode.Duplicate, "spec.egress[1]"],
    ["a wildcard egress host", { name: "x", spec: { egress: [{ host: "*.a.io" }] } }, ErrorCode.InvalidEgressHost, "spec.egress[0].host"],
    ["a repeated Secret", { name: "x", spec: { secrets: ["c", "c"] } }, ErrorCode.Duplicate, "spec.secrets[1]"],
    ["a Secret given as an object", { name: "x", spec: { secrets: [{ name: "c" }] } }, ErrorCode.InvalidType, "spec.secrets[0]"],
    ["an invalid Secret name", { name: "x", spec: { secrets: ["-c"] } }, ErrorCode.InvalidSecretName, "spec.secrets[0]"],
    ["a repeated data tier", { name: "x", spec: { dataTiers: ["t", "t"] } }, ErrorCode.Duplicate, "spec.dataTiers[1]"],
    ["an unknown spec field", { name: "x", spec: { configSchema: {} } }, ErrorCode.UnknownField, "spec.configSchema"],
    ["an invalid name", { name: "x_y", spec: {} }, ErrorCode.InvalidName, "name"],
    ["a missing spec", { name: "x" }, ErrorCode.Required, "spec"],
    ["a list that is not a list", { name: "x", spec: { dataTiers: "t" } }, ErrorCode.InvalidType, "spec.dataTiers"],
  ])("refuses %s", (_what, value, code, path) => {
    expect(errorsOf(parseGrant(value))).toContainEqual(expect.objectContaining({ code, path }));
  });
});

describe("the parsers never throw", () => {
  const parsers: [string, (v: unknown) => Result<unknown>][] = [
    ["parseManifest", (v) => parseManifest(v)],
    ["parsePlugin", parsePlugin],
    ["parseGrant", parseGrant],
  ];

  it.each(parsers)("%s returns a result for any value", (_name, parse) => {
    fc.assert(
      fc.property(fc.anything(), (v) => {
        const result = parse(v);
        expect(result.ok || result.errors.length > 0).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it.each(parsers)("%s returns a result for any JSON value", (_name, parse) => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const result = parse(v);
        expect(result.ok || result.errors.length > 0).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it.each(parsers)("%s returns a result for plausible shapes with arbitrary leaves", (_name, parse) => {
    const leaf = fc.oneof(fc.jsonValue(), fc.anything());
    const shape = fc.record(
      {
        name: fc.oneof(fc.constant("ibkr"), leaf),
        spec: fc.record(
          {
            image: fc.oneof(fc.constant(IMAGE), leaf),
            manifest: fc.record({ capabilities: leaf, egress: fc.array(leaf), secrets: fc.array(leaf), configSchema: leaf }, { requiredKeys: [] }),
            capabilities: leaf,
            egress: fc.array(fc.record({ host: leaf, port: leaf }, { requiredKeys: [] })),
            secrets: fc.array(leaf),
            config: leaf,
          },
          { requiredKeys: [] },
        ),
        capabilities: leaf,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(shape, (v) => {
        const result = parse(v);
        expect(result.ok || result.errors.length > 0).toBe(true);
      }),
      { numRuns: 100 },
    );
  });
});

describe("the caps on manifests, plugins and grants", () => {
  const many = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
  const secrets = (n: number): unknown[] => many(n, (i) => ({ name: `s${i}`, mountPath: `/m/s${i}` }));
  const egress = (n: number): unknown[] => many(n, (i) => ({ host: `h${i}.example.com` }));
  const tiers = (n: number): unknown[] => many(n, (i) => `t${i}`);

  it.each<[string, unknown, string]>([
    ["40,000 Secrets", withField("secrets", secrets(40_000)), "manifest.secrets"],
    ["40,000 data tiers", withField("dataTiers", tiers(40_000)), "manifest.dataTiers"],
    ["65 egress hosts", withField("egress", egress(65)), "manifest.egress"],
    ["65 capabilities", withField("capabilities", many(65, () => "connector")), "manifest.capabilities"],
  ])("refuses a manifest with %s, before reading them", (_what, value, path) => {
    expect(errorsOf(parseManifest(value))).toEqual([expect.objectContaining({ code: ErrorCode.TooLarge, path })]);
  });

  it.each<[string, unknown, string]>([
    ["40,000 Secret names", { name: "x", spec: { secrets: many(40_000, (i) => `s${i}`) } }, "spec.secrets"],
    ["160,000 data tiers", { name: "x", spec: { dataTiers: tiers(160_000) } }, "spec.dataTiers"],
    ["65 egress hosts", { name: "x", spec: { egress: egress(65) } }, "spec.egress"],
  ])("refuses a grant with %s, before reading them", (_what, value, path) => {
    expect(errorsOf(parseGrant(value))).toEqual([expect.objectContaining({ code: ErrorCode.TooLarge, path })]);
  });

  it("accepts every list at the cap", () => {
    const m = { capabilities: ["connector", "view"], egress: egress(CAPS.listItems), secrets: secrets(CAPS.listItems), dataTiers: tiers(CAPS.listItems) };
    expect(errorsOf(parseManifest(m))).toEqual([]);
    expect(errorsOf(parseGrant({ name: "x", spec: { ...m, secrets: many(CAPS.listItems, (i) => `s${i}`) } }))).toEqual([]);
  });

  it.each<[string, unknown]>([
    ["larger than the cap", { a: "x".repeat(CAPS.configBytes) }],
    ["nested deeper than the cap", JSON.parse(`${"[".repeat(CAPS.configDepth + 1)}${"]".repeat(CAPS.configDepth + 1)}`)],
  ])("refuses a plugin whose config is %s", (_what, config) => {
    const result = parsePlugin({ name: "x", spec: { image: IMAGE, manifest, config } });
    expect(errorsOf(result)).toContainEqual(expect.objectContaining({ code: ErrorCode.TooLarge }));
  });

  it("refuses a config a million levels deep without overflowing the stack", () => {
    let config: unknown = 1;
    for (let i = 0; i < 1_000_000; i++) config = { a: config };
    expect(errorsOf(parsePlugin({ name: "x", spec: { image: IMAGE, manifest, config } }))).toContainEqual(
      expect.objectContaining({ code: ErrorCode.TooLarge, path: expect.stringMatching(/^spec\.config/) }),
    );
  });

  it("names an unknown field by at most the shown length", () => {
    const key = "k".repeat(1_000_000);
    const [error] = errorsOf(parseManifest({ ...manifest, [key]: 1 }));
    expect(error?.code).toBe(ErrorCode.UnknownField);
    expect((error?.path.length ?? 0) + (error?.message.length ?? 0)).toBeLessThan(4 * CAPS.shownName);
  });

  it("refuses a name of a megabyte without running its pattern over it", () => {
    expect(errorsOf(parseGrant({ name: "a-".repeat(500_000), spec: { secrets: ["a-".repeat(500_000)] } }))).toEqual([
      expect.objectContaining({ code: ErrorCode.InvalidName, path: "name" }),
      expect.objectContaining({ code: ErrorCode.InvalidSecretName, path: "spec.secrets[0]" }),
    ]);
  });
});
