/**
 * `openfief why PLUGIN`: the latest rollout decision in plain sentences — what runs and why, what
 * waits for approval, whether the asked-for version could run and why not, the grant it was
 * decided under, and the chain of events that caused it; for a view, its recent gateway decisions.
 */
import type { Command } from "commander";
import { explain } from "../../app/index.js";
import { pluginArg, print, printJson, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";

export function register(program: Command): void {
  withJson(withData(program.command("why")))
    .description("explain the latest rollout decision of a plugin: its inputs and the events that caused it")
    .argument("<plugin>", "the plugin's name")
    .action(async (name: string, o: DataOptions) => {
      pluginArg(name);
      const { answer, sentences, gateway, removed } = await withLog(o, (store) => explain(store, name));
      if (o.json === true) printJson({ ...answer, ...(gateway === null ? {} : { gateway }), ...(removed === null ? {} : { removed }) });
      else for (const line of sentences) print(line);
    });
}
