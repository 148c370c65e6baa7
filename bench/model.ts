/**
 * Pure-model benchmark (`npm run bench:model`, or `npx tsx bench/model.ts`): the worst-case
 * times of the validators at the caps of src/plugins/caps.ts, how fast inputs over a cap are
 * refused, and the linear checks against the pairwise ones they replace. Figures, not tests: each
 * is the median (and the slowest) of BENCH_RUNS runs after one warm-up. See bench/README.md.
 *
 *   BENCH_RUNS=5 (runs per figure)
 */
import {
  CAPS,
  emptyCatalog,
  newTrustPolicy,
  parseCatalog,
  parseGrant,
  parseImageRef,
  parseManifest,
  parseManifestLabel,
  parseOwnerSigners,
  validateConfig,
  validateConfigSchema,
} from "../src/plugins/index.js";
import type { JsonValue, SignedImage, VerifiedIdentity } from "../src/plugins/index.js";
import { MountTable, mountPathsOverlap } from "../src/plugins/mount-path.js";

const RUNS = Number(process.env["BENCH_RUNS"] ?? 5);

interface Row {
  readonly what: string;
  readonly outcome: string;
  readonly median: number;
  readonly max: number;
}
const rows: Row[] = [];
const fmt = (ms: number): string => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(ms < 10 ? 2 : 0)} ms`);

/** Times `fn` BENCH_RUNS times after a warm-up; `outcome` describes its answer (so a refusal shows). */
function measure(what: string, fn: () => unknown, outcome: (r: unknown) => string, runs = RUNS): Row {
  let result: unknown = fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    result = fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const row = { what, outcome: outcome(result), median: times[Math.floor(times.length / 2)] as number, max: times[times.length - 1] as number };
  rows.push(row);
  return row;
}

const resultOutcome = (r: unknown): string => {
  const x = r as { ok: boolean; errors?: { code: string; path: string }[] };
  return x.ok ? "accepted" : `refused: ${x.errors?.[0]?.code} at ${x.errors?.[0]?.path || "(root)"}${(x.errors?.length ?? 0) > 1 ? ` (+${(x.errors?.length ?? 1) - 1})` : ""}`;
};
const errorsOutcome = (r: unknown): string => {
  const e = r as { code: string; path: string }[];
  return e.length === 0 ? "accepted" : `refused: ${e[0]?.code} at ${e[0]?.path}${e.length > 1 ? ` (+${e.length - 1})` : ""}`;
};
const configOutcome = (r: unknown): string => {
  const e = r as { code: string }[];
  return e.length === 0 ? "matches" : `${e.length} × ${e[0]?.code}`;
};

// --- inputs at the caps -----------------------------------------------------------------------

const N = CAPS.listItems;
/** A 253-character canonical hostname, different for each i. */
const host = (i: number): string => `h${String(i).padStart(3, "0")}${"x".repeat(53)}.${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.com`;
/** A 253-character Secret name. */
const secretName = (i: number): string => `s${String(i).padStart(3, "0")}${"a".repeat(CAPS.secretName - 4)}`;
/** A mount path of the longest length with the most segments: /m000/a/a/…, 1024 characters. */
const mountPath = (i: number): string => `/m${String(i).padStart(3, "0")}${"/a".repeat((CAPS.mountPath - 5) >> 1)}`.slice(0, CAPS.mountPath);
const tier = (i: number): string => `t${String(i).padStart(3, "0")}${"x".repeat(CAPS.dataTier - 4)}`;

const listsAtCap = {
  capabilities: ["connector", "view"],
  egress: Array.from({ length: N }, (_, i) => ({ host: host(i), port: 65535 })),
  secrets: Array.from({ length: N }, (_, i) => ({ name: secretName(i), mountPath: mountPath(i) })),
  dataTiers: Array.from({ length: N }, (_, i) => tier(i)),
};

// Config schemas at the caps, each the worst of one kind.
const props = (n: number, s: (i: number) => JsonValue): JsonValue => ({ type: "object", properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, s(i)])) });
let deep: JsonValue = { type: "string" };
while (JSON.stringify(deep).length < 3000 && depthOf(deep) < CAPS.schemaDepth - 2) deep = { type: "object", properties: { a: deep } };
function depthOf(v: unknown): number {
  return typeof v === "object" && v !== null ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0;
}
const DFA_BUSTING = "[ab]*a[ab]{900}$";
const SCHEMAS: [string, JsonValue][] = [
  ["1,024 properties, each with three keywords", props(CAPS.schemaKeys, () => ({ type: "string", minLength: 1, maxLength: 9 }))],
  ["an enum of 1,024 strings of 50 characters", { enum: Array.from({ length: CAPS.schemaListItems }, (_, i) => `${i}`.padStart(50, "v")) }],
  ["anyOf with 1,024 branches", { anyOf: Array.from({ length: CAPS.schemaListItems }, (_, i) => ({ const: i })) }],
  ["oneOf with 1,024 object branches", { oneOf: Array.from({ length: CAPS.schemaListItems }, (_, i) => ({ type: "object", required: [`k${i}`] })) }],
  ["1,000 $refs to one definition of 40 properties", { definitions: { d: props(40, () => ({ type: "string" })) }, ...(props(1000, () => ({ $ref: "#/definitions/d" })) as object) }],
  ["nested 62 levels deep", deep],
  ["four patterns of ~900 RE2 instructions (the programs' cap)", { type: "string", allOf: Array.from({ length: 4 }, () => ({ pattern: DFA_BUSTING })) }],
  ["400 patternProperties", { type: "object", patternProperties: Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`^p${i}$`, { type: "string" }])) }],
  ["8,000 values in eight enums of arrays", { anyOf: Array.from({ length: 8 }, (_, j) => ({ enum: Array.from({ length: 330 }, (_, i) => [j, i]) })) }],
  ["2,047 subschemas: oneOf of 682 oneOfs of two (the subschemas' cap)", { oneOf: Array.from({ length: 682 }, () => ({ oneOf: [{}, {}] })) }],
  ["2,047 subschemas: 1,023 properties each with a not", props(1023, () => ({ not: {} }))],
];

// Configs at the caps for the schemas that make checking them costly.
const abString = (n: number): string => {
  let s = "";
  let x = 12345;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    s += x & 1 ? "a" : "b";
  }
  return s;
};
const CONFIGS: [string, JsonValue, JsonValue][] = [
  ["a 64 KiB string against four DFA-busting patterns (the programs' cap)", { type: "string", allOf: Array.from({ length: 4 }, () => ({ pattern: DFA_BUSTING })) }, abString(CAPS.configBytes - 16)],
  ["8,000 small arrays under uniqueItems", { type: "array", uniqueItems: true }, Array.from({ length: 8000 }, (_, i) => [i])],
  ["15 URIs of 4,096 characters (the format cap)", { type: "array", items: { type: "string", format: "uri" } }, Array.from({ length: 15 }, () => `https://example.com/${"a@:".repeat(1358)}`)],
  ["2,000 keys against 400 patternProperties", SCHEMAS[7]?.[1] as JsonValue, Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`p${i}`, "x"]))],
  ["1,024 values under the schema of 1,024 properties", SCHEMAS[0]?.[1] as JsonValue, Object.fromEntries(Array.from({ length: 1024 }, (_, i) => [`p${i}`, "abcdefgh"]))],
];

