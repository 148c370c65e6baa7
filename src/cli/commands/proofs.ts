/**
 * Proofs an auditor takes away (docs/adr/0153, 0154): `prove SEQ` writes a C2SP tlog-proof of one
 * event against a signed checkpoint and its cosignatures; `verify-proof` checks one offline with
 * nothing but the file and the public keys; `export --since SEQ` writes a run of events with what
 * ties them to a signed checkpoint, and `verify-export` checks it offline, in one pass.
 * Verdicts: exit 0 when everything holds, 1 with one line per failure, 2 for bad input.
 */
import { createReadStream, createWriteStream } from "node:fs";
import type { WriteStream } from "node:fs";
import { Buffer } from "node:buffer";
import type { Command } from "commander";
import {
  AppError, ExportCheck, exportLog, LOG_KEY_TYPES, logVerifier, parseCount, proveEvent, readInputFile, readVerifierKey, requireFile, verifyProofFile,
  WITNESS_KEY_TYPES,
} from "../../app/index.js";
import type { LeafEvent } from "../../app/index.js";
import { MAX_EXPORT_LINE, MAX_PROOF_FILE_BYTES } from "../../tlog/index.js";
import type { NoteVerifier, WitnessFinding } from "../../tlog/index.js";
import { dataDir, openLog, print, printJson, withData, withJson } from "../context.js";
import type { DataOptions } from "../context.js";

const repeatable = (v: string, prev: string[] = []) => [...prev, v];

/** The keys an offline check is given: the log's, and each witness whose cosignature it requires. */
function withKeys(cmd: Command): Command {
  return cmd
    .requiredOption("--key <key>", "the log's verifier key (<name>+<key ID>+<base64>), or a file holding it")
    .option("--witness <key>", "a witness whose cosignature is required: its verifier key, or a file holding it (repeatable)", repeatable);
}

interface VerifyOptions {
  key: string;
  witness?: string[];
  json?: boolean;
}

/** The log's key and the witnesses' keys a verify command was given (exit 2 for a bad one). */
function keysOf(o: VerifyOptions): { log: NoteVerifier; witnesses: NoteVerifier[] } {
  return {
    log: readVerifierKey(o.key, "--key", LOG_KEY_TYPES),
    witnesses: (o.witness ?? []).map((w) => readVerifierKey(w, "--witness", WITNESS_KEY_TYPES)),
  };
}

function witnessLines(found: readonly WitnessFinding[]): string[] {
  return found.filter((w) => w.cosigned).map((w) => `  cosigned by ${w.witness}${w.timestamp === undefined ? "" : ` at ${new Date(w.timestamp * 1000).toISOString()}`}`);
}

const describeEvent = (e: LeafEvent | null, seq: number) => (e === null ? `entry ${seq - 1}` : `event ${e.seq} (${e.type} on ${e.stream}, ${e.time}, by ${e.actor})`);

/** Writes lines to a file or stdout, waiting when the stream asks to. */
async function writeLine(out: WriteStream | NodeJS.WriteStream, line: string): Promise<void> {
  if (!out.write(`${line}\n`)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
}

async function openOut(path: string | undefined): Promise<WriteStream | NodeJS.WriteStream> {
  if (path === undefined) return process.stdout;
  const out = createWriteStream(path, { flags: "w", mode: 0o644 });
  await new Promise<void>((resolve, reject) => {
    out.once("open", () => resolve());
    out.once("error", (err: NodeJS.ErrnoException) => reject(new AppError("usage", `--out: cannot write ${JSON.stringify(path)} (${err.code ?? "error"})`, "out")));
  });
  return out;
}

async function closeOut(out: WriteStream | NodeJS.WriteStream): Promise<void> {
  if (out === process.stdout) return;
  await new Promise<void>((resolve, reject) => (out as WriteStream).end((err?: Error | null) => (err ? reject(err) : resolve())));
}

/** Calls `onLine` with each line of a file (without its newline), refusing a line over `cap` characters before it is kept whole. */
async function eachLine(path: string, cap: number, onLine: (line: string) => void): Promise<void> {
  requireFile(path, "FILE");
  let rest = "";
  for await (const chunk of createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 16 })) {
    rest += chunk as string;
    let nl: number;
    while ((nl = rest.indexOf("\n")) >= 0) {
      onLine(rest.slice(0, nl));
      rest = rest.slice(nl + 1);
    }
    if (rest.length > cap) throw new AppError("invalid_resource", `${path} is not a log export: a line is over ${cap} characters`, "export");
  }
  if (rest !== "") onLine(rest);
}

