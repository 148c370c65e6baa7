/**
 * `npx tsx scripts/gen-cli-summaries.ts`: writes src/cli/commands/summaries.ts, what `openfief --help`
 * lists for each subcommand (its term and its one-line description), taken from the command modules
 * themselves, so the full help prints without loading them (ADR 0113's start-up rule; docs/adr/0188).
 * test/cli/help-summaries.test.ts fails when the file is stale, and prints what this would write.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { summariesSource } from "../test/cli/help-summaries.js";

const target = fileURLToPath(new URL("../src/cli/commands/summaries.ts", import.meta.url));
writeFileSync(target, await summariesSource());
console.log(`wrote ${target}`);
