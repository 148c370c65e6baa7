/**
 * Reading and checking the log: `log` (filter by plugin, type, time; `--follow`), `replay --at`
 * (the projected state as of a sequence number or a time), `verify-log` (the hash chain) and
 * `check-decisions` (re-run the deciders over the log and compare with every recorded decision).
 */
import type { Command } from "commander";
import { describePending, eventSentence, followLog, outcomeText, parseCount, parseReplayPoint, parseTime, readLog, replay, requireKnownPlugin, requireWithinLog, shortImage, shortRefs } from "../../app/index.js";
import type { EventLog, KnownEvent, LogQuery, RemovalCache } from "../../app/index.js";
import { openLog, pluginArg, print, printJson, table, withData, withJson, withLog } from "../context.js";
import type { DataOptions } from "../context.js";
import type { VerifyLogOptions } from "./log-checks.js";

interface LogOptions extends DataOptions {
  plugin?: string;
  type?: string[];
  since?: string;
  until?: string;
  after?: string;
  limit?: string;
  follow?: boolean;
}

/** One event a line, in the words every face uses (image references shortened; `--json` has them whole). */
function line(sentence: string, e: KnownEvent): string {
  const cause = e.causedBy === null ? "" : ` ← ${e.causedBy}`;
  return `${String(e.seq).padStart(6)}  ${e.time}  ${e.stream.padEnd(24)} ${e.type.padEnd(18)} ${e.actor.padEnd(12)} ${shortRefs(sentence)}${cause}`;
}

/** The filters the flags give. */
function queryOf(o: LogOptions): LogQuery {
  return {
    ...(o.plugin === undefined ? {} : { plugin: pluginArg(o.plugin) }),
    ...(o.type === undefined ? {} : { types: o.type }),
    ...(o.since === undefined ? {} : { since: parseTime(o.since, "--since") }),
    ...(o.until === undefined ? {} : { until: parseTime(o.until, "--until") }),
  };
}

async function emit(store: EventLog, events: readonly KnownEvent[], json: boolean): Promise<void> {
  // One read of each plugin's removal for the batch printed.
  const removals: RemovalCache = new Map();
  for (const e of events) {
    if (json) process.stdout.write(`${JSON.stringify(e)}\n`);
    else print(line(await eventSentence(store, e, removals), e));
  }
}

export function register(program: Command): void {
  withJson(withData(program.command("log")))
    .description("print the event log (JSON lines with --json), optionally filtered, and follow it")
    .option("--plugin <name>", "only this plugin's events (its own stream with its config verdicts, its egress decisions, the signature verdicts about its images)")
    .option("--type <type>", "only events of this type (repeatable)", (v: string, prev: string[] = []) => [...prev, v])
    .option("--since <time>", "only events at or after this ISO-8601 time")
    .option("--until <time>", "only events at or before this ISO-8601 time")
    .option("--after <seq>", "only events after this sequence number")
    .option("--limit <n>", "at most this many events")
    .option("-f, --follow", "keep printing new events until interrupted")
    .action(async (o: LogOptions) => {
      const store = await openLog(o);
      try {
        const q = queryOf(o);
        if (q.plugin !== undefined) await requireKnownPlugin(store, q.plugin);
        let after = o.after === undefined ? 0 : parseCount(o.after, "--after");
        const first = await readLog(store, { ...q, afterSeq: after, ...(o.limit === undefined ? {} : { limit: parseCount(o.limit, "--limit") }) });
        await emit(store, first.events, o.json === true);
        if (o.follow !== true) return;
        after = Math.max(after, first.events.at(-1)?.seq ?? 0, first.head);
        // Nothing appended from now on can be at or before a time already past.
        const until = q.until ?? null;
        if (until !== null && until.getTime() <= Date.now()) return;
        await new Promise<void>((resolve, reject) => {
          // Printed in order: each batch's lines after the batch before it.
          let printing = Promise.resolve();
          const unfollow = followLog(store, q, after, (events) => { printing = printing.then(() => emit(store, events, o.json === true)).catch((err: unknown) => { stop(); reject(err); }); }, { pollMs: 250 });
          const timer = until === null ? null : setInterval(() => { if (until.getTime() <= Date.now()) stop(); }, 250);
          const stop = () => { unfollow(); if (timer !== null) clearInterval(timer); void printing.then(() => resolve()); };
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
        });
      } finally {
        await store.close();
      }
    });

  withJson(withData(program.command("replay")))
    .description("show the state as it was at a sequence number or a time, folded from the log")
    .requiredOption("--at <seq|time>", "a sequence number, or an ISO-8601 time")
    .action(async (o: DataOptions & { at: string }) => {
      const at = parseReplayPoint(o.at, "--at");
      const state = await withLog(o, async (store) => {
        await requireWithinLog(store, at, "--at");
        return replay(store, at);
      });
      if (o.json === true) return printJson({ seq: state.seq, tables: state.tables });
      print(`state as of event ${state.seq}:`);
      if (state.plugins.length === 0) return print("no plugins");
      print(table(
        ["NAME", "RUNNING", "ASKED FOR", "OUTCOME", "PENDING"],
        state.plugins.map((p) => [
          p.name, shortImage(p.running), p.deleted ? "(deleted)" : shortImage(p.asked), outcomeText(p.outcome), p.pending === null ? "-" : describePending(p.pending),
        ]),
      ));
      if (state.verdicts > 0) print(`${state.verdicts} image verdict(s) recorded`);
    });

  withJson(withData(program.command("verify-log")))
    .description("walk the hash chain, naming the first event whose hash does not hold, and check the guards that keep the log append-only; with --checkpoint, check that the log still has the root a signed checkpoint kept elsewhere says (a log rebuilt wholesale, or its newest events deleted, is caught), and with --previous that it extends an older one (a fork is caught)")
    .option("--restore-guards", "re-create missing guards once the chain is seen to hold")
    .option("--checkpoint <file>", "a signed checkpoint of this log kept elsewhere (from /tlog/checkpoint, a witness, a proof)")
    .option("--previous <file>", "an older signed checkpoint the log must extend (with --checkpoint)")
    .option("--key <key>", "the log's verifier key, or a file holding it (default: the data folder's log key)")
    // The chain, checkpoint and decision checks load only for the command that runs them.
    .action(async (o: VerifyLogOptions) => {
      const { verifyLogCommand } = await import("./log-checks.js");
      await verifyLogCommand(o);
    });

  withJson(withData(program.command("check-decisions")))
    .description("re-run the deciders over the log, each decision under the rules it names: report every one they do not reproduce (exit 1), and apart those today's rules would decide differently")
    .action(async (o: DataOptions) => {
      const { checkDecisionsCommand } = await import("./log-checks.js");
      await checkDecisionsCommand(o);
    });
}
