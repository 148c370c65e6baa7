/**
 * `openfief why PLUGIN`: the latest rollout decision in plain sentences — what runs and why, what
 * waits for approval, whether the asked-for version could run and why not, the grant it was
 * decided under, and the chain of events that caused it; for a view, its recent gateway decisions.
 */
import type { Command } from "commander";
import { viewDecisionSentences, whySentences } from "../../app/index.js";
import { why } from "../../projections/index.js";
import { recentDecisions, summarizeDecisions } from "../../projections/index.js";
import { CliError } from "../cli-error.js";
import { pluginArg, print, printJson, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";

export function register(program: Command): void {
  withJson(withData(program.command("why")))
    .description("explain the latest rollout decision of a plugin: its inputs and the events that caused it")
    .argument("<plugin>", "the plugin's name")
    .action(async (name: string, o: DataOptions) => {
      pluginArg(name);
      const { answer, recent } = await withLog(o, (store) => ({ answer: why(store, name), recent: recentDecisions(store, name, 10) }));
      if (answer === null) throw new CliError(`no decision recorded for ${name}`, 1);
      if (o.json === true) printJson(recent.length === 0 ? answer : { ...answer, gateway: { summary: summarizeDecisions(recent), recent } });
      else for (const line of [...whySentences(answer), ...viewDecisionSentences(recent)]) print(line);
    });
}
