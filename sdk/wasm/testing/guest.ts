/**
 * A test-only host for ABI version 1 (docs/abi.md): plain `WebAssembly`, WASI stubs that capture
 * stdout and stderr and answer ENOSYS to everything else, and a `host_call` answered by a function
 * the test gives. It is not the OpenFief host (src/host/): no worker, no limits, no egress; it
 * exists so the SDK's and the plugins' tests can drive a committed module exactly as the ABI says.
 */

/** One import of a module, as WebAssembly.Module.imports lists it. */
export interface ModuleImport {
  readonly module: string;
  readonly name: string;
  readonly kind: string;
}

/** What the guest sent through host_call, parsed. */
export type HostCallRequest = { readonly method: string; readonly params: unknown };

/** The test's answer to a host_call: an envelope to write as JSON, or raw bytes to write as they are. */
export type HostCallAnswer = { readonly result: unknown } | { readonly error: { readonly code: string; readonly message: string } } | { readonly raw: Uint8Array };

/** A call's response envelope, parsed. */
export type CallResponse = { readonly result?: unknown; readonly error?: { readonly code: string; readonly message: string } };

// The root tsconfig has no DOM library, and @types/node 20 declares only part of WebAssembly:
// these are the few members this host uses.
interface WasmModule {
  readonly __brand?: "WebAssembly.Module";
}
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmApi {
  readonly Module: { new (bytes: Uint8Array): WasmModule; imports(module: WasmModule): ModuleImport[]; exports(module: WasmModule): { name: string; kind: string }[] };
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: WasmModule, imports: Record<string, Record<string, unknown>>): Promise<{ exports: Record<string, unknown> }>;
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

const ENOSYS = 52;
const EBADF = 8;

/** The guest's `proc_exit`, surfaced as an exception the test can see. */
export class ProcExit extends Error {
  constructor(readonly code: number) {
    super(`proc_exit(${code})`);
  }
}

export interface TestGuestOptions {
  /** Answers the guest's host_call; by default every call is answered with `http_failed`. */
  readonly hostCall?: (request: HostCallRequest) => HostCallAnswer;
}

/** A WebAssembly module instantiated under the test host. */
export class TestGuest {
  readonly stdout: string[] = [];
  readonly stderr: string[] = [];
  /** Every host_call request, in order. */
  readonly hostCalls: HostCallRequest[] = [];
  private exports!: {
    memory: WasmMemory;
    openfief_abi_version: () => number;
    openfief_alloc: (len: number) => number;
    openfief_call: (ptr: number, len: number) => bigint;
    _initialize?: () => void;
  };

  private constructor(
    readonly module: WasmModule,
    private readonly options: TestGuestOptions,
  ) {}

  /** The exports a module declares. */
  static exports(bytes: Uint8Array): { name: string; kind: string }[] {
    return wasm.Module.exports(new wasm.Module(bytes)).map((e) => ({ name: e.name, kind: e.kind }));
  }

  /** The imports a module declares. */
  static imports(bytes: Uint8Array): ModuleImport[] {
    return wasm.Module.imports(new wasm.Module(bytes)).map((i) => ({ module: i.module, name: i.name, kind: i.kind }));
  }

  /** Compiles and instantiates `bytes`, then calls `_initialize` when the module exports it. */
  static async load(bytes: Uint8Array, options: TestGuestOptions = {}): Promise<TestGuest> {
    const module = await wasm.compile(bytes);
    const guest = new TestGuest(module, options);
    const instance = await wasm.instantiate(module, guest.importObject());
    guest.exports = instance.exports as unknown as TestGuest["exports"];
    guest.exports._initialize?.();
    return guest;
  }

  private bytesAt(ptr: number, len: number): Uint8Array {
    return new Uint8Array(this.exports.memory.buffer, ptr, len).slice();
  }

  private view(): DataView {
    return new DataView(this.exports.memory.buffer);
  }

  /** Writes `bytes` into memory the guest allocates, as the host does; returns the address. */
  private place(bytes: Uint8Array): number {
    const ptr = this.exports.openfief_alloc(bytes.length);
    new Uint8Array(this.exports.memory.buffer, ptr, bytes.length).set(bytes);
    return ptr;
  }

  private importObject(): Record<string, Record<string, unknown>> {
    const wasi: Record<string, (...args: number[]) => number | void> = {};
    for (const imp of wasm.Module.imports(this.module)) {
      if (imp.module === "wasi_snapshot_preview1" && imp.kind === "function") wasi[imp.name] = () => ENOSYS;
    }
    Object.assign(wasi, {
      fd_write: (fd: number, iovs: number, iovsLen: number, written: number): number => {
        if (fd !== 1 && fd !== 2) return EBADF;
        const v = this.view();
        const parts: Uint8Array[] = [];
        let total = 0;
        for (let i = 0; i < iovsLen; i++) {
          const ptr = v.getUint32(iovs + i * 8, true);
          const len = v.getUint32(iovs + i * 8 + 4, true);
          parts.push(this.bytesAt(ptr, len));
          total += len;
        }
        (fd === 1 ? this.stdout : this.stderr).push(Buffer.concat(parts).toString("utf8"));
        this.view().setUint32(written, total, true);
        return 0;
      },
      clock_time_get: (_clock: number, _precision: bigint, out: number): number => {
        this.view().setBigUint64(out, 1_767_225_600_000_000_000n, true);
        return 0;
      },
      random_get: (buf: number, len: number): number => {
        new Uint8Array(this.exports.memory.buffer, buf, len).fill(7);
        return 0;
      },
      proc_exit: (code: number): never => {
        throw new ProcExit(code);
      },
    });
    const hostCall = (ptr: number, len: number): bigint => {
      const request = JSON.parse(Buffer.from(this.bytesAt(ptr, len)).toString("utf8")) as HostCallRequest;
      this.hostCalls.push(request);
      const answer = this.options.hostCall?.(request) ?? { error: { code: "http_failed", message: "no network in this test" } };
      const bytes = "raw" in answer ? answer.raw : Buffer.from(JSON.stringify(answer), "utf8");
      const at = this.place(bytes);
      return (BigInt(at) << 32n) | BigInt(bytes.length);
    };
    return { wasi_snapshot_preview1: wasi, openfief: { host_call: hostCall } };
  }

  /** The module's openfief_abi_version(). */
  abiVersion(): number {
    return this.exports.openfief_abi_version();
  }

  /** Sends raw request bytes through openfief_call; returns the response text. */
  callRaw(request: Uint8Array): string {
    const ptr = this.place(request);
    return this.callAt(ptr, request.length);
  }

  /** Calls openfief_call on memory the test chose (for requests outside what alloc returned). */
  callAt(ptr: number, len: number): string {
    const packed = BigInt.asUintN(64, this.exports.openfief_call(ptr, len));
    const resPtr = Number(packed >> 32n);
    const resLen = Number(packed & 0xffffffffn);
    return Buffer.from(this.bytesAt(resPtr, resLen)).toString("utf8");
  }

  /** Calls `method` with `params`; returns the parsed response envelope. */
  call(method: string, params: unknown): CallResponse {
    return JSON.parse(this.callRaw(Buffer.from(JSON.stringify({ method, params }), "utf8"))) as CallResponse;
  }

  /** The size of the guest's memory in bytes. */
  memoryBytes(): number {
    return this.exports.memory.buffer.byteLength;
  }
}
