/**
 * A call's deadline: one timer per call, started when the call arrives, so the time limit covers
 * waiting for an instance, instantiating it and every `host_call` (seed 003's `Limits.Time`).
 */
import { hostError, HostErrorCode, type HostError } from "./errors.js";

/** The deadline of one call. */
export class Deadline {
  readonly #ms: number;
  readonly #at: number;
  readonly #timer: NodeJS.Timeout;
  readonly #controller = new AbortController();
  #expired = false;
  #cancelled = false;
  /** Resolves with `"timeout"` when the time is up (never rejects). */
  readonly reached: Promise<"timeout">;

  constructor(ms: number, signal?: AbortSignal) {
    this.#ms = ms;
    this.#at = performance.now() + ms;
    let fire: () => void = () => undefined;
    this.reached = new Promise<"timeout">((resolve) => {
      fire = () => {
        if (this.#expired) return;
        this.#expired = true;
        this.#controller.abort();
        resolve("timeout");
      };
    });
    this.#timer = setTimeout(fire, ms);
    // A caller that stops waiting ends the call the same way (its instance may be stuck).
    if (signal !== undefined) {
      const cancel = (): void => {
        if (!this.#expired) this.#cancelled = true;
        fire();
      };
      if (signal.aborted) cancel();
      else signal.addEventListener("abort", cancel, { once: true });
    }
  }

  /** True once the time is up. */
  get expired(): boolean {
    return this.#expired;
  }

  /** Aborted when the time is up: for the HTTP the call makes. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Milliseconds left (0 once expired). */
  remaining(): number {
    return this.#expired ? 0 : Math.max(0, this.#at - performance.now());
  }

  /** The error of a call that ran out of time (or whose caller stopped waiting). */
  error(): HostError {
    if (this.#cancelled) return hostError(HostErrorCode.TimedOut, "the caller stopped waiting for the call");
    return hostError(HostErrorCode.TimedOut, `the call did not finish within its time limit of ${this.#ms} ms`);
  }

  /** Stops the timer once the call is over. */
  dispose(): void {
    clearTimeout(this.#timer);
  }
}
