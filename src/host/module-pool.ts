/**
 * One compiled module and its pool of instances (seed 003, `Module`): its calls share at most
 * `Limits.instances` instances; a call takes an idle instance, or has one instantiated when
 * there is room, or waits its turn, all within its time limit — unless `Caps.queuedCalls` calls
 * wait already, when it is refused at once (`plugin_busy`). An instance goes back to the pool
 * after a call that succeeded and is discarded after any failure. The module is compiled once per
 * sandbox process, which is replaced only after it dies or is killed.
 */
import type { Logger } from "pino";
import { hostError, HostErrorCode, type HostError, type HostResult } from "./errors.js";
import type { Caps, Limits } from "./limits.js";
import type { Deadline } from "./deadline.js";
import type { PluginHostMetrics, RunEnd } from "./metrics.js";
import { SandboxProcess, type RunHandlers } from "./sandbox-process.js";

/** What a call on the pool came to. */
export type PoolOutcome =
  | { readonly ok: true; readonly response: Uint8Array; readonly dropped: number }
  | { readonly ok: false; readonly error: HostError; readonly dropped: number };

/** Options of a {@link ModulePool}. */
export interface PoolOptions {
  readonly digest: string;
  /** The checked, rewritten bytes to compile. */
  readonly bytes: Uint8Array;
  readonly limits: Limits;
  readonly caps: Caps;
  readonly hardStopMs: number;
  readonly logger: Logger;
  /** The host's metrics, when it keeps any. */
  readonly metrics?: PluginHostMetrics;
}

type InstanceState = "starting" | "idle" | "busy" | "stopping";

interface InstanceRecord {
  readonly iid: number;
  readonly sandbox: SandboxProcess;
  state: InstanceState;
}

type Acquired = { readonly ok: true; readonly instance: InstanceRecord } | { readonly ok: false; readonly error: HostError };

interface Waiter {
  readonly give: (a: Acquired) => void;
}

const CLOSED = hostError(HostErrorCode.NotInstalled, "the module was evicted from the host");

/** A module's sandbox and instance pool. */
export class ModulePool {
  readonly digest: string;
  readonly #o: PoolOptions;
  #sandbox: SandboxProcess | undefined;
  #compiled: Promise<HostResult<void>> | undefined;
  /** A compile error is the module's, not the process's: every later call fails the same way. */
  #broken: HostError | undefined;
  readonly #instances = new Map<number, InstanceRecord>();
  readonly #waiters: Waiter[] = [];
  #starting = 0;
  #nextIid = 0;
  #nextCid = 0;
  #closed = false;
  /** Instances stopped, and how many of those stops needed the process killed. */
  readonly stops = { instances: 0, processes: 0 };

  constructor(o: PoolOptions) {
    this.digest = o.digest;
    this.#o = o;
  }

  /** Instances that exist (starting, idle, busy or stopping). */
  get size(): number {
    return this.#instances.size;
  }

