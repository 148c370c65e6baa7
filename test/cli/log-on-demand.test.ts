/**
 * The log's commands (`log`, `log --plugin`, `replay`, `verify-log`) start without the
 * config-schema checks or the RE2 engine (ADR 0188, 0189): on the demo the log's own verdicts
 * vouch for every schema they parse, so they load neither, and print exactly what they print with
 * both loaded. A schema nothing vouches for loads the checks, and the answer is the same.
 * `check-decisions` is the audit: it loads the checks on every log and re-checks every schema.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RE2JS } from "re2js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSchemaChecks, patternEngineLoaded, resetPatternEngineForTests, resetSchemaChecksForTests, schemaChecksLoaded } from "../../src/plugins/index.js";
import type { SchemaChecks } from "../../src/plugins/index.js";
import { ok, openfief, ROOT } from "../e2e/support.js";

const COMMANDS: readonly (readonly string[])[] = [
  ["log"],
  ["log", "--plugin", "nbp-fx"],
  ["log", "--plugin", "ecb-fx", "--json"],
  ["replay", "--at", "10"],
  ["verify-log"],
];

let dir: string;
let data: string[];
let checks: SchemaChecks;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openfief-log-on-demand-"));
  data = ["--data", join(dir, "data")];
  checks = await loadSchemaChecks();
  await ok(["apply", "-f", join(ROOT, "examples", "plugins"), ...data]);
  await ok(["reconcile", ...data, "--oci-layout", join(ROOT, "examples", "oci"), "--trusted-signers", join(ROOT, "examples", "trusted-signers.json")]);
}, 60_000);
afterAll(() => {
  resetSchemaChecksForTests(checks);
  resetPatternEngineForTests(RE2JS);
  rmSync(dir, { recursive: true, force: true });
});

/** The command's exit code and output, as a fresh process would start it: nothing of the checks loaded. */
async function fresh(args: readonly string[]) {
  resetSchemaChecksForTests();
  // As the CLI registers it: RE2 loads on the first pattern compiled, if any.
  resetPatternEngineForTests(undefined, () => RE2JS);
  const r = await openfief([...args, ...data]);
  return { r, loaded: { checks: schemaChecksLoaded(), re2: patternEngineLoaded() } };
}

/** The same with the checks (and RE2) loaded, as before. */
async function loaded(args: readonly string[]) {
  resetSchemaChecksForTests(checks);
  resetPatternEngineForTests(RE2JS);
  return openfief([...args, ...data]);
}

describe("on the demo, whose log vouches for every schema", () => {
  it.each(COMMANDS.map((c) => [c.join(" "), c] as const))("`%s` loads neither the schema checks nor RE2, and says the same", async (_name, args) => {
    const before = await loaded(args);
    expect(before.code).toBe(0);
    const { r, loaded: what } = await fresh(args);
    expect(what).toEqual({ checks: false, re2: false });
    expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code: before.code, stdout: before.stdout, stderr: before.stderr });
  }, 30_000);
});

describe("check-decisions, the audit", () => {
  it.each([["check-decisions"], ["check-decisions", "--json"]])("`%s` loads the schema checks even where the log vouches, and says the same", async (...args) => {
    const before = await loaded(args);
    expect(before.code).toBe(0);
    const { r, loaded: what } = await fresh(args);
    expect(what.checks).toBe(true);
    expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code: before.code, stdout: before.stdout, stderr: before.stderr });
  }, 30_000);
});

describe("a spec nothing vouches for", () => {
  it("loads the checks, and `log --plugin` and `check-decisions` answer as with them", async () => {
    const other = ["--data", join(dir, "unvouched")];
    // Applied, never reconciled: no config or signature verdict names its schema.
    await ok(["apply", "-f", join(ROOT, "examples", "plugins", "nbp-fx.yaml"), ...other]);
    for (const args of [["log", "--plugin", "nbp-fx"], ["check-decisions", "--json"]]) {
      resetSchemaChecksForTests(checks);
      const before = await openfief([...args, ...other]);
      resetSchemaChecksForTests();
      const after = await openfief([...args, ...other]);
      expect(schemaChecksLoaded()).toBe(true);
      expect({ code: after.code, stdout: after.stdout, stderr: after.stderr }).toEqual({ code: before.code, stdout: before.stdout, stderr: before.stderr });
    }
  }, 30_000);
});
