/**
 * "Never throws" is the contract of every export of the model that takes outside input: a
 * parser returns a Result, a check a list of FieldErrors, a decider a verdict, whatever it is
 * given (arbitrary values and JSON, multi-megabyte strings, wrong types, values nested a hundred
 * thousand levels deep, proxies whose every read throws). A bounded number of cases runs in
 * `npm test`; `npm run fuzz` runs many more (`FUZZ_RUNS`, default there 100000).
 *
 * Not fuzzed, because they take only what the model itself made (a Workload, a plan, effective
 * egress, a parsed manifest): buildObjects, listObjects, objectToJSON(s), rolloutPlanToJSON,
 * sameRolloutPlan, manifestToJSON, canonicalManifest, encodeAllowLists, manifestEqual, jsonEqual,
 * formatErrors, the rule algebra over parsed rules (intersectRules, uncoveredRules, sortRules, …),
 * scopeObjects, and the name helpers (serviceAccountName, egressKey, …).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CAPS,
  ErrorCode,
  TrustPolicy,
  allowListFromHosts,
  coreSubjectProblems,
  decideEgress,
  decodeAllowLists,
  decodeHostedPlugins,
  effective,
  emptyCatalog,
  identityMatches,
  isCanonicalHostname,
  isJsonValue,
  isValidPluginName,
  jsonLimitProblem,
  mountPathsOverlap,
  needsApproval,
  newTrustPolicy,
  parseCatalog,
  parseEgressHost,
  parseGrant,
  parseImageRef,
  parseManifest,
  parseManifestLabel,
  parseOwnerSigners,
  parsePlugin,
  planRollout,
  pluginForServiceAccount,
  validateConfig,
  validateConfigSchema,
  validateDataTier,
  validateMountPath,
  validatePluginName,
  validateSecretName,
  validateTopology,
  compile,
  parsePolicyRule,
  parsePolicyRules,
  parseUiBundle,
  verbMatches,
  apiGroupMatches,
  resourceMatches,
  resourceNameMatches,
  nonResourceURLMatches,
} from "./index.js";
import type { AllowLists, FieldError, GrantSpec, JsonValue, Manifest, Result, RolloutInput, SignedImage, Topology, VerifiedIdentity ,
  EffectivePermissions} from "./index.js";
import type { PolicyRule, SignerIdentity } from "./index.js";

const FUZZ_RUNS = Number(process.env["FUZZ_RUNS"] ?? 100);
/** Runs for a property, scaled by how costly one case is. */
const runs = (weight = 1): { numRuns: number } => ({ numRuns: Math.max(10, Math.round(FUZZ_RUNS * weight)) });

// --- what is thrown at them -------------------------------------------------------------------

const MEGA = 5_000_000;
const HUGE_STRINGS = [
  "a".repeat(MEGA),
  `${"a-".repeat(MEGA / 2)}a@sha256:${"0".repeat(64)}`,
  "{".repeat(MEGA),
  "[".repeat(MEGA),
  `"${"\\u0000".repeat(MEGA / 6)}"`,
  "é".repeat(MEGA / 2),
  `/${"a/".repeat(MEGA / 2)}`,
  `${"x.".repeat(MEGA / 2)}com`,
  `{"capabilities":["connector"],"secrets":[${Array.from({ length: 40_000 }, (_, i) => `{"name":"s${i}","mountPath":"/m/${i}"}`).join(",")}]}`,
  `{"signers":[${Array.from({ length: 2000 }, (_, i) => `{"name":"s${i}","issuer":"https://x.example","subjectPattern":"(a+)+$"}`).join(",")}]}`,
  `system:serviceaccount:openfief:plugin-${"a".repeat(MEGA)}`,
];

function deep(levels: number, wrap: (v: unknown) => unknown): unknown {
  let v: unknown = null;
  for (let i = 0; i < levels; i++) v = wrap(v);
  return v;
}
const DEEP_VALUES = [
  deep(100_000, (v) => [v]),
  deep(100_000, (v) => ({ a: v })),
  deep(100_000, (v) => ({ not: v })),
  deep(100_000, (v) => ({ properties: { a: v } })),
  { capabilities: ["connector"], configSchema: deep(100_000, (v) => ({ allOf: [v] })) },
  { name: "x", spec: { config: deep(100_000, (v) => [v]) } },
];

