/**
 * The slice of the JavaScript WebAssembly API the host and its tests use, typed here because the
 * project's `lib` (ES2023, no DOM) declares no `WebAssembly` global. A module-scoped name, so it
 * cannot clash with a global declaration another room might add.
 */

/** A compiled module (structured-cloneable to a worker of the same process). */
export interface WasmModule {
  readonly __brand?: "WebAssembly.Module";
}

/** A module's linear memory. */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

/** An instance and its exports. */
export interface WasmInstance {
  readonly exports: Readonly<Record<string, unknown>>;
}

type ErrorClass = new (message?: string) => Error;

/** The WebAssembly namespace, as far as it is used. */
export interface WasmApi {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: WasmModule, imports?: Record<string, Record<string, unknown>>): Promise<WasmInstance>;
  validate(bytes: Uint8Array): boolean;
  readonly Module: {
    new (bytes: Uint8Array): WasmModule;
    exports(module: WasmModule): { name: string; kind: string }[];
    imports(module: WasmModule): { module: string; name: string; kind: string }[];
  };
  readonly Instance: new (module: WasmModule, imports?: Record<string, Record<string, unknown>>) => WasmInstance;
  readonly Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory;
  readonly RuntimeError: ErrorClass;
  readonly CompileError: ErrorClass;
  readonly LinkError: ErrorClass;
}

/** The engine's WebAssembly namespace. */
export const wasm: WasmApi = (globalThis as unknown as { readonly WebAssembly: WasmApi }).WebAssembly;
