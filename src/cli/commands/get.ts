/**
 * `openfief get plugins`: one row per plugin the log knows — its status, the version running, the
 * version asked for, who signed the asked-for image, what is pending approval (or, for a version
 * that cannot run whatever is approved, what blocks it instead), and what the owner must know (a
 * refused config or signature, a failed reconcile). Lines under the table say what its words mean.
 */
import type { Command } from "commander";
import { blockerSubject, catalogText, lastCallText, listPlugins, objectsOnlyNote, problemText, runtimeText, shortImage, statusText, verdictCell } from "../../app/index.js";
import type { PluginRow } from "../../app/index.js";
import { CliError } from "../cli-error.js";
import { print, printJson, table, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";

/** What the PENDING cell says: the permissions an approval would add, or what blocks the version instead. */
function pendingCell(r: PluginRow): string {
  const first = r.blockers[0];
  // No nudge to approve a version that cannot run whatever is approved.
  if (first !== undefined) return `(blocked by its ${blockerSubject(first)})`;
  return r.pending.length === 0 ? "-" : r.pending.join(",");
}

/** The table `get plugins` and `up` print, with a line under it for each word that needs one. */
export function pluginsTable(rows: readonly PluginRow[]): string {
  const body = table(
    ["NAME", "STATUS", "RUNTIME", "RUNNING", "ASKED FOR", "SIGNATURE", "PENDING", "LAST CALL", "PROBLEMS"],
    rows.map((r) => [
      r.name, statusText(r.status), runtimeText(r), shortImage(r.running), r.deleted ? "(deleted)" : shortImage(r.asked), r.deleted ? "-" : verdictCell(r.signature),
      pendingCell(r), lastCallText(r.lastCall), r.problems.length === 0 ? "-" : r.problems.map(problemText).join("; "),
    ]),
  );
  const notes = [
    objectsOnlyNote(rows),
    rows.some((r) => !r.deleted && r.signature?.outcome === "unverified") ? "SIGNATURE \"signed by NAME\": a signer you trust signed the image asked for, so it may run; only a catalog entry would make it verified." : null,
    rows.some((r) => r.deleted) ? "STATUS \"deleted\": a removed instance; what it did stays in the log, marked as from a removed instance (openfief why NAME says how it went)." : null,
    rows.some((r) => r.blockers.length > 0) ? "blocked: the version asked for cannot run whatever is approved; openfief why NAME says what to fix." : null,
    // A catalog entry that does not match the image asked for: said, never shown as verified.
    ...rows.map((r) => (r.deleted || r.signature?.catalog == null || r.signature.catalog.standing === "verified" ? null : `${r.name}: ${catalogText(r.signature.catalog, { short: true })}; not verified.`)),
  ].filter((n): n is string => n !== null);
  return [body, ...notes].join("\n");
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