// Every read of a string key throws; symbol keys behave, so fast-check can still clone and print it.
const boom = (key: string | symbol): boolean => {
  if (typeof key === "string") throw new Error(`read ${key}`);
  return false;
};
const throwing = new Proxy(
  {},
  {
    get: (_t, key) => (boom(key) ? undefined : undefined),
    has: (_t, key) => boom(key),
    ownKeys: () => {
      throw new Error("ownKeys");
    },
    getOwnPropertyDescriptor: (_t, key) => (boom(key) ? undefined : undefined),
  },
);
const getter = Object.defineProperty({}, "capabilities", {
  enumerable: true,
  get: () => {
    throw new Error("getter");
  },
});
const WIDE = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]));
const HOSTILE_OBJECTS: unknown[] = [throwing, getter, WIDE, new Array(10_000_000), Object.create(null), [throwing], { a: throwing }];

/**
 * JSON text of `v`, or "" for what JSON.stringify refuses (a BigInt, a cycle, a throwing read).
 * Huge strings and lists are cut to a little over the largest cap, which keeps them over it
 * without spending the run on writing megabytes.
 */
function text(v: unknown): string {
  try {
    const cut = (_k: string, x: unknown): unknown =>
      typeof x === "string" && x.length > 300_000 ? x.slice(0, 300_000) : Array.isArray(x) && x.length > 70_000 ? x.slice(0, 70_000) : x;
    return JSON.stringify(v, cut) ?? "";
  } catch {
    return "";
  }
}

const hugeArb = fc.constantFrom(...HUGE_STRINGS);
const deepArb = fc.constantFrom(...DEEP_VALUES);
const hostileArb = fc.constantFrom(...HOSTILE_OBJECTS);
const anythingArb = fc.anything({ withBigInt: true, withMap: true, withSet: true, withNullPrototype: true, withTypedArray: true, withSparseArray: true, withBoxedValues: true, withDate: true });
const leaf: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 2, arbitrary: anythingArb },
  { weight: 1, arbitrary: hugeArb },
  { weight: 1, arbitrary: hostileArb },
  fc.constantFrom("connector", "view", "api.example.com", "/etc/x", "/run/secrets/x", "(a+)+$", `ghcr.io/x/y@sha256:${"a".repeat(64)}`, "#", "https://x.example"),
);
const value: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue() },
  { weight: 3, arbitrary: anythingArb },
  { weight: 1, arbitrary: hugeArb },
  { weight: 1, arbitrary: deepArb },
  { weight: 1, arbitrary: hostileArb },
);

