/**
 * One running unconfined plugin (seed 003, `Executable`): a subprocess of its sealed copy, in its
 * own process group, speaking the ABI as NDJSON frames over stdin/stdout (docs/abi.md). One
 * process serves all its calls, concurrently. Its stderr is its log, captured like a guest's.
 * Anything on stdout that is not a frame, or a frame longer than the message cap, is a protocol
 * violation: the process group is killed and every call in flight fails.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { rm } from "node:fs/promises";
import { dirname } from "node:path";
import { hostError, HostErrorCode, type HostError } from "../errors.js";
import type { Deadline } from "../deadline.js";
import { parseEnvelope, type ParsedResponse } from "../response.js";
import { LineCapture, logBudget, redactionList } from "../sandbox/log-lines.js";

/** Options of {@link ExecutableProcess.start}. */
export interface ExecutableProcessOptions {
  /** The sealed copy to run. */
  readonly path: string;
  readonly name: string;
  readonly digest: string;
  readonly messageBytes: number;
  readonly logLineChars: number;
  readonly logCallChars: number;
  readonly logCallLines: number;
  /** Receives each (redacted, capped) line the process writes to stderr. */
  readonly log: (line: string) => void;
  /** Told once when the process is gone. */
  readonly onExit: () => void;
}

interface InFlight {
  readonly resolve: (r: ParsedResponse) => void;
}

const MAX_SECRETS = 256;
const ENCODER = new TextEncoder();

/** A running unconfined plugin. */
export class ExecutableProcess {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #o: ExecutableProcessOptions;
  readonly #inFlight = new Map<number, InFlight>();
  readonly #secrets = new Set<string>();
  readonly #stderr: LineCapture;
  readonly #budget;
  #nextId = 1;
  #alive = true;
  #killed = false;
  #stdout: Buffer[] = [];
  #stdoutBytes = 0;
  #stopReason: HostError | undefined;

