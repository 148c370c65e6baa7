/**
 * `openfief apply -f FILE|DIR` records Plugin and PluginGrant resources as the owner's
 * observations (`plugin.observed`, `grant.observed`); applying the same spec again records nothing.
 * `openfief delete plugin|grant NAME` records that a resource is gone; the plugin's events stay.
 * A running `openfief up` reconciles what they record; `openfief reconcile` does one pass here.
 */
import type { Command } from "commander";
import { pluginStream } from "../../events/index.js";
import type { JsonValue } from "../../plugins/index.js";
import { CliError } from "../cli-error.js";
import { pluginArg, print, printJson, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";
import { readResources } from "../resources.js";

/** Who an edit made through the CLI is recorded as. */
export const OWNER_ACTOR = "owner:cli";

interface ApplyOptions extends DataOptions {
  filename?: string;
}

export function register(program: Command): void {
  withJson(withData(program.command("apply")))
    .description("record Plugin and PluginGrant resources (YAML or JSON, as written for the cluster)")
    .requiredOption("-f, --filename <path>", "a file, or a folder of .yaml/.yml/.json files")
    .action(async (o: ApplyOptions) => {
      const resources = await readResources(o.filename as string);
      const results = await withLog(o, (store) =>
        resources.map((r) => {
          const type = r.kind === "Plugin" ? "plugin.observed" : "grant.observed";
          const e = store.observe({ stream: pluginStream(r.name), type, data: { name: r.name, spec: r.raw as JsonValue }, actor: OWNER_ACTOR, causedBy: null });
          return { kind: r.kind, name: r.name, changed: e !== null, ...(e === null ? {} : { seq: e.seq }) };
        }), false);
      if (o.json === true) printJson(results);
      else for (const r of results) print(`${r.kind.toLowerCase()}/${r.name} ${r.changed ? `recorded (event ${r.seq})` : "unchanged"}`);
    });

  withJson(withData(program.command("delete")))
    .description("record that a Plugin (its workload stops, its allow-list entry goes) or a PluginGrant is deleted")
    .argument("<kind>", "plugin or grant")
    .argument("<name>", "the plugin's name")
    .action(async (kind: string, name: string, o: DataOptions) => {
      if (kind !== "plugin" && kind !== "grant") throw new CliError(`unknown kind ${JSON.stringify(kind)}: use plugin or grant`);
      pluginArg(name);
      const result = await withLog(o, (store) => {
        const stream = pluginStream(name);
        const present = kind === "plugin" ? ["plugin.observed", "plugin.deleted"] : ["grant.observed", "grant.deleted"];
        const last = store.read({ stream, type: present }).at(-1);
        if (last === undefined || last.type.endsWith(".deleted")) throw new CliError(`${kind} ${name} does not exist`, 1);
        const e = store.append([{ stream, type: kind === "plugin" ? "plugin.deleted" : "grant.deleted", data: { name }, actor: OWNER_ACTOR, causedBy: null }], { expected: { [stream]: store.version(stream) } });
        return { kind, name, seq: e[0]?.seq };
      });
      if (o.json === true) printJson(result);
      else print(`${kind}/${name} deleted (event ${result.seq})`);
    });
}