const anyList = fc.oneof(fc.array(leaf, { maxLength: 5 }), leaf);
const manifestShape = fc.record({ capabilities: anyList, egress: fc.oneof(fc.array(fc.record({ host: leaf, port: leaf }, { requiredKeys: [] }), { maxLength: 3 }), leaf), secrets: fc.oneof(fc.array(fc.record({ name: leaf, mountPath: leaf }, { requiredKeys: [] }), { maxLength: 3 }), leaf), dataTiers: anyList, configSchema: leaf, rbac: fc.oneof(fc.array(fc.record({ apiGroups: anyList, resources: anyList, verbs: anyList, resourceNames: anyList, nonResourceURLs: anyList }, { requiredKeys: [] }), { maxLength: 3 }), leaf), ui: fc.oneof(fc.record({ bundle: leaf, entry: leaf }, { requiredKeys: [] }), leaf) }, { requiredKeys: [] });
const grantShape = fc.record({ capabilities: anyList, egress: anyList, secrets: anyList, dataTiers: anyList, rbac: anyList }, { requiredKeys: [] });
const schemaShape: fc.Arbitrary<unknown> = fc.letrec<{ s: unknown }>((tie) => ({
  s: fc.oneof(
    { depthSize: "small" },
    leaf,
    fc.record(
      {
        type: fc.constantFrom("object", "string", "array", "number"),
        pattern: fc.constantFrom("^(a+)+$", "(?=a)", "a{1000}a{1000}", "\\p{Letter}", "[^\\S]", "^[a-z]+$"),
        properties: fc.dictionary(fc.constantFrom("a", "b", "$ref", "pattern"), tie("s"), { maxKeys: 3 }),
        items: tie("s"),
        allOf: fc.array(tie("s"), { maxLength: 2 }),
        $ref: fc.constantFrom("#", "#/properties/a", "#/enum/0", "https://evil.example/x", "#/definitions/d", "#x"),
        $id: fc.constantFrom("https://vendor.example/s.json", "#x", "http://json-schema.org/draft-07/schema", "other.json"),
        enum: fc.array(leaf, { maxLength: 3 }),
        uniqueItems: fc.boolean(),
        definitions: fc.dictionary(fc.constantFrom("d", "e"), tie("s"), { maxKeys: 2 }),
      },
      { requiredKeys: [] },
    ),
  ),
})).s;
const identityShape = fc.oneof(leaf, fc.record({ kind: fc.oneof(fc.constantFrom("keyless", "key"), leaf), issuer: fc.oneof(fc.constant("https://token.actions.githubusercontent.com"), leaf), subject: leaf, publicKey: leaf }, { requiredKeys: [] }));
const signerShape = fc.oneof(leaf, fc.record({ issuer: fc.oneof(fc.constant("https://token.actions.githubusercontent.com"), leaf), subject: leaf, subjectPattern: leaf, publicKey: leaf }, { requiredKeys: [] }));
const topologyShape = fc.oneof(leaf, fc.record({ core: fc.oneof(leaf, fc.record({ clusterIP: leaf, port: leaf, podPort: leaf, podLabels: leaf }, { requiredKeys: [] })), proxy: leaf, pluginPort: leaf, coreSubject: leaf }, { requiredKeys: [] }));

// --- what a value must be ---------------------------------------------------------------------

const CODES = new Set<string>(Object.values(ErrorCode));

function isFieldError(e: unknown): e is FieldError {
  if (typeof e !== "object" || e === null) return false;
  const { code, path, message } = e as Record<string, unknown>;
  // Bounded too: no error repeats a multi-megabyte input back.
  return typeof code === "string" && CODES.has(code) && typeof path === "string" && path.length < 20_000 && typeof message === "string" && message.length <= 1000;
}

function expectErrors(errors: unknown): void {
  expect(Array.isArray(errors) && (errors as unknown[]).every(isFieldError)).toBe(true);
}

/** The plugin-host decoder's answer as a Result: its errors when it has any. */
function asResult(d: ReturnType<typeof decodeHostedPlugins>): Result<unknown> {
  return d.errors.length > 0 ? { ok: false, errors: d.errors } : { ok: true, value: d.plugins };
}

function expectResult(r: unknown): void {
  const result = r as Result<unknown>;
  expect(typeof result === "object" && result !== null).toBe(true);
  if (result.ok) expect("value" in result).toBe(true);
  else {
    expect(result.errors.length).toBeGreaterThan(0);
    expectErrors(result.errors);
  }
}

const GRANT_ALL: GrantSpec = { capabilities: ["connector", "view"], egress: [], secrets: [], dataTiers: [] };
const MANIFEST: Manifest = { capabilities: ["connector"], egress: [], secrets: [], dataTiers: [] };
const PERMISSIONS = ((): EffectivePermissions => {
  const e = effective(MANIFEST, GRANT_ALL);
  if (!e.ok) throw new Error("effective");
  return e.value;
})();
const IMAGE = ((): NonNullable<ReturnType<typeof parseImageRef> & { ok: true }>["value"] => {
  const r = parseImageRef(`ghcr.io/x/y@sha256:${"a".repeat(64)}`);
  if (!r.ok) throw new Error("image");
  return r.value;
})();
const POLICY = newTrustPolicy(emptyCatalog(), []);

// --- the properties ---------------------------------------------------------------------------

