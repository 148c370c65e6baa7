/**
 * `openfief approve PLUGIN` adds exactly what the plugin's current version asks beyond its grant
 * (the pending permissions) to the grant, as an owner's grant edit. Nothing else changes: no
 * permission the owner did not see pending is ever added.
 */
import type { Command } from "commander";
import { approve, describePending, OWNER_CLI } from "../../app/index.js";
import { pluginArg, print, printJson, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";

export function register(program: Command): void {
  withJson(withData(program.command("approve")))
    .description("add exactly the pending permissions of a plugin's current version to its grant")
    .argument("<plugin>", "the plugin's name")
    .action(async (name: string, o: DataOptions) => {
      pluginArg(name);
      const result = await withLog(o, (store) => approve(store, name, OWNER_CLI));
      if (o.json === true) printJson(result);
      else if (result.seq === null) print(`${name}: nothing is pending approval`);
      else {
        print(`${name}: approved ${describePending(result.approved)} (grant edit, event ${result.seq})`);
        // The Secrets the owner creates for this instance (docs/adr/0151).
        for (const r of result.secretRoles ?? []) print(`  Secret role ${r.role} mounts this instance's Secret ${r.secret}`);
      }
    });
}
