/**
 * What the full help lists for each subcommand, read from the command modules themselves: the
 * source of src/cli/commands/summaries.ts, which scripts/gen-cli-summaries.ts writes and
 * help-summaries.test.ts holds current.
 */
import { Help } from "commander";
import { buildProgram } from "../../src/cli/main.js";

/** One subcommand as the full help lists it. */
export interface Summary {
  readonly name: string;
  readonly term: string;
  readonly description: string;
  readonly hidden: boolean;
  readonly aliases: readonly string[];
}

/** Every subcommand, in the order the full help lists them, from the real modules. */
export async function summariesFromModules(): Promise<Summary[]> {
  const help = new Help();
  return (await buildProgram()).commands.map((c) => ({
    name: c.name(),
    term: help.subcommandTerm(c),
    description: help.subcommandDescription(c),
    hidden: (c as unknown as { _hidden: boolean })._hidden,
    aliases: c.aliases(),
  }));
}

/** The text of summaries.ts. */
export async function summariesSource(): Promise<string> {
  const rows = (await summariesFromModules()).map((s) => `  ${JSON.stringify(s)},`).join("\n");
  return `/**
 * What \`openfief --help\` lists for each subcommand, so the full help (and a mistyped command's
 * suggestion) needs no command module loaded (docs/adr/0188). Generated from the modules by
 * \`npx tsx scripts/gen-cli-summaries.ts\`; test/cli/help-summaries.test.ts fails when it is stale.
 */
import { Help } from "commander";
import type { Command } from "commander";

/** One subcommand as the full help lists it. */
export interface Summary {
  readonly name: string;
  /** What the help's left column shows: the name, \`[options]\` when it has any, its arguments. */
  readonly term: string;
  readonly description: string;
  readonly hidden: boolean;
  readonly aliases: readonly string[];
}

/** Every subcommand, in the order the command modules register them. */
export const SUMMARIES: readonly Summary[] = [
${rows}
];

/**
 * Adds each subcommand as a stub that only its help line comes from: a program for printing the
 * full help or refusing a mistyped name, never for running a command.
 */
export function registerSummaries(program: Command): void {
  const terms = new Map<string, string>();
  for (const s of SUMMARIES) {
    const stub = program.command(s.name, { hidden: s.hidden }).description(s.description);
    for (const alias of s.aliases) stub.alias(alias);
    terms.set(s.name, s.term);
  }
  const standard = new Help();
  program.configureHelp({ subcommandTerm: (c) => terms.get(c.name()) ?? standard.subcommandTerm(c) });
}
`;
}