describe("every parser returns a Result", () => {
  it.each<[string, (v: unknown) => unknown, number]>([
    ["parseManifest", (v) => parseManifest(v), 1],
    ["parsePlugin", (v) => parsePlugin(v), 1],
    ["parseGrant", (v) => parseGrant(v), 1],
    ["parseManifestLabel", (v) => parseManifestLabel(v as string), 1],
    ["parseImageRef", (v) => parseImageRef(v), 1],
    ["parseEgressHost", (v) => parseEgressHost(v, "e"), 1],
    ["parseCatalog", (v) => parseCatalog(v as string), 1],
    ["parseOwnerSigners", (v) => parseOwnerSigners(v as string), 1],
    ["decodeAllowLists", (v) => decodeAllowLists(v), 1],
    ["decodeHostedPlugins", (v) => asResult(decodeHostedPlugins(v)), 1],
    ["allowListFromHosts", (v) => allowListFromHosts(v as never), 1],
    ["pluginForServiceAccount", (v) => pluginForServiceAccount(v as string), 1],
  ])("%s, given anything", (_name, parse, weight) => {
    fc.assert(fc.property(value, (v) => {
        expectResult(parse(v));
      }), runs(weight));
  });

  it.each<[string, (v: unknown) => unknown]>([
    ["parseManifest", (v) => parseManifest(v)],
    ["parsePlugin", (v) => parsePlugin({ name: "x", spec: { image: `ghcr.io/x/y@sha256:${"a".repeat(64)}`, manifest: v, config: v } })],
    ["parseGrant", (v) => parseGrant({ name: "x", spec: v })],
    ["parseManifestLabel", (v) => parseManifestLabel(text(v))],
  ])("%s, given plausible shapes with hostile leaves", (_name, parse) => {
    fc.assert(fc.property(manifestShape, (v) => {
        expectResult(parse(v));
      }), runs(0.5));
  });

  it.each<[string, (v: unknown) => unknown]>([
    ["parseCatalog", (v) => parseCatalog(text({ plugins: [{ name: "x", image: v, publisher: v }] }))],
    ["parseOwnerSigners", (v) => parseOwnerSigners(text({ signers: [v] }))],
    ["decodeAllowLists", (v) => decodeAllowLists({ p: v, "bad key": v })],
    ["decodeHostedPlugins", (v) => asResult(decodeHostedPlugins({ p: typeof v === "string" ? v : text(v), "bad key": v }))],
  ])("%s, given plausible files with hostile entries", (_name, parse) => {
    fc.assert(fc.property(signerShape, (v) => {
        expectResult(parse(v));
      }), runs(0.5));
  });
});

describe("the view parsers return a value or null, and field errors", () => {
  it.each<[string, (v: unknown, errors: FieldError[]) => unknown]>([
    ["parsePolicyRules", (v, e) => parsePolicyRules(v, "rbac", e)],
    ["parsePolicyRule", (v, e) => parsePolicyRule(v, "rbac[0]", e)],
    ["parseUiBundle", (v, e) => parseUiBundle(v, "ui", e)],
  ])("%s, given anything", (_name, parse) => {
    fc.assert(
      fc.property(fc.oneof(value, manifestShape.map((m) => (m as Record<string, unknown>)["rbac"])), (v) => {
        const errors: FieldError[] = [];
        const r = parse(v, errors);
        expectErrors(errors);
        expect(r === null || r === undefined || typeof r === "object").toBe(true);
      }),
      runs(),
    );
  });

  it("the rule matchers, given any request's strings", () => {
    const errors: FieldError[] = [];
    const rule = parsePolicyRule({ apiGroups: ["", "apps"], resources: ["pods", "deployments/scale", "*/status"], verbs: ["get", "list"], resourceNames: ["a"] }, "r", errors) as PolicyRule;
    const url = parsePolicyRule({ verbs: ["get"], nonResourceURLs: ["/healthz", "/api/*"] }, "r", errors) as PolicyRule;
    expect(errors).toEqual([]);
    fc.assert(
      // The gateway hands them the strings of a parsed request: any string, of any size.
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), hugeArb), fc.oneof(fc.string(), hugeArb), (a, b) => {
        const answers = [verbMatches(rule, a as string), apiGroupMatches(rule, a as string), resourceMatches(rule, a as string, b as string), resourceNameMatches(rule, a as string), nonResourceURLMatches(url, a as string)];
        expect(answers.every((x) => typeof x === "boolean")).toBe(true);
      }),
      runs(),
    );
  });
});

