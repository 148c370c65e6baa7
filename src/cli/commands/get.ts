/**
 * `openfief get plugins`: one row per plugin the log knows — its status, the version running, the
 * version asked for, the signature verdict of the asked-for image, what is pending approval, and
 * what the owner must know (a refused config or signature, a failed reconcile).
 */
import type { Command } from "commander";
import { lastCallText, listPlugins, problemText, runtimeText, shortImage, statusText } from "../../app/index.js";
import type { PluginRow } from "../../app/index.js";
import { CliError } from "../cli-error.js";
import { print, printJson, table, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";

/** The table `get plugins` and `up` print. */
export function pluginsTable(rows: readonly PluginRow[]): string {
  return table(
    ["NAME", "STATUS", "RUNTIME", "RUNNING", "ASKED FOR", "VERDICT", "PENDING", "LAST CALL", "PROBLEMS"],
    rows.map((r) => [
      r.name, statusText(r.status), runtimeText(r), shortImage(r.running), r.deleted ? "(deleted)" : shortImage(r.asked), r.verdict ?? "-",
      r.pending.length === 0 ? "-" : r.pending.join(","), lastCallText(r.lastCall), r.problems.length === 0 ? "-" : r.problems.map(problemText).join("; "),
    ]),
  );
}

export function register(program: Command): void {
  withJson(withData(program.command("get")))
    .description("list plugins: status, version running, version asked for, signature verdict, pending approval, problems")
    .argument("<what>", "plugins")
    .action(async (what: string, o: DataOptions) => {
      if (what !== "plugins" && what !== "plugin") throw new CliError(`cannot get ${JSON.stringify(what)}: use plugins`);
      const rows = await withLog(o, listPlugins);
      if (o.json === true) return printJson(rows);
      if (rows.length === 0) return print("no plugins");
      print(pluginsTable(rows));
    });
}
