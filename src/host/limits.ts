/**
 * The limits every plugin call runs within (seed 003, `Limits` and `DefaultLimits`), and the size
 * caps on what a plugin hands the host. Both are validated once, when the host is built.
 */
import { HostConfigError } from "./errors.js";

const KiB = 1024;
const MiB = 1024 * KiB;

/** One page of WebAssembly memory. */
export const WASM_PAGE = 64 * KiB;

/**
 * The largest memory an instance may have. Above it, `worker.terminate()` was seen never to return
 * while a guest keeps calling `memory.grow` (STACK.md), so no setting may exceed it.
 */
export const MAX_MEMORY = 64 * MiB;

/** Bounds of every instance of a plugin module (seed 003's `Limits`). */
export interface Limits {
  /** An instance's linear memory, in bytes: a multiple of 64 KiB, at most {@link MAX_MEMORY}. */
  readonly memory: number;
  /** One call, in milliseconds, including waiting for an instance and instantiating it. */
  readonly time: number;
  /** The stack of one call, in bytes (whole MiB; a worker's stack size). */
  readonly stack: number;
  /** How many instances of one module exist at once, so how many of its calls run at once. */
  readonly instances: number;
}

/** Seed 003's `DefaultLimits`: 64 MiB, 10 s, 8 MiB, 4 instances. */
export const DEFAULT_LIMITS: Limits = { memory: 64 * MiB, time: 10_000, stack: 8 * MiB, instances: 4 };

/** Size caps, each checked before the bytes it bounds are parsed. */
export interface Caps {
  /** A module's bytes. */
  readonly moduleBytes: number;
  /** One call's request or response JSON, and one `host_call` message. */
  readonly messageBytes: number;
  /** One log line (longer lines are cut). */
  readonly logLineBytes: number;
  /** Everything one call logs (the rest is dropped and counted). */
  readonly logCallBytes: number;
  /** How many lines one call logs at most (the rest is dropped and counted). */
  readonly logCallLines: number;
  /** How many `host_call`s one call makes at most; one more fails the call. */
  readonly hostCallsPerCall: number;
  /** The body of an HTTP request a plugin sends. */
  readonly httpRequestBytes: number;
  /** The body of an HTTP response a plugin receives. */
  readonly httpResponseBytes: number;
  /** An unconfined executable's file. */
  readonly executableBytes: number;
  /** How many compiled modules (each with its sandbox process and instances) the host keeps. */
  readonly modules: number;
  /**
   * How many calls of one module may wait while all its instances are busy; one more is refused
   * (`plugin_busy`) at once rather than held until its time runs out.
   */
  readonly queuedCalls: number;
}

/** The caps' defaults (ADR 0012). */
export const DEFAULT_CAPS: Caps = {
  moduleBytes: 32 * MiB,
  messageBytes: 8 * MiB,
  logLineBytes: 4 * KiB,
  logCallBytes: 64 * KiB,
  logCallLines: 1000,
  hostCallsPerCall: 256,
  httpRequestBytes: 1 * MiB,
  httpResponseBytes: 4 * MiB,
  executableBytes: 256 * MiB,
  modules: 8,
  queuedCalls: 64,
};

type Problem = { readonly field: string; readonly message: string };

function integerIn(problems: Problem[], field: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) problems.push({ field, message: `must be an integer from ${min} to ${max}` });
}

/** The problems with `limits` (field paths `limits.memory`…), none when they are valid. */
export function limitsProblems(limits: Limits): Problem[] {
  const problems: Problem[] = [];
  integerIn(problems, "limits.memory", limits.memory, WASM_PAGE, MAX_MEMORY);
  if (Number.isSafeInteger(limits.memory) && limits.memory % WASM_PAGE !== 0) problems.push({ field: "limits.memory", message: "must be a multiple of 64 KiB" });
  integerIn(problems, "limits.time", limits.time, 1, 600_000);
  integerIn(problems, "limits.stack", limits.stack, MiB, 64 * MiB);
  if (Number.isSafeInteger(limits.stack) && limits.stack % MiB !== 0) problems.push({ field: "limits.stack", message: "must be whole MiB" });
  integerIn(problems, "limits.instances", limits.instances, 1, 64);
  return problems;
}

/** The problems with `caps`, none when they are valid. */
export function capsProblems(caps: Caps): Problem[] {
  const problems: Problem[] = [];
  integerIn(problems, "caps.moduleBytes", caps.moduleBytes, 8, 256 * MiB);
  integerIn(problems, "caps.messageBytes", caps.messageBytes, 1 * KiB, 64 * MiB);
  integerIn(problems, "caps.logLineBytes", caps.logLineBytes, 64, 1 * MiB);
  integerIn(problems, "caps.logCallBytes", caps.logCallBytes, caps.logLineBytes, 16 * MiB);
  integerIn(problems, "caps.logCallLines", caps.logCallLines, 1, 1_000_000);
  integerIn(problems, "caps.hostCallsPerCall", caps.hostCallsPerCall, 0, 1_000_000);
  integerIn(problems, "caps.httpRequestBytes", caps.httpRequestBytes, 0, 64 * MiB);
  integerIn(problems, "caps.httpResponseBytes", caps.httpResponseBytes, 0, 64 * MiB);
  integerIn(problems, "caps.executableBytes", caps.executableBytes, 1, 4096 * MiB);
  integerIn(problems, "caps.modules", caps.modules, 1, 1024);
  integerIn(problems, "caps.queuedCalls", caps.queuedCalls, 0, 100_000);
  // A response body travels base64-encoded in one host_call answer, which the message cap bounds.
  if (caps.messageBytes < Math.ceil(caps.httpResponseBytes / 3) * 4 + 64 * KiB) {
    problems.push({ field: "caps.messageBytes", message: "must hold the largest HTTP response body in base64 plus 64 KiB" });
  }
  return problems;
}

/** Fills in defaults and validates; throws {@link HostConfigError} listing every problem. */
export function resolveLimits(limits: Partial<Limits> = {}, caps: Partial<Caps> = {}): { limits: Limits; caps: Caps } {
  const l: Limits = { ...DEFAULT_LIMITS, ...limits };
  const c: Caps = { ...DEFAULT_CAPS, ...caps };
  const problems = [...limitsProblems(l), ...capsProblems(c)];
  if (problems.length > 0) throw new HostConfigError(problems);
  return { limits: l, caps: c };
}