describe("every check returns a list of field errors", () => {
  it.each<[string, (v: unknown) => unknown]>([
    ["validatePluginName", (v) => validatePluginName(v, "n")],
    ["validateSecretName", (v) => validateSecretName(v, "n")],
    ["validateDataTier", (v) => validateDataTier(v, "n")],
    ["validateMountPath", (v) => validateMountPath(v, "n")],
    ["coreSubjectProblems", (v) => coreSubjectProblems(v, "n")],
    ["validateTopology", (v) => validateTopology(v as Topology)],
  ])("%s, given anything", (_name, check) => {
    fc.assert(fc.property(value, (v) => {
        expectErrors(check(v));
      }), runs());
  });

  it("validateTopology, given plausible shapes with hostile leaves", () => {
    fc.assert(fc.property(topologyShape, (v) => {
        expectErrors(validateTopology(v as Topology));
      }), runs());
  });

  it("validateConfigSchema, given anything", () => {
    fc.assert(fc.property(value, (v) => {
        expectErrors(validateConfigSchema(v, "s"));
      }), runs(0.3));
  });

  it("validateConfigSchema, given plausible schemas with hostile parts", () => {
    fc.assert(fc.property(schemaShape, (v) => {
        expectErrors(validateConfigSchema(v, "s"));
      }), runs(0.3));
  });

  it("validateConfig, given a plausible schema and any config", () => {
    fc.assert(fc.property(schemaShape, value, (s, c) => {
        expectErrors(validateConfig(s as JsonValue, c as JsonValue, "c"));
      }), runs(0.3));
  });

  it("jsonLimitProblem, given anything", () => {
    fc.assert(
      fc.property(value, (v) => {
        const p = jsonLimitProblem(v, "v", "the value", { bytes: 1000, depth: 8 });
        expect(p === undefined || isFieldError(p)).toBe(true);
      }),
      runs(),
    );
  });
});

describe("every predicate returns a boolean", () => {
  it.each<[string, (a: unknown, b: unknown) => unknown]>([
    ["isValidPluginName", (a) => isValidPluginName(a)],
    ["isCanonicalHostname", (a) => isCanonicalHostname(a)],
    ["isJsonValue", (a) => isJsonValue(a)],
    ["mountPathsOverlap", (a, b) => mountPathsOverlap(a as string, b as string)],
  ])("%s, given anything", (_name, predicate) => {
    fc.assert(fc.property(value, value, (a, b) => {
        expect(typeof predicate(a, b)).toBe("boolean");
      }), runs());
  });

  it("identityMatches, given any signer and any verified identity", () => {
    fc.assert(fc.property(fc.oneof(signerShape, value), fc.oneof(identityShape, value), (s, v) => {
        expect(typeof identityMatches(s as SignerIdentity, v as VerifiedIdentity)).toBe("boolean");
      }), runs());
  });
});

