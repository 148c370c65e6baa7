/**
 * `openfief verify-bundle`: verifies one Sigstore bundle offline against a trust root and one
 * expected identity. Exit 0 and a one-line verdict when it verifies, 1 and the reason code when
 * it does not, 2 for bad usage.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { CommanderError } from "commander";
import type { Command } from "commander";
import { CliError } from "../cli-error.js";
import { parseTrustedRoot, Reason, TrustRootError, verifyBundle } from "../../trust/index.js";
import type { BundleVerdict, ExpectedIdentity } from "../../trust/index.js";

interface Options {
  bundle?: string;
  artifact?: string;
  digest?: string;
  trustedRoot?: string;
  issuer?: string;
  subject?: string;
  subjectRegexp?: string;
  key?: string;
  json?: boolean;
}

/** Commander reports usage errors with exit 1; ours is 2, so a refusal (1) is never confused with one. */
export function usageExit(err: CommanderError): never {
  if (err.exitCode === 0) throw err;
  throw new CommanderError(2, err.code, err.message);
}

function readFile(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new CliError(`cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`, 2);
  }
}

/** Writes a verdict: one line, or one JSON object with `--json`; sets the exit code. */
export function printVerdict(verdict: BundleVerdict, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(verdict)}\n`);
  } else if (verdict.ok) {
    const id = verdict.identity;
    process.stdout.write(
      id.kind === "keyless"
        ? `verified: keyless issuer=${id.issuer} subject=${id.subject}\n`
        : "verified: key (the given public key)\n",
    );
  } else {
    process.stdout.write(`refused: ${verdict.reason}: ${verdict.message}\n`);
  }
  process.exitCode = verdict.ok ? 0 : 1;
}

async function run(opts: Options): Promise<void> {
  if (opts.bundle === undefined) throw new CliError("--bundle FILE is required", 2);
  if (opts.trustedRoot === undefined) throw new CliError("--trusted-root FILE is required", 2);
  if ((opts.artifact === undefined) === (opts.digest === undefined)) {
    throw new CliError("give exactly one of --artifact FILE or --digest sha256:<hex>", 2);
  }
  const keyless = opts.issuer !== undefined || opts.subject !== undefined || opts.subjectRegexp !== undefined;
  if (keyless === (opts.key !== undefined)) {
    throw new CliError("give either --issuer with --subject or --subject-regexp, or --key PEMFILE", 2);
  }
  let expected: ExpectedIdentity;
  if (opts.key !== undefined) {
    expected = { kind: "key", publicKey: readFile(opts.key, "key").toString("utf8") };
  } else {
    if (opts.issuer === undefined) throw new CliError("--issuer URL is required with --subject or --subject-regexp", 2);
    if ((opts.subject === undefined) === (opts.subjectRegexp === undefined)) {
      throw new CliError("give exactly one of --subject or --subject-regexp", 2);
    }
    expected =
      opts.subject !== undefined
        ? { kind: "keyless", issuer: opts.issuer, subject: opts.subject }
        : { kind: "keyless", issuer: opts.issuer, subjectPattern: opts.subjectRegexp as string };
  }
  let artifact: Buffer | undefined;
  let digest: string;
  if (opts.artifact !== undefined) {
    artifact = readFile(opts.artifact, "artifact");
    digest = `sha256:${createHash("sha256").update(artifact).digest("hex")}`;
  } else {
    digest = (opts.digest as string).trim();
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new CliError("--digest must be sha256:<64 lowercase hex>", 2);
  }
  const bundle = readFile(opts.bundle, "bundle");
  const rootBytes = readFile(opts.trustedRoot, "trusted root");
  let verdict: BundleVerdict;
  try {
    const { root } = parseTrustedRoot(rootBytes);
    verdict = verifyBundle({ bundle, digest, trustedRoot: root, expected, ...(artifact === undefined ? {} : { artifact }) });
  } catch (err) {
    verdict =
      err instanceof TrustRootError
        ? { ok: false, reason: Reason.TrustRootInvalid, message: err.message }
        : { ok: false, reason: Reason.VerifyError, message: err instanceof Error ? err.message : String(err) };
  }
  printVerdict(verdict, opts.json === true);
}

/** Registers `verify-bundle`. */
export function register(program: Command): void {
  program
    .command("verify-bundle")
    .description("verify a Sigstore bundle offline against a trust root and one identity (exit 0 verified, 1 refused, 2 usage)")
    .option("--bundle <file>", "the Sigstore bundle (JSON)")
    .option("--artifact <file>", "the signed bytes")
    .option("--digest <sha256:hex>", "the digest of what was signed (DSSE bundles)")
    .option("--trusted-root <file>", "the Sigstore trusted root (JSON); nothing is fetched")
    .option("--issuer <url>", "the OIDC issuer, compared exactly")
    .option("--subject <san>", "the certificate subject, compared exactly")
    .option("--subject-regexp <re2>", "an RE2 pattern that must match the whole subject")
    .option("--key <pemfile>", "the one trusted PEM public key (key identities)")
    .option("--json", "print the verdict as JSON")
    .exitOverride(usageExit)
    .action(async (opts: Options) => run(opts));
}
