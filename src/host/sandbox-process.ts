/**
 * The host's handle on one module's sandbox process (ADR 0011): starts it, compiles the module in
 * it, creates and stops instances, runs calls and relays `host_call`s and log lines. Stopping an
 * instance that does not stop within the hard-stop delay kills the whole process with SIGKILL,
 * which always works; every call and instance of the process then ends, and the next use starts a
 * new process.
 */
import { fork, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FromSandbox, InstanceFailureCode, ToSandbox, WorkerCaps } from "./sandbox/protocol.js";

let entry: string | undefined;

/**
 * The sandbox's entry file. In the source tree it sits beside this module (`sandbox/sandbox.js`);
 * the build emits it beside the bundle (`dist/sandbox/sandbox.js`), one folder above the chunk
 * this module was bundled into (`dist/chunks/`). Its plain JavaScript runs in its own process and
 * threads, so it is not part of the bundle's chunks; a bundle never runs the source tree's copy.
 */
function sandboxEntry(): string {
  if (entry !== undefined) return entry;
  for (const candidate of ["./sandbox/sandbox.js", "../sandbox/sandbox.js"]) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(path)) return (entry = path);
  }
  throw new Error("the plugin sandbox (sandbox/sandbox.js) is not found beside the host's code: rebuild with npm run build");
}

/** What a call on an instance came to. */
export type RunOutcome =
  | { readonly ok: true; readonly response: Uint8Array; readonly dropped: number }
  | { readonly ok: false; readonly code: InstanceFailureCode; readonly message: string; readonly dropped: number };

/** How a call's instance reaches the host while it runs. */
export interface RunHandlers {
  log(fd: 1 | 2, line: string): void;
  /** Answers a `host_call`; the sandbox is told the answer when it resolves. */
  hostCall(request: Uint8Array): Promise<Uint8Array>;
}

/** Options of {@link SandboxProcess.start}. */
export interface SandboxOptions {
  /** How long a stopped instance may take to stop before the process is killed. */
  readonly hardStopMs: number;
  readonly caps: WorkerCaps;
  readonly stackMb: number;
  /** Told once, when the process is gone (crashed, killed or closed). */
  readonly onExit: (reason: string) => void;
  /** Told when an instance died by itself (its worker crashed or exited). */
  readonly onInstanceLost: (iid: number) => void;
  /** Lines the process itself writes to stderr (not a guest's log), for diagnostics. */
  readonly onDiagnostic: (line: string) => void;
}

type Pending =
  | { readonly kind: "compile"; readonly resolve: (r: { ok: true } | { ok: false; message: string }) => void }
  | { readonly kind: "spawn"; readonly resolve: (r: { ok: true } | { ok: false; code: InstanceFailureCode; message: string }) => void }
  | { readonly kind: "run"; readonly cid: number; readonly handlers: RunHandlers; readonly resolve: (r: RunOutcome) => void }
  | { readonly kind: "stop"; readonly resolve: () => void; readonly timer: NodeJS.Timeout };

/** One sandbox process. */
export class SandboxProcess {
  readonly #child: ChildProcess;
  readonly #o: SandboxOptions;
  #compile: Pending | undefined;
  /** Per instance id: what the instance is doing for the host. */
  readonly #pending = new Map<number, Pending>();
  #alive = true;
  #exitReason = "the sandbox process stopped";

