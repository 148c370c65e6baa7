/**
 * What `verify-log` and `check-decisions` run, loaded by `import()` when one of them runs (ADR 0188):
 * the hash chain and checkpoint checks and the deciders' re-run are code `log` and `replay` never use.
 * log.ts registers the commands (their options and help); this is their work.
 */
import { AppError, checkLogDecisions, decisionsCheckLines, LOG_KEY_TYPES, logVerifier, readVerifierKey, requireFile, verifyLogAgainst, verifyLog } from "../../app/index.js";
import type { LogAgainstCheckpoints, LogIntegrity } from "../../app/index.js";
import { dataDir, print, printJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";

export interface VerifyLogOptions extends DataOptions {
  restoreGuards?: boolean;
  checkpoint?: string;
  previous?: string;
  key?: string;
}

/** The checkpoint files `verify-log` was given, each checked to be a file (exit 2 otherwise). */
function checkpointFiles(o: VerifyLogOptions): { which: "checkpoint" | "previous"; path: string }[] {
  if (o.previous !== undefined && o.checkpoint === undefined) throw new AppError("usage", "--previous goes with --checkpoint", "previous");
  const given = [
    ...(o.checkpoint === undefined ? [] : [{ which: "checkpoint" as const, path: o.checkpoint }]),
    ...(o.previous === undefined ? [] : [{ which: "previous" as const, path: o.previous }]),
  ];
  for (const g of given) requireFile(g.path, g.which === "checkpoint" ? "--checkpoint" : "--previous");
  return given;
}

/** What `verify-log` says, in words. */
function printVerifyLog(r: LogIntegrity, against: LogAgainstCheckpoints | null): void {
  if (r.chain.ok) print(`the log holds: ${r.chain.count} events, every hash verified`);
  else print(`the log does NOT hold at event ${r.chain.seq}: ${r.chain.reason}`);
  if (r.restored.length > 0) print(`the guards ${r.restored.join(", ")} were missing and are restored`);
  else if (!r.guards.ok) print(`the guards that keep the log append-only are missing: ${r.guards.missing.join(", ")} (someone changed the database by hand; --restore-guards re-creates them)`);
  if (against === null) return;
  if (!against.ok) for (const l of against.lines) print(l);
  else for (const f of against.findings) print(`the log has the root of the ${f.which === "checkpoint" ? "" : "previous "}checkpoint of ${f.size} events${f.which === "previous" ? ": it extends it" : ""}`);
}

/** `verify-log`: the chain and the guards, and with --checkpoint/--previous the log against checkpoints kept elsewhere. */
export async function verifyLogCommand(o: VerifyLogOptions): Promise<void> {
  const given = checkpointFiles(o);
  const key = given.length === 0 ? null : o.key !== undefined ? readVerifierKey(o.key, "--key", LOG_KEY_TYPES) : logVerifier(o.store === undefined ? dataDir(o) : null, process.env);
  const { r, against } = await withLog(o, async (store) => ({
    r: await verifyLog(store, { restoreGuards: o.restoreGuards === true }),
    against: key === null ? null : await verifyLogAgainst(store, given, key),
  }));
  if (o.json === true) printJson(against === null ? r : { ...r, ok: r.ok && against.ok, checkpoints: against });
  else printVerifyLog(r, against);
  if (!r.ok || (against !== null && !against.ok)) process.exitCode = 1;
}

/** `check-decisions`: the deciders re-run over the log, every recorded decision compared. */
export async function checkDecisionsCommand(o: DataOptions): Promise<void> {
  const result = await withLog(o, (store) => checkLogDecisions(store));
  if (o.json === true) printJson(result);
  else for (const line of decisionsCheckLines(result)) print(line);
  // Only a divergence fails: an upgrade's effect is what the owner's upgrade changed, not a fault.
  if (result.divergences.length > 0) process.exitCode = 1;
}