export function register(program: Command): void {
  withJson(withData(program.command("prove")))
    .description("write a self-contained proof (C2SP tlog-proof) that an event is in the log: the event, its inclusion proof, and a signed checkpoint with its witnesses' cosignatures")
    .argument("<seq>", "the event's sequence number")
    .option("--out <file>", "write the proof to this file (default: standard output)")
    .option("--key <key>", "the log's verifier key the proof is checked with before it is written, or a file holding it (default: the data folder's log key, or $OPENFIEF_LOG_KEY_FILE's)")
    .action(async (seqText: string, o: DataOptions & { out?: string; key?: string }) => {
      const seq = parseCount(seqText, "SEQ");
      const key = o.key !== undefined ? readVerifierKey(o.key, "--key", LOG_KEY_TYPES) : logVerifier(o.store === undefined ? dataDir(o) : null, process.env);
      const store = await openLog(o);
      try {
        const proof = await proveEvent(store, seq, key);
        if (o.out === undefined) {
          process.stdout.write(proof.text);
          return;
        }
        const out = await openOut(o.out);
        out.write(proof.text);
        await closeOut(out);
        if (o.json === true) printJson({ out: o.out, seq: proof.seq, size: proof.size, origin: proof.origin, cosigners: proof.cosigners });
        else print(`wrote the proof of event ${seq} to ${o.out}: checkpoint of ${proof.size} events of ${proof.origin}${proof.cosigners.length === 0 ? ", no witness cosignature yet" : `, cosigned by ${proof.cosigners.join(", ")}`}`);
      } finally {
        await store.close();
      }
    });

  withKeys(withJson(program.command("verify-proof")))
    .description("check a proof file offline with the log's public key (and the witnesses you require): one line per failure, exit 1 when any")
    .argument("<file>", "the proof file (openfief prove)")
    .action((file: string, o: VerifyOptions) => {
      const { log, witnesses } = keysOf(o);
      const verdict = verifyProofFile(readInputFile(file, "FILE", MAX_PROOF_FILE_BYTES), log, witnesses);
      if (o.json === true) printJson({ ok: verdict.ok, problems: verdict.lines, index: verdict.index, checkpoint: verdict.checkpoint === null ? null : { origin: verdict.checkpoint.origin, size: verdict.checkpoint.size }, witnesses: verdict.witnesses, event: verdict.event });
      else if (verdict.ok) {
        print(`the proof holds: ${describeEvent(verdict.event, verdict.index + 1)} is in ${verdict.checkpoint?.origin ?? "the log"}'s checkpoint of ${verdict.checkpoint?.size ?? 0} events, signed by its key`);
        for (const l of witnessLines(verdict.witnesses)) print(l);
      } else for (const l of verdict.lines) print(l);
      if (!verdict.ok) process.exitCode = 1;
    });

  withJson(withData(program.command("export")))
    .description("write events from a sequence number with what ties them to a signed checkpoint (and its cosignatures), to check offline with verify-export")
    .requiredOption("--since <seq>", "the first event to export")
    .option("--until <seq>", "the last event to export (default: the newest checkpoint's last)")
    .option("--out <file>", "write the export to this file (default: standard output)")
    .action(async (o: DataOptions & { since: string; until?: string; out?: string }) => {
      const since = parseCount(o.since, "--since");
      const until = o.until === undefined ? null : parseCount(o.until, "--until");
      const store = await openLog(o);
      try {
        const out = await openOut(o.out);
        const done = await exportLog(store, since, until, (l) => writeLine(out, l));
        await closeOut(out);
        if (o.out !== undefined) {
          if (o.json === true) printJson({ out: o.out, ...done });
          else print(`wrote events ${done.from} to ${done.to} to ${o.out}, proved against the checkpoint of ${done.size} events${done.cosigners === 0 ? "" : ` (${done.cosigners} cosignature${done.cosigners === 1 ? "" : "s"})`}`);
        }
      } finally {
        await store.close();
      }
    });

  withKeys(withJson(program.command("verify-export")))
    .description("check an export offline with the log's public key (and the witnesses you require): one line per failure, exit 1 when any")
    .argument("<file>", "the export file (openfief export)")
    .option("--events", "once the export holds, print its events as JSON lines")
    .action(async (file: string, o: VerifyOptions & { events?: boolean }) => {
      const { log, witnesses } = keysOf(o);
      const check = new ExportCheck(log, witnesses);
      await eachLine(file, MAX_EXPORT_LINE + 64, (l) => check.line(l));
      const verdict = check.finish();
      if (o.json === true) printJson({ ok: verdict.ok, problems: verdict.lines, from: verdict.start + 1, to: verdict.end, checkpoint: verdict.checkpoint === null ? null : { origin: verdict.checkpoint.origin, size: verdict.checkpoint.size }, witnesses: verdict.witnesses });
      else if (verdict.ok && o.events !== true) {
        print(`the export holds: events ${verdict.start + 1} to ${verdict.end} are the log's, proved against ${verdict.checkpoint?.origin ?? "its"}'s checkpoint of ${verdict.checkpoint?.size ?? 0} events, signed by its key`);
        for (const l of witnessLines(verdict.witnesses)) print(l);
      } else if (!verdict.ok) for (const l of verdict.lines) print(l);
      if (!verdict.ok) {
        process.exitCode = 1;
        return;
      }
      if (o.events === true) {
        // A second pass: the events are printed only once the whole file is known to hold.
        const again = new ExportCheck(log, witnesses, (e, bytes) => process.stdout.write(`${e === null ? JSON.stringify({ entry: Buffer.from(bytes).toString("base64") }) : JSON.stringify(e)}\n`));
        await eachLine(file, MAX_EXPORT_LINE + 64, (l) => again.line(l));
      }
    });
}