  private constructor(child: ChildProcessWithoutNullStreams, o: ExecutableProcessOptions) {
    this.#child = child;
    this.#o = o;
    this.#budget = logBudget(o.logCallChars, o.logCallLines);
    this.#stderr = new LineCapture({ lineChars: o.logLineChars, budget: this.#budget, list: [], emit: o.log });
    child.stdout.on("data", (d: Buffer) => this.#onStdout(d));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d: string) => this.#stderr.write(d));
    child.stdin.on("error", () => undefined);
    child.on("error", () => this.kill(hostError(HostErrorCode.ExecutableInvalid, `${o.name} could not be started`)));
    child.on("exit", (code, signal) => this.#exited(code, signal));
  }

  /**
   * Starts the process and checks it speaks ABI version 1: the first frame is
   * `{"id":0,"method":"abi_version","params":{}}`, answered `{"id":0,"result":1}`.
   */
  static async start(o: ExecutableProcessOptions, deadline: Deadline): Promise<{ ok: true; process: ExecutableProcess } | { ok: false; error: HostError }> {
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(o.path, [], {
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
        cwd: dirname(o.path),
        // Nothing of the control plane's environment: it may hold credentials.
        env: { PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin` },
      });
    } catch {
      await rm(o.path, { force: true });
      return { ok: false, error: hostError(HostErrorCode.ExecutableInvalid, `${o.name} could not be started`) };
    }
    const p = new ExecutableProcess(child, o);
    const hello = await Promise.race([p.#send(0, "abi_version", {}), deadline.reached]);
    if (hello === "timeout") {
      p.kill(hostError(HostErrorCode.ExecutableInvalid, `${o.name} did not answer abi_version in time`));
      return { ok: false, error: hostError(HostErrorCode.ExecutableInvalid, `${o.name} did not answer abi_version within the time limit: it does not speak the plugin ABI over stdio`) };
    }
    if (!hello.ok) {
      p.kill(hello.error.source === "host" ? hello.error : undefined);
      const e = hello.error;
      return { ok: false, error: e.source === "host" && e.code !== HostErrorCode.Failed ? e : hostError(HostErrorCode.ExecutableInvalid, `${o.name} does not speak the plugin ABI over stdio: ${e.message}`) };
    }
    if (hello.result !== 1) {
      p.kill(undefined);
      return typeof hello.result === "number"
        ? { ok: false, error: hostError(HostErrorCode.AbiUnsupported, `${o.name} speaks ABI version ${hello.result}; this host serves version 1`) }
        : { ok: false, error: hostError(HostErrorCode.ExecutableInvalid, `${o.name} answered abi_version with something other than a version number`) };
    }
    return { ok: true, process: p };
  }

  /** False once it exited or is being killed: no new call goes to it. */
  get alive(): boolean {
    return this.#alive && !this.#killed;
  }

  /** Calls in flight. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** One call; the caller races it with its deadline and kills the process when time is up. */
  call(method: string, params: unknown, secrets: readonly string[]): Promise<ParsedResponse> {
    let grew = false;
    for (const s of secrets) {
      if (s !== "" && !this.#secrets.has(s)) {
        if (this.#secrets.size >= MAX_SECRETS) this.#secrets.delete(this.#secrets.values().next().value as string);
        this.#secrets.add(s);
        grew = true;
      }
    }
    if (grew) this.#stderr.setList(redactionList([...this.#secrets]));
    // Each call brings its share of log: a process that logs between calls cannot starve them.
    this.#budget.left = Math.min(this.#budget.left + this.#o.logCallChars, 4 * this.#o.logCallChars);
    this.#budget.lines = Math.min(this.#budget.lines + this.#o.logCallLines, 4 * this.#o.logCallLines);
    return this.#send(this.#nextId++, method, params);
  }

  #send(id: number, method: string, params: unknown): Promise<ParsedResponse> {
    if (!this.alive) return Promise.resolve({ ok: false, error: this.#stopReason ?? hostError(HostErrorCode.Failed, `${this.#o.name} is not running`) });
    const frame = ENCODER.encode(`${JSON.stringify({ id, method, params })}\n`);
    if (frame.length > this.#o.messageBytes) return Promise.resolve({ ok: false, error: hostError(HostErrorCode.Failed, `the request is larger than the message cap of ${this.#o.messageBytes} bytes`, "params") });
    return new Promise((resolve) => {
      this.#inFlight.set(id, { resolve });
      this.#child.stdin.write(frame);
    });
  }

  #onStdout(d: Buffer): void {
    let start = 0;
    for (let nl = d.indexOf(10); nl >= 0; nl = d.indexOf(10, start)) {
      const piece = d.subarray(start, nl);
      start = nl + 1;
      if (this.#stdoutBytes + piece.length > this.#o.messageBytes) return this.#violation(`wrote a stdout line longer than the message cap of ${this.#o.messageBytes} bytes`);
      this.#stdout.push(piece);
      const line = Buffer.concat(this.#stdout).toString("utf8");
      this.#stdout = [];
      this.#stdoutBytes = 0;
      if (!this.#frame(line)) return;
    }
    const rest = d.subarray(start);
    this.#stdoutBytes += rest.length;
    if (this.#stdoutBytes > this.#o.messageBytes) return this.#violation(`wrote a stdout line longer than the message cap of ${this.#o.messageBytes} bytes`);
    if (rest.length > 0) this.#stdout.push(rest);
  }

  /** Handles one stdout line; false when it broke the protocol (the process is then gone). */
  #frame(line: string): boolean {
    if (line.trim() === "") return true;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.#violation("wrote a line on stdout that is not JSON");
      return false;
    }
    const id = (value as { id?: unknown } | null)?.id;
    if (typeof value !== "object" || value === null || !Number.isSafeInteger(id)) {
      this.#violation("wrote a frame on stdout without an integer id");
      return false;
    }
    const waiting = this.#inFlight.get(id as number);
    // An answer to a call no longer waited for (none, since a late call kills the process).
    if (waiting === undefined) return true;
    this.#inFlight.delete(id as number);
    waiting.resolve(parseEnvelope(value, "id"));
    return true;
  }

  #violation(why: string): void {
    this.kill(hostError(HostErrorCode.ExecutableInvalid, `${this.#o.name} ${why}: it does not speak the plugin ABI over stdio`));
  }

  /** Kills the process group; calls in flight fail with `error` (plugin_failed by default). */
  kill(error: HostError | undefined): void {
    if (this.#stopReason === undefined) this.#stopReason = error ?? hostError(HostErrorCode.Failed, `${this.#o.name} was stopped`);
    this.#killed = true;
    if (this.#alive && this.#child.pid !== undefined) {
      try {
        process.kill(-this.#child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    this.#failAll();
  }

  #failAll(): void {
    const error = this.#stopReason ?? hostError(HostErrorCode.Failed, `${this.#o.name} stopped`);
    for (const f of this.#inFlight.values()) f.resolve({ ok: false, error });
    this.#inFlight.clear();
  }

  #exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.#alive) return;
    this.#alive = false;
    this.#stderr.end();
    if (this.#stopReason === undefined) {
      this.#stopReason = hostError(HostErrorCode.Failed, `${this.#o.name} exited (${signal ?? `code ${code ?? "?"}`})`);
    }
    // Whatever it left behind in its group goes too.
    if (this.#child.pid !== undefined) {
      try {
        process.kill(-this.#child.pid, "SIGKILL");
      } catch {
        // The group is empty.
      }
    }
    this.#failAll();
    void rm(this.#o.path, { force: true });
    this.#o.onExit();
  }
}
