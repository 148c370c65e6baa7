/**
 * `openfief apply -f FILE|DIR|- [-f …]` records Plugin and PluginGrant resources as the owner's
 * observations (`plugin.observed`, `grant.observed`); applying the same spec again records nothing.
 * Every input is read and checked before anything is recorded, and a refusal records nothing
 * (exit 2). What is recorded exits 0 (docs/adr/0107): a Plugin whose config its own schema refuses
 * is recorded as the cluster would hold it, with a warning on standard error naming the problem
 * and the `why` that will explain the decision.
 * `openfief delete plugin|grant|plugingrant NAME` records that a resource is gone; the plugin's
 * events stay. `openfief delete plugin NAME --purge` uninstalls it and leaves nothing behind
 * (docs/adr/0162). A running `openfief up` reconciles what they record; `openfief reconcile` does one pass here.
 */
import { join } from "node:path";
import type { Command } from "commander";
import { AppError, applyResources, deletableKind, deleteResource, folderPurgeTarget, OWNER_CLI, parseResources, removalText, storeLocationOf, uninstallPlugin } from "../../app/index.js";
import type { Resource } from "../../app/index.js";
import { formatErrors } from "../../plugins/index.js";
import { dataDir, pluginArg, print, printJson, warn, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";
import { readInputs } from "../inputs.js";

/** Who an edit made through the CLI is recorded as. */
export const OWNER_ACTOR = OWNER_CLI;

interface DeleteOptions extends DataOptions {
  purge?: boolean;
  out?: string;
}

/**
 * `delete plugin NAME --purge`: records the intent and, on the data folder's own log, carries it
 * out at once on the folder's cluster (`<data>/cluster`, where `up` writes, or `--out`); on
 * another log (a cluster's) the operator carries it out.
 */
async function purge(name: string, o: DeleteOptions): Promise<void> {
  const target = o.out !== undefined ? folderPurgeTarget(o.out) : storeLocationOf(o) === null ? folderPurgeTarget(join(dataDir(o), "cluster")) : null;
  const r = await withLog(o, (store) => uninstallPlugin(store, name, OWNER_CLI, target));
  if (o.json === true) {
    printJson(r);
    return;
  }
  const what = removalText(r.request);
  print(`plugin/${name} ${r.request.resumed ? "uninstall resumed" : "uninstall recorded"} (event ${r.request.seq}): removes ${what}`);
  if (r.uninstalled === null) print("The operator removes its Plugin, PluginGrant, objects and Secrets from the cluster and records plugin.uninstalled.");
  else print(`plugin/${name} uninstalled (event ${r.uninstalled.seq})${r.uninstalled.absent.length === 0 ? "" : `; not found: ${r.uninstalled.absent.map((n) => `Secret ${n}`).join(", ")}`}`);
}

interface ApplyOptions extends DataOptions {
  filename?: string[];
}

/** Every resource of the inputs, or an error naming every problem in every input. */
export async function readAllResources(paths: readonly string[]): Promise<Resource[]> {
  const inputs = await readInputs(paths);
  const resources: Resource[] = [];
  const problems: string[] = [];
  for (const input of inputs) {
    try {
      resources.push(...parseResources(input.text, input.source));
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== "invalid_resource") throw err;
      problems.push(err.message);
    }
  }
  if (problems.length > 0) throw new AppError("invalid_resource", problems.join("; "));
  if (resources.length === 0) throw new AppError("invalid_resource", `${paths.join(", ")}: no Plugin or PluginGrant resources`);
  return resources;
}

const repeatable = (v: string, prev: string[] = []): string[] => [...prev, v];

export function register(program: Command): void {
  withJson(withData(program.command("apply")))
    .description("record Plugin and PluginGrant resources (YAML or JSON, as written for the cluster)")
    .requiredOption("-f, --filename <path>", "a file, a folder of .yaml/.yml/.json files, or - for standard input (repeatable)", repeatable)
    .action(async (o: ApplyOptions) => {
      const resources = await readAllResources(o.filename ?? []);
      const results = await withLog(o, (store) => applyResources(store, resources, OWNER_CLI), false);
      if (o.json === true) printJson(results);
      else for (const r of results) print(`${r.kind.toLowerCase()}/${r.name} ${r.changed ? `recorded (event ${r.seq})` : "unchanged"}`);
      // Recorded all the same: a warning, not a failure; the decision will say it again.
      for (const r of results) if (r.configErrors !== undefined) warn(`plugin/${r.name} will not run with this config, which does not match its schema: ${formatErrors(r.configErrors)}. Fix the config and apply again; openfief why ${r.name} explains the decision once it is reconciled.`);
    });

  withJson(withData(program.command("delete")))
    .description("record that a Plugin (its workload stops, its allow-list entry goes) or a PluginGrant is deleted")
    .argument("<kind>", "plugin, or grant (also plugingrant)")
    .argument("<name>", "the plugin's name")
    .option("--purge", "uninstall the plugin and leave nothing behind: also its grant, its own Secrets and the module only it ran")
    .option("--out <dir>", "with --purge: the folder the embedded control plane writes the cluster to (default: DATA/cluster)")
    .action(async (kindText: string, name: string, o: DeleteOptions) => {
      const kind = deletableKind(kindText);
      if (kind === null) throw new AppError("usage", `unknown kind ${JSON.stringify(kindText)}: use plugin or grant (plugingrant)`);
      pluginArg(name);
      if (o.purge === true) {
        if (kind !== "plugin") throw new AppError("usage", "--purge uninstalls a plugin: use openfief delete plugin NAME --purge");
        await purge(name, o);
        return;
      }
      const result = await withLog(o, (store) => deleteResource(store, kind, name, OWNER_CLI));
      if (o.json === true) printJson(result);
      else print(`${kind === "plugin" ? "plugin" : "plugingrant"}/${name} deleted (event ${result.seq})`);
    });
}
