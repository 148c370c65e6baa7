/**
 * `openfief --help` prints from the summaries (src/cli/commands/summaries.ts) instead of loading
 * every command module (docs/adr/0188): the summaries are what the modules say, and every line that
 * only prints the full help or refuses a mistyped name prints, byte for byte and with the same exit
 * code, what the program with every module prints.
 */
import { describe, expect, it } from "vitest";
import { COMMANDS } from "../../src/cli/commands/index.js";
import { SUMMARIES } from "../../src/cli/commands/summaries.js";
import { runProgram } from "../../src/cli/program.js";
import { openfief } from "../e2e/support.js";
import { summariesFromModules } from "./help-summaries.js";

/** A command line run by the program with every module loaded, as the full help did before. */
async function withEveryModule(argv: readonly string[]) {
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  let stdout = "";
  let stderr = "";
  process.stdout.write = ((chunk: string | Uint8Array) => ((stdout += chunk.toString()), true)) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => ((stderr += chunk.toString()), true)) as typeof process.stderr.write;
  try {
    const code = await runProgram(argv, () => Promise.all(COMMANDS.map((m) => m.load())));
    return { code, stdout, stderr };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}

describe("the summaries", () => {
  it("are what the command modules register (else: npx tsx scripts/gen-cli-summaries.ts)", async () => {
    expect(SUMMARIES).toEqual(await summariesFromModules());
  }, 30_000);

  it.each<[string, readonly string[]]>([
    ["--help", ["--help"]],
    ["-h", ["-h"]],
    ["no arguments", []],
    ["help alone", ["help"]],
    ["a mistyped command, with its suggestion", ["gte", "plugins"]],
    ["a name nothing is near", ["frobnicate"]],
    ["an unknown option before any command", ["--verbose", "get"]],
  ])("answer %s as every module would", async (_what, argv) => {
    const expected = await withEveryModule(argv);
    const r = await openfief(argv);
    expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual(expected);
    expect(`${r.stdout}${r.stderr}`).not.toBe("");
  }, 30_000);

  it("still leave a command's own help to its module", async () => {
    for (const argv of [["help", "get"], ["get", "--help"], ["why", "-h"]]) {
      const r = await openfief(argv);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Usage: openfief (get|why) \[options\] <(what|plugin)>/);
    }
  });
});