describe("every decider returns a verdict", () => {
  it("TrustPolicy.decide, given any image and any declared manifest", () => {
    const imageShape = fc.oneof(value, fc.record({ digest: fc.oneof(fc.constant(`sha256:${"a".repeat(64)}`), leaf), identities: fc.oneof(fc.array(identityShape, { maxLength: 4 }), leaf), manifest: fc.oneof(manifestShape, leaf) }, { requiredKeys: [] }));
    fc.assert(fc.property(imageShape, fc.oneof(fc.constant(undefined), manifestShape, value), (img, declared) => {
        expectResult(POLICY.decide(img as SignedImage, declared as Manifest));
      }), runs());
  });

  it("newTrustPolicy, given any catalog and owner signers", () => {
    fc.assert(fc.property(value, fc.oneof(value, fc.array(fc.record({ name: leaf, kind: leaf, identity: signerShape }, { requiredKeys: [] }), { maxLength: 3 })), (c, o) => {
        expect(newTrustPolicy(c as never, o as never)).toBeInstanceOf(TrustPolicy);
      }), runs());
  });

  it("effective, given any manifest and grant", () => {
    fc.assert(fc.property(fc.oneof(manifestShape, value), fc.oneof(grantShape, value), (m, g) => {
        expectResult(effective(m as Manifest, g as GrantSpec));
      }), runs());
  });

  it("needsApproval, given any manifest and grant", () => {
    fc.assert(
      fc.property(fc.oneof(manifestShape, value), fc.oneof(grantShape, value), (m, g) => {
        const p = needsApproval(m as Manifest, g as GrantSpec);
        expect([p.capabilities, p.egress, p.secrets, p.dataTiers].every(Array.isArray)).toBe(true);
      }),
      runs(),
    );
  });

  it("planRollout, given any input", () => {
    const version = fc.oneof(leaf, fc.record({ image: fc.oneof(fc.constant(IMAGE), leaf), manifest: fc.oneof(manifestShape, leaf), config: leaf }, { requiredKeys: [] }));
    const input = fc.oneof(value, fc.record({ current: version, currentDeployable: leaf, previous: version, grant: fc.oneof(grantShape, leaf) }, { requiredKeys: [] }));
    fc.assert(
      fc.property(input, (i) => {
        const plan = planRollout(i as RolloutInput);
        expect(["current", "previous", "none"]).toContain(plan.outcome);
        expect(Array.isArray(plan.reasons)).toBe(true);
      }),
      runs(),
    );
  });

  it("compile, given any plugin, permissions and topology", () => {
    const plugin = fc.oneof(value, fc.record({ name: fc.oneof(fc.constant("p1"), leaf), image: fc.oneof(fc.constant(IMAGE), leaf), config: leaf }, { requiredKeys: [] }));
    fc.assert(fc.property(plugin, fc.oneof(fc.constant(PERMISSIONS), value), topologyShape, (p, e, t) => {
        expectResult(compile(p as never, e as EffectivePermissions, t as Topology));
      }), runs());
  });

  it("decideEgress, given any lists, plugin, host and port", () => {
    const lists = decodeAllowLists({ p: "a.example.com:443\n" });
    const known = lists.ok ? lists.value : null;
    fc.assert(
      fc.property(fc.oneof(fc.constant(known), value), value, value, value, (l, plugin, host, port) => {
        const d = decideEgress(l as AllowLists, plugin as string, host as string, port as number);
        expect(typeof d.allowed === "boolean" && ["listed", "not_listed", "no_allow_list"].includes(d.reason)).toBe(true);
        if (known !== null && l === known) expect(d.allowed).toBe(plugin === "p" && host === "a.example.com" && port === 443);
      }),
      runs(),
    );
  });
});

describe("the hostile values themselves", () => {
  // Guards the fuzz suite: the inputs it relies on are as large and as deep as it says.
  it("include strings of megabytes, values 100,000 levels deep, and reads that throw", () => {
    expect(HUGE_STRINGS.filter((s) => s.length >= MEGA / 2).length).toBeGreaterThan(5);
    expect(isJsonValue(DEEP_VALUES[0])).toBe(false);
    expect(() => Object.keys(throwing)).toThrow();
    expect(HUGE_STRINGS[8]?.length).toBeGreaterThan(CAPS.manifestLabelBytes);
  });
});

describe("errors about unknown fields", () => {
  const key = "k".repeat(1_000_000);
  it.each<[string, () => readonly FieldError[]]>([
    ["parseManifest", () => { const r = parseManifest({ capabilities: ["connector"], [key]: 1 }); return r.ok ? [] : r.errors; }],
    ["parsePolicyRule", () => { const e: FieldError[] = []; parsePolicyRule({ verbs: ["get"], nonResourceURLs: ["/x"], [key]: 1 }, "r", e); return e; }],
    ["parseUiBundle", () => { const e: FieldError[] = []; parseUiBundle({ bundle: `sha256:${"a".repeat(64)}`, [key]: 1 }, "ui", e); return e; }],
    ["parseManifestLabel", () => { const r = parseManifestLabel(JSON.stringify({ capabilities: ["connector"], ["k".repeat(100_000)]: 1 })); return r.ok ? [] : r.errors; }],
  ])("%s names a megabyte-long unknown field by a short prefix", (_name, errorsOf) => {
    const errors = errorsOf();
    expect(errors.some((e) => e.code === ErrorCode.UnknownField)).toBe(true);
    expect(errors.every((e) => e.path.length + e.message.length < 4 * CAPS.shownName)).toBe(true);
  });
});
