/**
 * `openfief approve PLUGIN` adds exactly what the plugin's current version asks beyond its grant
 * (the pending permissions) to the grant, as an owner's grant edit. Nothing else changes: no
 * permission the owner did not see pending is ever added.
 */
import type { Command } from "commander";
import { pluginStream } from "../../events/index.js";
import { EMPTY_GRANT_SPEC, isEmptyPending, needsApproval, parseGrant, parsePlugin } from "../../plugins/index.js";
import type { GrantSpec, JsonValue, Pending } from "../../plugins/index.js";
import { CliError } from "../cli-error.js";
import { pluginArg, print, printJson, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";
import { OWNER_ACTOR } from "./apply.js";
import { describePending } from "../../app/index.js";

/** The grant with the pending permissions added, lists kept in the grant's order then the new ones. */
export function grantWithPending(grant: GrantSpec, pending: Pending): GrantSpec {
  return {
    capabilities: [...grant.capabilities, ...pending.capabilities],
    egress: [...grant.egress, ...pending.egress],
    secrets: [...grant.secrets, ...pending.secrets],
    dataTiers: [...grant.dataTiers, ...pending.dataTiers],
  };
}

export function register(program: Command): void {
  withJson(withData(program.command("approve")))
    .description("add exactly the pending permissions of a plugin's current version to its grant")
    .argument("<plugin>", "the plugin's name")
    .action(async (name: string, o: DataOptions) => {
      pluginArg(name);
      const result = await withLog(o, (store) => {
        const stream = pluginStream(name);
        const spec = store.read({ stream, type: ["plugin.observed", "plugin.deleted"] }).at(-1);
        if (spec === undefined || spec.type === "plugin.deleted") throw new CliError(`plugin ${name} does not exist`, 1);
        const plugin = parsePlugin({ name, spec: spec.data.spec });
        if (!plugin.ok) throw new CliError(`plugin ${name} has an invalid spec; fix it before approving`, 1);
        const lastGrant = store.read({ stream, type: ["grant.observed", "grant.deleted"] }).at(-1);
        let grant: GrantSpec = EMPTY_GRANT_SPEC;
        if (lastGrant !== undefined && lastGrant.type === "grant.observed") {
          const g = parseGrant({ name, spec: lastGrant.data.spec });
          if (g.ok) grant = g.value.spec;
        }
        const pending = needsApproval(plugin.value.spec.manifest, grant);
        if (isEmptyPending(pending)) return { name, approved: pending, seq: null as number | null };
        const spec2 = grantWithPending(grant, pending);
        const e = store.append(
          [{ stream, type: "grant.observed", data: { name, spec: spec2 as unknown as JsonValue }, actor: OWNER_ACTOR, causedBy: spec.seq }],
          { expected: { [stream]: store.version(stream) } },
        );
        return { name, approved: pending, seq: e[0]?.seq ?? null };
      });
      if (o.json === true) printJson(result);
      else if (result.seq === null) print(`${name}: nothing is pending approval`);
      else print(`${name}: approved ${describePending(result.approved)} (grant edit, event ${result.seq})`);
    });
}
