/**
 * `openfief why PLUGIN`: the latest rollout decision in plain sentences — what runs and why, what
 * waits for approval, whether the asked-for version could run and why not, the grant it was
 * decided under, and the chain of events that caused it.
 */
import type { Command } from "commander";
import type { StoredEvent } from "../../events/types.js";
import type { RolloutReason } from "../../plugins/rollout.js";
import { why } from "../../projections/queries.js";
import type { WhyAnswer } from "../../projections/queries.js";
import { CliError } from "../cli-error.js";
import { pluginArg, print, printJson, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";
import { describePending } from "./approve.js";
import type { Pending } from "../../plugins/effective.js";
import { EMPTY_PENDING } from "../../plugins/effective.js";

const REASON_TEXT: Record<RolloutReason, string> = {
  no_current_version: "the Plugin asks for no valid version (deleted, or its spec is invalid)",
  current_not_deployable: "the version asked for did not pass its checks",
  approval_pending: "the version asked for needs permissions the grant does not give",
  no_capability_granted: "the grant approves none of the capabilities the version asks for",
  no_previous_version: "no earlier version was running to keep",
  previous_no_capability_granted: "the grant approves none of the capabilities of the earlier version",
};

/** One sentence about an event, for the cause chain. */
export function describeEvent(e: StoredEvent): string {
  const d = e.data as Record<string, unknown>;
  switch (e.type) {
    case "plugin.observed": return `the Plugin was applied by ${e.actor}, asking for ${String((d.spec as { image?: unknown } | null)?.image ?? "?")}`;
    case "plugin.deleted": return `the Plugin was deleted by ${e.actor}`;
    case "grant.observed": return `the grant was set by ${e.actor}`;
    case "grant.deleted": return `the grant was deleted by ${e.actor}`;
    case "signature.verdict": return `the signature check found ${String(d.digest)} ${String(d.outcome)}${d.reason === undefined ? "" : ` (${String(d.reason)})`}`;
    case "config.verdict": return `the config ${d.ok === true ? "matched" : "did not match"} the schema of ${String(d.image)}`;
    case "rollout.decided": return `a rollout decision (${String((d.plan as { outcome?: unknown } | null)?.outcome ?? "?")})`;
    case "workload.desired": return d.running === true ? `the workload of ${String(d.image)} was compiled` : "the workload was stopped";
    case "previous.observed": return `the cluster's status named ${String((d.deployed as { image?: unknown } | null)?.image ?? "?")} as running`;
    case "kube.applied": return `${Array.isArray(d.records) ? d.records.length : 0} object change(s) were applied to the cluster`;
    case "workload.applied": return `the workload was applied to ${String(d.target)}${d.ok === true ? "" : ` and failed: ${String(d.error)}`}`;
    default: return e.type;
  }
}

/** The answer as plain sentences. */
export function whySentences(a: WhyAnswer): string[] {
  const plan = a.decision.data.plan as { outcome?: string; reasons?: RolloutReason[]; pending?: Pending; run?: { image?: string } | null };
  const pending = plan.pending ?? EMPTY_PENDING;
  const out: string[] = [];
  const at = `event ${a.decision.seq}, ${a.decision.time}`;
  const current = a.inputs.current?.image;
  const previous = a.inputs.previous?.image;
  if (plan.outcome === "current") out.push(`${a.plugin} runs ${current ?? "?"}, the version its Plugin asks for (decided at ${at}).`);
  else if (plan.outcome === "previous") out.push(`${a.plugin} keeps running ${previous ?? "?"} under its current grant, instead of ${current ?? "the version asked for"} (decided at ${at}).`);
  else out.push(`${a.plugin} runs nothing (decided at ${at}).`);
  for (const r of plan.reasons ?? []) out.push(`Because ${REASON_TEXT[r] ?? r}.`);
  const pendingText = describePending(pending);
  if (pendingText !== "nothing") out.push(`Pending approval: ${pendingText}. Run \`openfief approve ${a.plugin}\` to grant exactly that.`);
  if (!a.deployable.ok && current !== undefined) for (const b of a.deployable.because) out.push(`${current} could not run: ${b}.`);
  // A grant has the shape of what can be pending: capabilities, egress, Secret names, data tiers.
  out.push(`The grant approved: ${describePending({ ...EMPTY_PENDING, ...(a.inputs.grant as Partial<Pending>) })}.`);
  if (a.chain.length > 0) {
    out.push("It was caused by:");
    for (const e of a.chain) out.push(`  - event ${e.seq} (${e.time}): ${describeEvent(e)}`);
  }
  out.push(a.replays ? "Re-deciding from the log gives the same answer." : "WARNING: re-deciding from the log gives a different answer (run `openfief check-decisions`).");
  return out;
}

export function register(program: Command): void {
  withJson(withData(program.command("why")))
    .description("explain the latest rollout decision of a plugin: its inputs and the events that caused it")
    .argument("<plugin>", "the plugin's name")
    .action(async (name: string, o: DataOptions) => {
      pluginArg(name);
      const answer = await withLog(o, (store) => why(store, name));
      if (answer === null) throw new CliError(`no decision recorded for ${name}`, 1);
      if (o.json === true) printJson(answer);
      else for (const line of whySentences(answer)) print(line);
    });
}
