/**
 * `openfief get plugins`: one row per plugin the log knows — the version running, the version
 * asked for, the signature verdict of the asked-for image, and what is pending approval.
 */
import type { Command } from "commander";
import type { EventStore } from "../../events/index.js";
import { formatHostPort, parseImageRef } from "../../plugins/index.js";
import type { Pending } from "../../plugins/index.js";
import type { PluginState, VerdictState } from "../../projections/index.js";
import { Projector } from "../../projections/index.js";
import { CliError } from "../cli-error.js";
import { print, printJson, table, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";

export interface PluginRow {
  readonly name: string;
  readonly running: string | null;
  readonly asked: string | null;
  readonly verdict: string | null;
  readonly pending: string[];
  readonly deleted: boolean;
}

/** Short form of an image for a table: `repository@sha256:<first 12>`. */
export function shortImage(image: string | null): string {
  if (image === null) return "-";
  const r = parseImageRef(image);
  return r.ok ? `${r.value.repository.split("/").at(-1) ?? r.value.repository}@${r.value.digest.slice(0, 19)}` : image;
}

function pendingList(p: unknown): string[] {
  if (p === null || typeof p !== "object") return [];
  const q = p as Partial<Pending>;
  return [
    ...(q.capabilities ?? []).map((c) => `capability:${c}`),
    ...(q.egress ?? []).map((h) => `egress:${formatHostPort(h)}`),
    ...(q.secrets ?? []).map((s) => `secret:${s}`),
    ...(q.dataTiers ?? []).map((t) => `tier:${t}`),
  ];
}

/** The rows of `get plugins`, from the projections (caught up first). */
export function pluginRows(store: EventStore): PluginRow[] {
  const projector = new Projector(store);
  projector.catchUp();
  const verdicts = projector.rows<VerdictState>("signature_verdicts");
  return [...projector.rows<PluginState>("plugins").values()]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((p) => {
      const digest = p.askedImage === null ? null : parseImageRef(p.askedImage);
      const v = digest !== null && digest.ok ? verdicts.get(digest.value.digest) : undefined;
      return {
        name: p.name,
        running: p.runningImage,
        asked: p.deleted ? null : p.askedImage,
        verdict: v === undefined ? null : v.outcome === "refused" ? `refused (${v.reason ?? "?"})` : v.outcome,
        pending: pendingList(p.pending),
        deleted: p.deleted,
      };
    });
}

export function register(program: Command): void {
  withJson(withData(program.command("get")))
    .description("list plugins: version running, version asked for, signature verdict, pending approval")
    .argument("<what>", "plugins")
    .action(async (what: string, o: DataOptions) => {
      if (what !== "plugins" && what !== "plugin") throw new CliError(`cannot get ${JSON.stringify(what)}: use plugins`);
      const rows = await withLog(o, pluginRows);
      if (o.json === true) return printJson(rows);
      if (rows.length === 0) return print("no plugins");
      print(table(
        ["NAME", "RUNNING", "ASKED FOR", "VERDICT", "PENDING"],
        rows.map((r) => [r.name, shortImage(r.running), r.deleted ? "(deleted)" : shortImage(r.asked), r.verdict ?? "-", r.pending.length === 0 ? "-" : r.pending.join(",")]),
      ));
    });
}