  /** Calls running now. */
  get busy(): number {
    let n = 0;
    for (const i of this.#instances.values()) if (i.state === "busy") n++;
    return n;
  }

  /** Calls waiting for an instance now. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** Calls running or waiting, and instances starting: a pool with any is not dropped. */
  get active(): number {
    return this.busy + this.#waiters.length + this.#starting;
  }

  /** The sandbox process's pid, while one runs. */
  get pid(): number | undefined {
    return this.#sandbox?.pid;
  }

  #ensureSandbox(): { sandbox: SandboxProcess; compiled: Promise<HostResult<void>> } {
    if (this.#sandbox === undefined || !this.#sandbox.alive || this.#compiled === undefined) {
      const sandbox = SandboxProcess.start({
        hardStopMs: this.#o.hardStopMs,
        stackMb: this.#o.limits.stack / (1024 * 1024),
        caps: {
          messageBytes: this.#o.caps.messageBytes,
          logLineChars: this.#o.caps.logLineBytes,
          logCallChars: this.#o.caps.logCallBytes,
          logCallLines: this.#o.caps.logCallLines,
          hostCallsPerCall: this.#o.caps.hostCallsPerCall,
          memoryBytes: this.#o.limits.memory,
        },
        onExit: (reason) => this.#sandboxGone(sandbox, reason),
        onInstanceLost: (iid) => this.#lost(sandbox, iid),
        onDiagnostic: (line) => this.#o.logger.warn({ digest: this.digest, line }, "plugin sandbox diagnostic"),
      });
      this.#sandbox = sandbox;
      this.#compiled = sandbox.compile(this.#o.bytes).then((r): HostResult<void> => {
        if (r.ok) return { ok: true, value: undefined };
        // A process that died while compiling says nothing about the module.
        if (!sandbox.alive) return { ok: false, error: hostError(HostErrorCode.Failed, r.message) };
        const error = hostError(HostErrorCode.ModuleInvalid, `the module does not compile: ${r.message}`, "module");
        this.#broken = error;
        return { ok: false, error };
      });
    }
    return { sandbox: this.#sandbox, compiled: this.#compiled };
  }

  #sandboxGone(sandbox: SandboxProcess, reason: string): void {
    for (const [iid, rec] of this.#instances) if (rec.sandbox === sandbox) this.#instances.delete(iid);
    if (this.#sandbox === sandbox) {
      this.#sandbox = undefined;
      this.#compiled = undefined;
    }
    if (reason.startsWith("an instance did not stop")) {
      this.stops.processes++;
      this.#o.metrics?.hardStops.inc();
    }
    this.#grow();
  }

  #lost(sandbox: SandboxProcess, iid: number): void {
    const rec = this.#instances.get(iid);
    if (rec === undefined || rec.sandbox !== sandbox || rec.state === "stopping") return;
    this.#instances.delete(iid);
    this.#grow();
  }

  /** Compiles the module and readies one instance, so the next call finds one idle. */
  async prepare(): Promise<HostResult<void>> {
    if (this.#broken !== undefined) return { ok: false, error: this.#broken };
    const got = await this.#acquire(undefined);
    if (!got.ok) return got;
    this.#release(got.instance);
    return { ok: true, value: undefined };
  }

  /** Runs one call within `deadline`, or refuses it at once when too many calls wait already. */
  async run(request: Uint8Array, secrets: readonly string[], deadline: Deadline, handlers: RunHandlers): Promise<PoolOutcome> {
    const metrics = this.#o.metrics;
    if (this.#queueFull()) {
      metrics?.busy.inc();
      return { ok: false, error: this.#busyError(), dropped: 0 };
    }
    const waited = metrics?.queueWait.startTimer();
    const got = await this.#acquire(deadline);
    waited?.();
    if (!got.ok) return { ok: false, error: got.error, dropped: 0 };
    const inst = got.instance;
    if (deadline.expired) {
      this.#release(inst);
      return { ok: false, error: deadline.error(), dropped: 0 };
    }
    inst.state = "busy";
    const cid = ++this.#nextCid;
    const ran = metrics?.run.startTimer();
    const ended = (result: RunEnd): void => void ran?.({ result });
    const outcome = await Promise.race([inst.sandbox.run(inst.iid, cid, request, secrets, handlers), deadline.reached]);
    if (outcome === "timeout") {
      ended("timed_out");
      this.#discard(inst);
      return { ok: false, error: deadline.error(), dropped: 0 };
    }
    if (outcome.ok) {
      ended("returned");
      this.#release(inst);
      return outcome;
    }
    ended("failed");
    this.#discard(inst);
    return { ok: false, error: hostError(outcome.code, outcome.message), dropped: outcome.dropped };
  }

  /**
   * Whether a call arriving now would join a full queue: no instance idle, none may be started for
   * it, and as many calls as the cap wait beyond those the starting instances will serve.
   */
  #queueFull(): boolean {
    if (this.#closed || this.#broken !== undefined) return false;
    for (const rec of this.#instances.values()) if (rec.state === "idle") return false;
    if (this.#instances.size < this.#o.limits.instances) return false;
    return this.#waiters.length - this.#starting >= this.#o.caps.queuedCalls;
  }

  #busyError(): HostError {
    const { instances } = this.#o.limits;
    return hostError(HostErrorCode.Busy, `all ${instances} instance(s) of the module are busy and ${this.#o.caps.queuedCalls} call(s) wait already: try again later`);
  }

  #acquire(deadline: Deadline | undefined): Promise<Acquired> {
    if (this.#closed) return Promise.resolve({ ok: false, error: CLOSED });
    if (this.#broken !== undefined) return Promise.resolve({ ok: false, error: this.#broken });
    for (const rec of this.#instances.values()) {
      if (rec.state === "idle") {
        rec.state = "busy";
        return Promise.resolve({ ok: true, instance: rec });
      }
    }
    return new Promise<Acquired>((resolve) => {
      let settled = false;
      const waiter: Waiter = {
        give: (a) => {
          settled = true;
          resolve(a);
        },
      };
      this.#waiters.push(waiter);
      void deadline?.reached.then(() => {
        if (settled) return;
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        waiter.give({ ok: false, error: deadline.error() });
      });
      this.#grow();
    });
  }

  /** Starts instances for waiters while there is room. */
  #grow(): void {
    if (this.#closed) return;
    while (this.#waiters.length > this.#starting && this.#instances.size < this.#o.limits.instances) {
      const { sandbox, compiled } = this.#ensureSandbox();
      const rec: InstanceRecord = { iid: ++this.#nextIid, sandbox, state: "starting" };
      this.#instances.set(rec.iid, rec);
      this.#starting++;
      void this.#start(rec, compiled);
    }
  }

  async #start(rec: InstanceRecord, compiled: Promise<HostResult<void>>): Promise<void> {
    const c = await compiled;
    if (!c.ok) {
      this.#starting--;
      this.#instances.delete(rec.iid);
      if (this.#broken !== undefined) this.#failWaiters(this.#broken);
      else this.#waiters.shift()?.give({ ok: false, error: c.error });
      this.#grow();
      return;
    }
    const r = await rec.sandbox.spawn(rec.iid);
    this.#starting--;
    if (this.#instances.get(rec.iid) !== rec) {
      this.#grow();
      return;
    }
    if (!r.ok) {
      this.#discard(rec);
      this.#waiters.shift()?.give({ ok: false, error: hostError(r.code, r.message) });
      return;
    }
    rec.state = "idle";
    this.#release(rec);
  }

  #failWaiters(error: HostError): void {
    for (const w of this.#waiters.splice(0)) w.give({ ok: false, error });
  }

  /** An instance is free: the next waiter gets it, or it waits idle. */
  #release(rec: InstanceRecord): void {
    if (this.#instances.get(rec.iid) !== rec) return;
    if (this.#closed) {
      this.#discard(rec);
      return;
    }
    const w = this.#waiters.shift();
    if (w !== undefined) {
      rec.state = "busy";
      w.give({ ok: true, instance: rec });
      return;
    }
    rec.state = "idle";
  }

  /** Stops an instance; it counts against the limit until it is gone. */
  #discard(rec: InstanceRecord): void {
    if (rec.state === "stopping") return;
    rec.state = "stopping";
    this.stops.instances++;
    void rec.sandbox.stop(rec.iid).then(() => {
      if (this.#instances.get(rec.iid) === rec) this.#instances.delete(rec.iid);
      if (this.#closed) this.#shutIfIdle();
      else this.#grow();
    });
  }

  /** Stops taking calls; the process is killed once the calls under way end. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#failWaiters(CLOSED);
    this.#shutIfIdle();
  }

  #shutIfIdle(): void {
    if (this.busy === 0) {
      this.#sandbox?.kill("the module was evicted");
      this.#sandbox = undefined;
    }
  }

  /** Kills the process at once, ending every call under way. */
  kill(reason: string): void {
    this.#closed = true;
    this.#failWaiters(CLOSED);
    this.#sandbox?.kill(reason);
    this.#sandbox = undefined;
  }
}