// --- run --------------------------------------------------------------------------------------

console.log(`# Pure model at the caps (median and slowest of ${RUNS} runs, after a warm-up)\n`);

measure("parseManifest: every list at 64 entries, every string at its longest, no schema", () => parseManifest(listsAtCap), resultOutcome);
measure("parseGrant: every list at 64 entries, every string at its longest", () => parseGrant({ name: "a".repeat(CAPS.pluginName), spec: { ...listsAtCap, secrets: listsAtCap.secrets.map((s) => s.name) } }), resultOutcome);
for (const [what, schema] of SCHEMAS) measure(`validateConfigSchema: ${what} (${(JSON.stringify(schema).length / 1024).toFixed(0)} KiB)`, () => validateConfigSchema(schema, "configSchema"), errorsOutcome);
const biggest = SCHEMAS[0]?.[1] as JsonValue;
const label = JSON.stringify({ ...listsAtCap, configSchema: biggest });
measure(`parseManifestLabel: every list at its cap and 1,024 properties (${(label.length / 1024).toFixed(0)} KiB)`, () => parseManifestLabel(label), resultOutcome);
for (const [what, schema, config] of CONFIGS) measure(`validateConfig: ${what}`, () => validateConfig(schema, config, "config"), configOutcome);

const ci = "https://token.actions.githubusercontent.com";
// The worst signer list the caps allow: patterns that defeat RE2's DFA, sharing the prefix of every subject.
const patternSigners = Math.floor(CAPS.ownerSignerPrograms / 906);
const signersText = JSON.stringify({ signers: Array.from({ length: patternSigners }, (_, i) => ({ name: `s${i}`, issuer: ci, subjectPattern: "x[ab]*a[ab]{900}" })) });
const signers = parseOwnerSigners(signersText);
measure(`parseOwnerSigners: ${patternSigners} signers with ~906-instruction patterns (the programs' cap)`, () => parseOwnerSigners(signersText), resultOutcome);
const catalogText = JSON.stringify({
  plugins: Array.from({ length: CAPS.catalogEntries }, (_, i) => ({ name: `p${i}`, image: `ghcr.io/v/p${i}@sha256:${i.toString(16).padStart(64, "0")}`, publisher: { name: `v${i}`, issuer: ci, subject: `https://github.com/v/p${i}/.github/workflows/r.yml@refs/heads/main` } })),
});
measure(`parseCatalog: ${CAPS.catalogEntries} entries (${(catalogText.length / 1024).toFixed(0)} KiB)`, () => parseCatalog(catalogText), resultOutcome);
if (signers.ok) {
  const policy = newTrustPolicy(emptyCatalog(), signers.value);
  const ids: VerifiedIdentity[] = Array.from({ length: CAPS.verifiedIdentities }, () => ({ kind: "keyless", issuer: ci, subject: `x${abString(CAPS.subject - 1)}` }));
  const image: SignedImage = { digest: `sha256:${"a".repeat(64)}`, identities: ids };
  measure(`TrustPolicy.decide: ${CAPS.verifiedIdentities} subjects of ${CAPS.subject} characters against those ${patternSigners} patterns`, () => policy.decide(image), resultOutcome, 3);
}

