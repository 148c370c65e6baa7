/**
 * The model compiles patterns with an RE2 engine it is given, not one it imports (docs/adr/0188):
 * a command that compiles no pattern never loads re2js. A pattern met without the engine is never
 * read as refused (the signer matching nothing, the signer list invalid): the model throws, or the
 * process's loader brings the engine there and then, and the answers are those with it.
 */
import { RE2JS } from "re2js";
import { afterEach, describe, expect, it } from "vitest";
import { parseOwnerSigners } from "./catalog.js";
import { SchemaChecksNotLoaded } from "./schema-check.js";
import { compileRe2, compileSchemaPattern } from "./regex.js";
import { loadPatternEngine, patternEngine, patternEngineLoaded, PatternEngineNotLoaded, providePatternEngineLoader, resetPatternEngineForTests } from "./re2-engine.js";
import { identityMatches, identityProblems } from "./signers.js";
import { emptyCatalog } from "./catalog.js";
import { newTrustPolicy } from "./trust.js";

const GH = "https://token.actions.githubusercontent.com";
const PATTERN = "https://github\\.com/my-org/[^/]+/\\.github/workflows/release\\.yml@refs/heads/main";
const MATCHING = "https://github.com/my-org/app/.github/workflows/release.yml@refs/heads/main";
const SIGNERS = JSON.stringify({ signers: [{ name: "my-org", issuer: GH, subjectPattern: PATTERN }] });
const EXACT = JSON.stringify({ signers: [{ name: "me", issuer: GH, subject: MATCHING }] });

// The test setup gives every file the engine; each test here starts without it.
afterEach(() => resetPatternEngineForTests(RE2JS));

describe("without the engine", () => {
  it("compiles nothing, and says why instead of refusing the pattern", () => {
    resetPatternEngineForTests();
    expect(patternEngineLoaded()).toBe(false);
    expect(() => compileRe2("a+")).toThrow(PatternEngineNotLoaded);
    expect(() => compileSchemaPattern("^[0-9]+$")).toThrow(PatternEngineNotLoaded);
    // The parsers and the read use cases let the schema checks' refusal through and load: this is one.
    expect(new PatternEngineNotLoaded()).toBeInstanceOf(SchemaChecksNotLoaded);
    expect(new PatternEngineNotLoaded().message).toMatch(/RE2 engine is not loaded/);
  });

  it("throws through the functions that never throw otherwise, rather than failing closed", () => {
    resetPatternEngineForTests();
    expect(() => parseOwnerSigners(SIGNERS)).toThrow(PatternEngineNotLoaded);
    expect(() => identityProblems({ issuer: GH, subjectPattern: PATTERN }, "")).toThrow(PatternEngineNotLoaded);
    expect(() => identityMatches({ issuer: GH, subjectPattern: PATTERN }, { kind: "keyless", issuer: GH, subject: MATCHING })).toThrow(PatternEngineNotLoaded);
  });

  it("is not needed for signers without a pattern", () => {
    resetPatternEngineForTests();
    const signers = parseOwnerSigners(EXACT);
    expect(signers.ok).toBe(true);
    if (!signers.ok) return;
    const policy = newTrustPolicy(emptyCatalog(), signers.value);
    expect(policy.decide({ digest: `sha256:${"a".repeat(64)}`, identities: [{ kind: "keyless", issuer: GH, subject: MATCHING }] }).ok).toBe(true);
    expect(patternEngineLoaded()).toBe(false);
  });
});

describe("with a loader registered", () => {
  it("loads the engine on the first pattern only, once, and answers as with it", () => {
    resetPatternEngineForTests();
    let loads = 0;
    providePatternEngineLoader(() => {
      loads++;
      return RE2JS;
    });
    expect(parseOwnerSigners(EXACT).ok).toBe(true);
    expect(loads).toBe(0);
    const withLoader = parseOwnerSigners(SIGNERS);
    expect(loads).toBe(1);
    expect(identityMatches({ issuer: GH, subjectPattern: PATTERN }, { kind: "keyless", issuer: GH, subject: MATCHING })).toBe(true);
    expect(identityMatches({ issuer: GH, subjectPattern: PATTERN }, { kind: "keyless", issuer: GH, subject: `${MATCHING}x` })).toBe(false);
    expect(loads).toBe(1);
    resetPatternEngineForTests(RE2JS);
    expect(withLoader).toEqual(parseOwnerSigners(SIGNERS));
  });
});

describe("loaded ahead", () => {
  it("by import(), once", async () => {
    resetPatternEngineForTests();
    const engine = await loadPatternEngine();
    expect(patternEngineLoaded()).toBe(true);
    expect(patternEngine()).toBe(engine);
    expect(await loadPatternEngine()).toBe(engine);
    expect(compileRe2("a+").ok).toBe(true);
  });
});
