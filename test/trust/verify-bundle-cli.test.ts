import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { register } from "../../src/cli/commands/verify-bundle.js";
import { runCli } from "./run-cli.js";

const CASES = fileURLToPath(new URL("../fixtures/sigstore/cases/", import.meta.url));

interface Expect {
  result: "pass" | "fail";
  issuer: string | null;
  subject: string | null;
  subjectRegexp?: string;
  key: string | null;
}

function argsFor(name: string): string[] {
  const dir = CASES + name + "/";
  const e = JSON.parse(readFileSync(dir + "expect.json", "utf8")) as Expect;
  const args = ["verify-bundle", "--bundle", dir + "bundle.json", "--trusted-root", dir + "trusted_root.json", "--json"];
  if (existsSync(dir + "artifact")) args.push("--artifact", dir + "artifact");
  else args.push("--digest", readFileSync(dir + "digest", "utf8").trim());
  if (e.key !== null) args.push("--key", dir + e.key);
  else {
    args.push("--issuer", e.issuer ?? "");
    if (e.subjectRegexp !== undefined) args.push("--subject-regexp", e.subjectRegexp);
    else args.push("--subject", e.subject ?? "");
  }
  return args;
}

const cases = readdirSync(CASES).sort();

describe("openfief verify-bundle over the shared Sigstore cases", () => {
  it("has all 40 cases", () => {
    expect(cases).toHaveLength(40);
  });

  it.each(cases)("reaches the expected result for %s", async (name) => {
    const e = JSON.parse(readFileSync(`${CASES}${name}/expect.json`, "utf8")) as Expect;
    const run = await runCli(argsFor(name), [register]);
    const verdict = JSON.parse(run.stdout) as { ok: boolean; reason?: string };
    expect(verdict.ok).toBe(e.result === "pass");
    expect(run.code).toBe(e.result === "pass" ? 0 : 1);
    if (!verdict.ok) expect(verdict.reason).toMatch(/^[a-z_]+$/);
  });

  it.each([
    ["the library's missing-validity-start root", "trust-root-tlog-missing-validity-start_fail", "trust_root_invalid"],
    ["a subject that is only a prefix", "identity-subject-prefix_fail", "subject_mismatch"],
    ["a pattern that matches only part of the subject", "identity-regexp-partial_fail", "subject_mismatch"],
    ["a key identity over a keyless bundle", "identity-key-for-keyless-bundle_fail", "key_required"],
    ["a DSSE subject for another digest", "local-key-dsse-wrong-digest_fail", "subject_digest_mismatch"],
    ["another issuer", "identity-wrong-issuer_fail", "issuer_mismatch"],
    ["malformed JSON", "bundle-malformed-json_fail", "bundle_invalid"],
  ])("refuses %s with its own reason code", async (_what, name, reason) => {
    const run = await runCli(argsFor(name), [register]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, reason });
  });

  it("prints a one-line verdict without --json", async () => {
    const args = argsFor("happy-path-v0.3").filter((a) => a !== "--json");
    const run = await runCli(args, [register]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      "verified: keyless issuer=https://token.actions.githubusercontent.com subject=https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main\n",
    );
  });

  it("prints the reason code on one line when refused", async () => {
    const args = argsFor("identity-wrong-issuer_fail").filter((a) => a !== "--json");
    const run = await runCli(args, [register]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^refused: issuer_mismatch: .*\n$/);
  });

  it.each([
    ["no bundle", ["verify-bundle", "--digest", "sha256:" + "a".repeat(64), "--trusted-root", "x", "--key", "k"]],
    ["both artifact and digest", ["verify-bundle", "--bundle", "b", "--artifact", "a", "--digest", "sha256:" + "a".repeat(64), "--trusted-root", "x", "--key", "k"]],
    ["both key and issuer", ["verify-bundle", "--bundle", "b", "--digest", "sha256:" + "a".repeat(64), "--trusted-root", "x", "--key", "k", "--issuer", "https://x"]],
    ["a subject and a pattern", ["verify-bundle", "--bundle", "b", "--digest", "sha256:" + "a".repeat(64), "--trusted-root", "x", "--issuer", "https://x", "--subject", "s", "--subject-regexp", "s"]],
    ["a malformed digest", ["verify-bundle", "--bundle", "b", "--digest", "sha256:XYZ", "--trusted-root", "x", "--key", "k"]],
    ["an unknown option", ["verify-bundle", "--frobnicate"]],
  ])("exits 2 for bad usage: %s", async (_what, argv) => {
    const run = await runCli(argv, [register]);
    expect(run.code).toBe(2);
  });
});
