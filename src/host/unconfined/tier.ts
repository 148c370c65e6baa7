/**
 * The unconfined tier (seed 003, `Unconfined`): off unless a deployment setting names its
 * directory. An owner permits an executable by name and digest (`executable.permitted`); the host
 * then runs it for calls whose code digest is the permitted one: one process per executable,
 * started from a sealed copy whose digest is checked at every start, restarted for the next call
 * after it exits or is stopped. A call unanswered past the time limit kills the process group,
 * which fails the calls in flight on it.
 */
import type { EventLog } from "../../events/index.js";
import { hostError, HostErrorCode, type HostError, type HostResult } from "../errors.js";
import { Deadline } from "../deadline.js";
import type { Caps } from "../limits.js";
import type { ParsedResponse } from "../response.js";
import { ExecutableProcess } from "./executable-process.js";
import { inspectExecutable, listExecutables, sealExecutable, type ExecutableFile } from "./executables.js";

/** A permitted executable. */
export interface PermittedExecutable {
  readonly name: string;
  readonly digest: string;
}

/** The permits on the log: the latest `executable.permitted` of each name. */
export async function permitsFromLog(store: EventLog): Promise<Map<string, PermittedExecutable>> {
  const byName = new Map<string, PermittedExecutable>();
  for (const e of await store.read({ type: "executable.permitted", stream: "system" })) byName.set(e.data.executable, { name: e.data.executable, digest: e.data.digest });
  return byName;
}

/** Options of an {@link UnconfinedTier}. */
export interface UnconfinedOptions {
  readonly dir: string;
  /** Where sealed copies are made (private to the host). */
  readonly sealedDir: string;
  readonly caps: Caps;
  /** How long a start (seal, spawn, `abi_version`) may take; a call waits for it only its own time. */
  readonly startMs: number;
  readonly store: EventLog;
  /** Each (redacted, capped) stderr line of an executable's process. */
  readonly log: (executable: string, digest: string, line: string) => void;
}

/** The tier of a deployment that enables it. */
export class UnconfinedTier {
  readonly #o: UnconfinedOptions;
  /** Read from the log on first use. */
  #permits: Promise<Map<string, PermittedExecutable>> | null = null;
  readonly #processes = new Map<string, Promise<HostResult<ExecutableProcess>>>();
  #closed = false;

  constructor(o: UnconfinedOptions) {
    this.#o = o;
  }

  #loaded(): Promise<Map<string, PermittedExecutable>> {
    this.#permits ??= permitsFromLog(this.#o.store).catch((err: unknown) => {
      this.#permits = null;
      throw err;
    });
    return this.#permits;
  }

  /** The directory's executables, by name, with their digests; runs none of them. */
  list(): Promise<ExecutableFile[]> {
    return listExecutables(this.#o.dir, this.#o.caps.executableBytes);
  }

  /** The permitted executables. */
  async permitted(): Promise<PermittedExecutable[]> {
    return [...(await this.#loaded()).values()];
  }

  /** The permitted executable with `digest`, if any. */
  async byDigest(digest: string): Promise<PermittedExecutable | undefined> {
    for (const p of (await this.#loaded()).values()) if (p.digest === digest) return p;
    return undefined;
  }

  /**
   * Permits the executable `name` if it has `digest` now (an owner reviewed that file), and
   * records `executable.permitted`. A later permit of the same name replaces this one.
   */
  async permit(name: string, digest: string, actor: string): Promise<HostResult<ExecutableFile>> {
    const found = await inspectExecutable(this.#o.dir, name, this.#o.caps.executableBytes);
    if (!found.ok) return found;
    if (found.value.digest !== digest) {
      return { ok: false, error: hostError(HostErrorCode.ExecutableChanged, `${name} has digest ${found.value.digest}, not ${digest}`, "digest") };
    }
    const permits = await this.#loaded();
    await this.#o.store.append([{ stream: "system", type: "executable.permitted", actor, data: { executable: name, digest, size: found.value.size } }]);
    const before = permits.get(name);
    permits.set(name, { name, digest });
    if (before !== undefined && before.digest !== digest) await this.stop(before.digest);
    return found;
  }

  /** The running process of `p`, started when there is none (within its own start deadline, not a call's). */
  async #process(p: PermittedExecutable): Promise<HostResult<ExecutableProcess>> {
    const running = this.#processes.get(p.digest);
    if (running !== undefined) {
      const r = await running;
      if (!r.ok || r.value.alive) return r;
      if (this.#processes.get(p.digest) === running) this.#processes.delete(p.digest);
      return this.#process(p);
    }
    const starting = (async (): Promise<HostResult<ExecutableProcess>> => {
      const deadline = new Deadline(this.#o.startMs);
      const sealed = await sealExecutable(this.#o.dir, p.name, p.digest, this.#o.sealedDir, this.#o.caps.executableBytes);
      if (!sealed.ok) {
        // A file that is gone since it was permitted is unknown; anything else is as sealing says.
        return sealed;
      }
      const started = await ExecutableProcess.start({
        path: sealed.value, name: p.name, digest: p.digest,
        messageBytes: this.#o.caps.messageBytes, logLineChars: this.#o.caps.logLineBytes, logCallChars: this.#o.caps.logCallBytes, logCallLines: this.#o.caps.logCallLines,
        log: (line) => this.#o.log(p.name, p.digest, line),
        onExit: () => {
          if (this.#processes.get(p.digest) === starting) this.#processes.delete(p.digest);
        },
      }, deadline);
      deadline.dispose();
      return started.ok ? { ok: true, value: started.process } : started;
    })();
    this.#processes.set(p.digest, starting);
    const r = await starting;
    // A failed start is not kept: the next call tries again (the file may be fixed).
    if (!r.ok && this.#processes.get(p.digest) === starting) this.#processes.delete(p.digest);
    return r;
  }

  /** Runs one call on the permitted executable with `digest`. */
  async call(digest: string, method: string, params: unknown, secrets: readonly string[], deadline: Deadline): Promise<ParsedResponse> {
    const p = await this.byDigest(digest);
    if (p === undefined || this.#closed) return { ok: false, error: hostError(HostErrorCode.NotInstalled, `no permitted executable has digest ${digest}`, "digest") };
    const proc = await Promise.race([this.#process(p), deadline.reached]);
    if (proc === "timeout") return { ok: false, error: deadline.error() };
    if (!proc.ok) return { ok: false, error: proc.error };
    const answer = await Promise.race([proc.value.call(method, params, secrets), deadline.reached]);
    if (answer === "timeout") {
      // It may be stuck: stop it with everything it started; the calls in flight on it fail.
      proc.value.kill(hostError(HostErrorCode.Failed, `${p.name} was stopped: a call was unanswered past the time limit`));
      return { ok: false, error: deadline.error() };
    }
    return answer;
  }

  /** Stops the process of `digest`, if one runs. */
  async stop(digest: string, why?: HostError): Promise<void> {
    const running = this.#processes.get(digest);
    this.#processes.delete(digest);
    const r = await running;
    if (r?.ok) r.value.kill(why);
  }

  /** Stops every process. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#processes.keys()].map((d) => this.stop(d, hostError(HostErrorCode.Failed, "the host is closing"))));
  }
}