const accepted = rows.filter((r) => r.outcome === "accepted" || r.outcome === "matches" || r.outcome.includes("ConfigMismatch") || r.outcome.includes("config_mismatch"));

console.log("| accepted input at the caps | answer | median | slowest |\n| --- | --- | ---: | ---: |");
for (const r of rows) console.log(`| ${r.what} | ${r.outcome} | ${fmt(r.median)} | ${fmt(r.max)} |`);
const slowest = [...accepted].sort((a, b) => b.max - a.max)[0];
if (slowest !== undefined) console.log(`\nThe slowest accepted input: ${slowest.what}, ${fmt(slowest.max)} (median ${fmt(slowest.median)}).\n`);
rows.length = 0;

// --- inputs over the caps: refused, and how fast ------------------------------------------------

const many = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
const over: [string, () => unknown, (r: unknown) => string][] = [
  ["parseManifest: 40,000 Secrets (22 s before the caps)", () => parseManifest({ capabilities: ["connector"], secrets: many(40_000, (i) => ({ name: `s${i}`, mountPath: `/m/${i}` })) }), resultOutcome],
  ["parseGrant: 160,000 data tiers (85 s through apply before)", () => parseGrant({ name: "x", spec: { dataTiers: many(160_000, (i) => `t${i}`) } }), resultOutcome],
  ["validateConfigSchema: an enum of 200,000 items (a minute before)", () => validateConfigSchema({ enum: many(200_000, (i) => i) }, "configSchema"), errorsOutcome],
  ["parseImageRef: a 5 MB reference (threw RangeError before)", () => parseImageRef(`${"a-".repeat(2_500_000)}a@sha256:${"0".repeat(64)}`), resultOutcome],
  ["parseManifestLabel: a 28 MB label", () => parseManifestLabel(`{"capabilities":["connector"],"configSchema":{"description":"${"x".repeat(28_000_000)}"}}`), resultOutcome],
];
console.log("| input over a cap | answer | median | slowest |\n| --- | --- | ---: | ---: |");
for (const [what, fn, outcome] of over) measure(what, fn, outcome, 3);
for (const r of rows) console.log(`| ${r.what} | ${r.outcome} | ${fmt(r.median)} | ${fmt(r.max)} |`);
rows.length = 0;

// --- linear against pairwise, and RE2 against backtracking --------------------------------------

console.log("\n| check | linear (this code) | pairwise or backtracking (before) |\n| --- | ---: | ---: |");
for (const n of [1_000, 10_000, 40_000]) {
  const paths = many(n, (i) => `/m/${i}`);
  const linear = measure("", () => {
    const t = new MountTable();
    return paths.map((p, i) => t.place(p, `m${i}`));
  }, () => "", 3);
  const pairwise = n <= 10_000
    ? measure("", () => paths.map((p, i) => paths.slice(0, i).find((q) => mountPathsOverlap(q, p))), () => "", 1)
    : undefined;
  console.log(`| mount overlap, ${n.toLocaleString("en-US")} mounts | ${fmt(linear.median)} | ${pairwise === undefined ? "(22 s reported)" : fmt(pairwise.median)} |`);
}
const redos = { type: "string", pattern: "^(a+)+$" };
for (const n of [20, 22, 24]) {
  const subject = `${"a".repeat(n)}!`;
  const re2 = measure("", () => validateConfig(redos, subject, "config"), () => "", 3);
  const native = measure("", () => new RegExp("^(a+)+$", "u").test(subject), () => "", 1);
  console.log(`| ^(a+)+$ against ${n} a's and '!' (whole validateConfig / the native RegExp alone) | ${fmt(re2.median)} | ${fmt(native.median)} |`);
}
const thirty = measure("", () => validateConfig(redos, `${"a".repeat(30)}!`, "config"), () => "", 3);
console.log(`| ^(a+)+$ against 30 a's and '!' | ${fmt(thirty.median)} | (doubles per a: about 2^6 × the 24 a's figure) |`);
