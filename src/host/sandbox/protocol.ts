/**
 * The messages between the host, a module's sandbox process and its instance workers (ADR 0011).
 * The sandbox's JavaScript refers to these types in its JSDoc; the host's TypeScript builds and
 * reads them. Bytes travel as `Uint8Array` (IPC with `serialization: "advanced"`).
 */

/** The caps an instance worker enforces itself. */
export interface WorkerCaps {
  readonly messageBytes: number;
  readonly logLineChars: number;
  readonly logCallChars: number;
  readonly logCallLines: number;
  readonly hostCallsPerCall: number;
  /** The memory cap in bytes (to tell memory exhaustion from another trap). */
  readonly memoryBytes: number;
}

/** One captured line of a guest's stdout (1) or stderr (2). */
export interface LogLine {
  readonly fd: 1 | 2;
  readonly line: string;
}

/** Codes an instance reports; the host maps them onto its own (they are the same strings). */
export type InstanceFailureCode = "plugin_failed" | "plugin_module_invalid" | "plugin_abi_unsupported";

/** Host → sandbox. */
export type ToSandbox =
  | { readonly t: "compile"; readonly bytes: Uint8Array }
  | { readonly t: "spawn"; readonly iid: number; readonly stackMb: number; readonly caps: WorkerCaps }
  | { readonly t: "call"; readonly iid: number; readonly cid: number; readonly request: Uint8Array; readonly secrets: readonly string[] }
  | { readonly t: "reply"; readonly iid: number; readonly response: Uint8Array }
  | { readonly t: "stop"; readonly iid: number };

/** Sandbox → host. */
export type FromSandbox =
  | { readonly t: "compiled" }
  | { readonly t: "compile_failed"; readonly message: string }
  | { readonly t: "ready"; readonly iid: number }
  | { readonly t: "spawn_failed"; readonly iid: number; readonly code: InstanceFailureCode; readonly message: string }
  | { readonly t: "log"; readonly iid: number; readonly cid: number | null; readonly lines: readonly LogLine[] }
  | { readonly t: "host_call"; readonly iid: number; readonly cid: number; readonly request: Uint8Array }
  | { readonly t: "done"; readonly iid: number; readonly cid: number; readonly response: Uint8Array; readonly dropped: number }
  | { readonly t: "failed"; readonly iid: number; readonly cid: number; readonly code: InstanceFailureCode; readonly message: string; readonly dropped: number }
  | { readonly t: "stopped"; readonly iid: number }
  | { readonly t: "crashed"; readonly iid: number; readonly message: string };

/** Sandbox → instance worker. */
export type ToWorker = { readonly t: "call"; readonly cid: number; readonly request: Uint8Array; readonly secrets: readonly string[] };

/** Instance worker → sandbox: the sandbox adds the instance id and forwards it. */
export type FromWorker =
  | { readonly t: "ready" }
  | { readonly t: "spawn_failed"; readonly code: InstanceFailureCode; readonly message: string }
  | { readonly t: "log"; readonly cid: number | null; readonly lines: readonly LogLine[] }
  | { readonly t: "host_call"; readonly cid: number; readonly request: Uint8Array }
  | { readonly t: "done"; readonly cid: number; readonly response: Uint8Array; readonly dropped: number }
  | { readonly t: "failed"; readonly cid: number; readonly code: InstanceFailureCode; readonly message: string; readonly dropped: number };

/** What a worker starts with. */
export interface WorkerData {
  readonly module: unknown;
  /** Int32 slot 0: 1 once a host_call reply is on `replyPort`. */
  readonly control: SharedArrayBuffer;
  readonly replyPort: unknown;
  readonly caps: WorkerCaps;
}
