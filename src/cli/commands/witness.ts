/**
 * `openfief witness`: a transparency-log witness (C2SP tlog-witness) for the logs it is given. It
 * cosigns a log's checkpoint only when it extends the last one it cosigned for that log, and keeps
 * that record in its data folder, written to disk before any cosignature is answered. Prints its
 * verifier key and where it listens on standard output, then one JSON line per request; stops on
 * SIGTERM or an interrupt after the requests in flight. Every bad flag or file is one line on
 * standard error and exit 2; a folder it cannot trust (a corrupt state file, a key others may read,
 * another witness on it) is one line and exit 1.
 */
import { readFileSync, statSync } from "node:fs";
import { isIP } from "node:net";
import type { Command } from "commander";
import { pino } from "pino";
import { CliError } from "../cli-error.js";
import { checkWitnessName, collectLogs, DEFAULT_WITNESS_DIR, listenWitness, LOGS_CAPS, logsFileLines, openWitness, witnessVerifierKey, WitnessErrorCode } from "../../witness/index.js";
import type { AccessEntry, LogConfig, LogLine, Result, WitnessError } from "../../witness/index.js";

interface Options {
  data: string;
  name?: string;
  log: string[];
  logs?: string;
  listen: string;
  printKey?: boolean;
}

/** The witness's default address: this machine only, until its operator says otherwise. */
export const DEFAULT_WITNESS_LISTEN = "127.0.0.1:4790";
/** How long requests in flight may take to finish once asked to stop. */
const DRAIN_MS = 10_000;

/** Refusals of the folder the witness would cosign from: it ran, and found it cannot be trusted. */
const REFUSED: ReadonlySet<string> = new Set([WitnessErrorCode.FolderInUse, WitnessErrorCode.BadKeyFile, WitnessErrorCode.CorruptState]);

function value<T>(r: Result<T>): T {
  if (r.ok) return r.value;
  throw refusal(r.error);
}

const refusal = (e: WitnessError) => new CliError(e.message, REFUSED.has(e.code) ? 1 : 2);

const badListen = (text: string): never => {
  throw new CliError(`--listen ${JSON.stringify(text)}: expected HOST:PORT with an IP address (or localhost) and a port from 0 to 65535, e.g. ${DEFAULT_WITNESS_LISTEN}`);
};

/** `--listen`: `127.0.0.1:4790`, `[::1]:4790`, `localhost:0` (port 0: any free port). */
export function parseWitnessListen(text: string): { host: string; port: number } {
  const colon = text.lastIndexOf(":");
  if (colon < 0) return badListen(text);
  let host = text.slice(0, colon);
  const portText = text.slice(colon + 1);
  if (host.startsWith("[") && host.endsWith("]")) {
    host = host.slice(1, -1);
    if (isIP(host) !== 6) return badListen(text);
  } else if (host !== "localhost" && isIP(host) !== 4) {
    return badListen(text);
  }
  const digits = portText.length > 0 && portText.length <= 5 && [...portText].every((c) => c >= "0" && c <= "9");
  if (!digits || (portText.length > 1 && portText.startsWith("0")) || Number(portText) > 65535) return badListen(text);
  return { host, port: Number(portText) };
}

/** The lines of `--logs FILE`, its size checked before it is read. */
function fileLines(path: string): readonly LogLine[] {
  let bytes: Uint8Array;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new CliError(`--logs ${JSON.stringify(path)} is not a file`);
    if (st.size > LOGS_CAPS.maxFileBytes) throw new CliError(`--logs ${JSON.stringify(path)}: a logs file is at most ${LOGS_CAPS.maxFileBytes} bytes`);
    bytes = readFileSync(path);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`--logs ${JSON.stringify(path)} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  return value(logsFileLines(bytes, path));
}

/** Every log of the flags: `--log` values, then the `--logs` file's lines. */
function logsOf(opts: Options): readonly LogConfig[] {
  const lines: LogLine[] = opts.log.map((text) => ({ text, where: `--log ${JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text)}` }));
  if (opts.logs !== undefined) lines.push(...fileLines(opts.logs));
  return value(collectLogs(lines));
}

const collect = (v: string, previous: string[]): string[] => [...previous, v];

export function register(program: Command): void {
  program
    .command("witness")
    .description("run a transparency-log witness: cosign the checkpoints of the given logs, never two histories of one")
    .option("--data <dir>", "the witness's folder: its key and what it cosigned", DEFAULT_WITNESS_DIR)
    .option("--name <name>", "the witness's name, a key name such as witness.example.com/w1 (default: <host name>/witness)")
    .option("--log <line>", "a log to witness, \"<origin> <verifier key>\" (repeatable)", collect, [])
    .option("--logs <file>", "a file of logs to witness, one \"<origin> <verifier key>\" a line (# comments)")
    .option("--listen <host:port>", "address to serve on (port 0: a free one)", DEFAULT_WITNESS_LISTEN)
    .option("--print-key", "print the witness's verifier key and exit (a key is made if the folder has none)")
    .action(async (opts: Options) => {
      const listen = parseWitnessListen(opts.listen);
      if (opts.name !== undefined) value(checkWitnessName(opts.name));
      if (opts.printKey === true) {
        const key = value(witnessVerifierKey(opts.data, opts.name));
        for (const note of key.notes) process.stderr.write(`openfief witness: ${note}\n`);
        process.stdout.write(`${key.verifierKey}\n`);
        return;
      }
      await serve(opts, listen);
    });
}

async function serve(opts: Options, listen: { host: string; port: number }): Promise<void> {
  const logs = logsOf(opts);
  // Listening for the signals before anything starts: one that comes while the witness starts
  // stops it as soon as it has started.
  let stop = (): void => undefined;
  const stopped = new Promise<void>((resolve) => {
    stop = () => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      resolve();
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
  let opened;
  try {
    opened = value(openWitness({ dir: opts.data, ...(opts.name === undefined ? {} : { name: opts.name }), logs }));
  } catch (err) {
    stop();
    throw err;
  }
  for (const note of opened.notes) process.stderr.write(`openfief witness: ${note}\n`);
  // Synchronous lines: what was answered is in the log even if the process is killed right after.
  const logger = pino({ base: null, level: process.env["OPENFIEF_LOG_LEVEL"] ?? "info" }, pino.destination({ dest: 1, sync: true }));
  let server;
  try {
    server = await listenWitness(opened.service, listen, { log: (e: AccessEntry) => logger.info(e, "request") });
  } catch (err) {
    stop();
    opened.release();
    throw new CliError(`the witness cannot listen on ${opts.listen} (${(err as NodeJS.ErrnoException).code ?? "error"})`, 1);
  }
  process.stdout.write(`verifier key: ${opened.service.verifierKey}\nlistening on ${server.url} (${logs.length} ${logs.length === 1 ? "log" : "logs"})\n`);
  await stopped;
  await server.close(DRAIN_MS);
  opened.release();
}