  private constructor(child: ChildProcess, o: SandboxOptions) {
    this.#child = child;
    this.#o = o;
    child.on("message", (m) => this.#receive(m as FromSandbox));
    child.on("exit", (code, signal) => this.#exited(signal !== null ? `the sandbox process was killed (${signal})` : `the sandbox process exited (${code ?? "?"})`));
    child.on("error", () => this.kill("the sandbox process could not be reached"));
    let diag = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (d: string) => {
      // Bounded: a process that writes without newlines is cut every 4 KiB.
      diag += d;
      let nl: number;
      while ((nl = diag.indexOf("\n")) >= 0 || diag.length > 4096) {
        const end = nl >= 0 ? nl : 4096;
        o.onDiagnostic(diag.slice(0, end));
        diag = diag.slice(nl >= 0 ? end + 1 : end);
      }
    });
  }

  /** Starts a sandbox process (nothing of the parent's environment, flags or loaders passes). */
  static start(o: SandboxOptions): SandboxProcess {
    const child = fork(sandboxEntry(), [], {
      execArgv: [],
      env: {},
      serialization: "advanced",
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    return new SandboxProcess(child, o);
  }

  /** The process id, while it runs. */
  get pid(): number | undefined {
    return this.#alive ? this.#child.pid : undefined;
  }

  get alive(): boolean {
    return this.#alive;
  }

  #send(m: ToSandbox): void {
    if (!this.#alive || !this.#child.connected) return;
    try {
      this.#child.send(m);
    } catch {
      this.kill("the sandbox process could not be reached");
    }
  }

  /** Compiles the module in the process; once per process. */
  compile(bytes: Uint8Array): Promise<{ ok: true } | { ok: false; message: string }> {
    if (!this.#alive) return Promise.resolve({ ok: false, message: this.#exitReason });
    return new Promise((resolve) => {
      this.#compile = { kind: "compile", resolve };
      this.#send({ t: "compile", bytes });
    });
  }

  /** Creates instance `iid` (instantiate, `_initialize`, ABI version check). */
  spawn(iid: number): Promise<{ ok: true } | { ok: false; code: InstanceFailureCode; message: string }> {
    if (!this.#alive) return Promise.resolve({ ok: false, code: "plugin_failed", message: this.#exitReason });
    return new Promise((resolve) => {
      this.#pending.set(iid, { kind: "spawn", resolve });
      this.#send({ t: "spawn", iid, stackMb: this.#o.stackMb, caps: this.#o.caps });
    });
  }

  /** Runs one call on an idle instance. */
  run(iid: number, cid: number, request: Uint8Array, secrets: readonly string[], handlers: RunHandlers): Promise<RunOutcome> {
    if (!this.#alive) return Promise.resolve({ ok: false, code: "plugin_failed", message: this.#exitReason, dropped: 0 });
    return new Promise((resolve) => {
      this.#pending.set(iid, { kind: "run", cid, handlers, resolve });
      this.#send({ t: "call", iid, cid, request, secrets });
    });
  }

  /**
   * Stops instance `iid`, ending whatever it runs. Resolves once it is gone: stopped by its
   * sandbox, or the whole process killed after the hard-stop delay.
   */
  stop(iid: number): Promise<void> {
    const before = this.#pending.get(iid);
    if (before?.kind === "run") before.resolve({ ok: false, code: "plugin_failed", message: "the instance was stopped", dropped: 0 });
    if (before?.kind === "spawn") before.resolve({ ok: false, code: "plugin_failed", message: "the instance was stopped" });
    if (before?.kind === "stop") return new Promise((resolve) => this.#chainStop(iid, resolve));
    if (!this.#alive) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.kill(`an instance did not stop within ${this.#o.hardStopMs} ms`), this.#o.hardStopMs);
      this.#pending.set(iid, { kind: "stop", resolve, timer });
      this.#send({ t: "stop", iid });
    });
  }

  #chainStop(iid: number, resolve: () => void): void {
    const p = this.#pending.get(iid);
    if (p?.kind !== "stop") {
      resolve();
      return;
    }
    this.#pending.set(iid, {
      kind: "stop",
      timer: p.timer,
      resolve: () => {
        p.resolve();
        resolve();
      },
    });
  }

  /** Kills the process with SIGKILL; every pending operation settles as failed. */
  kill(reason: string): void {
    if (!this.#alive) return;
    this.#exitReason = reason;
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // Already gone: the exit handler settles everything.
    }
    this.#exited(reason);
  }

  #exited(reason: string): void {
    if (!this.#alive) return;
    this.#alive = false;
    this.#exitReason = reason;
    if (this.#compile?.kind === "compile") this.#compile.resolve({ ok: false, message: reason });
    this.#compile = undefined;
    for (const p of this.#pending.values()) settleFailed(p, reason);
    this.#pending.clear();
    this.#o.onExit(reason);
  }

  #receive(m: FromSandbox): void {
    switch (m.t) {
      case "compiled":
      case "compile_failed":
        return this.#compiled(m);
      case "ready":
      case "spawn_failed":
        return this.#spawned(m);
      case "log":
      case "host_call":
        return this.#running(m);
      case "done":
      case "failed":
        return this.#ran(m);
      case "stopped":
        return this.#stopped(m.iid);
      case "crashed":
        return this.#crashed(m.iid, m.message);
    }
  }

  /** The pending operation of instance `iid` when it is of `kind` (and, for a run, of call `cid`). */
  #pendingOf<K extends Pending["kind"]>(iid: number, kind: K, cid?: number | null): Extract<Pending, { kind: K }> | undefined {
    const p = this.#pending.get(iid);
    if (p?.kind !== kind) return undefined;
    if (p.kind === "run" && p.cid !== cid) return undefined;
    return p as Extract<Pending, { kind: K }>;
  }

  #compiled(m: Extract<FromSandbox, { t: "compiled" | "compile_failed" }>): void {
    const c = this.#compile;
    this.#compile = undefined;
    if (c?.kind === "compile") c.resolve(m.t === "compiled" ? { ok: true } : { ok: false, message: m.message });
  }

  #spawned(m: Extract<FromSandbox, { t: "ready" | "spawn_failed" }>): void {
    const p = this.#pendingOf(m.iid, "spawn");
    if (p === undefined) return;
    this.#pending.delete(m.iid);
    p.resolve(m.t === "ready" ? { ok: true } : { ok: false, code: m.code, message: m.message });
  }

  #running(m: Extract<FromSandbox, { t: "log" | "host_call" }>): void {
    const p = this.#pendingOf(m.iid, "run", m.cid);
    if (p === undefined) return;
    if (m.t === "log") {
      for (const l of m.lines) p.handlers.log(l.fd, l.line);
      return;
    }
    void p.handlers.hostCall(m.request).then((response) => {
      if (this.#pending.get(m.iid) === p) this.#send({ t: "reply", iid: m.iid, response });
    });
  }

  #ran(m: Extract<FromSandbox, { t: "done" | "failed" }>): void {
    const p = this.#pendingOf(m.iid, "run", m.cid);
    if (p === undefined) return;
    this.#pending.delete(m.iid);
    p.resolve(m.t === "done" ? { ok: true, response: m.response, dropped: m.dropped } : { ok: false, code: m.code, message: m.message, dropped: m.dropped });
  }

  #stopped(iid: number): void {
    const p = this.#pendingOf(iid, "stop");
    if (p === undefined) return;
    this.#pending.delete(iid);
    clearTimeout(p.timer);
    p.resolve();
  }

  #crashed(iid: number, message: string): void {
    const p = this.#pending.get(iid);
    if (p?.kind === "stop") return;
    if (p !== undefined) {
      this.#pending.delete(iid);
      settleFailed(p, message);
    }
    this.#o.onInstanceLost(iid);
  }
}

function settleFailed(p: Pending, reason: string): void {
  switch (p.kind) {
    case "compile":
      p.resolve({ ok: false, message: reason });
      return;
    case "spawn":
      p.resolve({ ok: false, code: "plugin_failed", message: reason });
      return;
    case "run":
      p.resolve({ ok: false, code: "plugin_failed", message: reason, dropped: 0 });
      return;
    case "stop":
      clearTimeout(p.timer);
      p.resolve();
      return;
  }
}
