/**
 * The imports a module may have (docs/abi.md): `openfief.host_call` and every function of WASI
 * preview 1, each with its exact signature, so a module that would fail to link, or be handed a
 * host function of another shape, is refused before it compiles.
 */
import type { FuncType, ValueType } from "./wasm-reader.js";

/** The host's own import module. */
export const OPENFIEF_MODULE = "openfief";
/** WASI preview 1's import module. */
export const WASI_MODULE = "wasi_snapshot_preview1";

const I = "i32" as const;
const L = "i64" as const;

function sig(params: readonly ValueType[], results: readonly ValueType[] = [I]): FuncType {
  return { params, results };
}

/** `openfief.host_call(ptr, len) -> packed i64`. */
export const HOST_CALL_TYPE: FuncType = sig([I, I], [L]);

/** Every function of `wasi_snapshot_preview1` (witx of the snapshot), lowered to core types. */
export const WASI_FUNCTIONS: Readonly<Record<string, FuncType>> = {
  args_get: sig([I, I]),
  args_sizes_get: sig([I, I]),
  environ_get: sig([I, I]),
  environ_sizes_get: sig([I, I]),
  clock_res_get: sig([I, I]),
  clock_time_get: sig([I, L, I]),
  fd_advise: sig([I, L, L, I]),
  fd_allocate: sig([I, L, L]),
  fd_close: sig([I]),
  fd_datasync: sig([I]),
  fd_fdstat_get: sig([I, I]),
  fd_fdstat_set_flags: sig([I, I]),
  fd_fdstat_set_rights: sig([I, L, L]),
  fd_filestat_get: sig([I, I]),
  fd_filestat_set_size: sig([I, L]),
  fd_filestat_set_times: sig([I, L, L, I]),
  fd_pread: sig([I, I, I, L, I]),
  fd_prestat_get: sig([I, I]),
  fd_prestat_dir_name: sig([I, I, I]),
  fd_pwrite: sig([I, I, I, L, I]),
  fd_read: sig([I, I, I, I]),
  fd_readdir: sig([I, I, I, L, I]),
  fd_renumber: sig([I, I]),
  fd_seek: sig([I, L, I, I]),
  fd_sync: sig([I]),
  fd_tell: sig([I, I]),
  fd_write: sig([I, I, I, I]),
  path_create_directory: sig([I, I, I]),
  path_filestat_get: sig([I, I, I, I, I]),
  path_filestat_set_times: sig([I, I, I, I, L, L, I]),
  path_link: sig([I, I, I, I, I, I, I]),
  path_open: sig([I, I, I, I, I, L, L, I, I]),
  path_readlink: sig([I, I, I, I, I, I]),
  path_remove_directory: sig([I, I, I]),
  path_rename: sig([I, I, I, I, I, I]),
  path_symlink: sig([I, I, I, I, I]),
  path_unlink_file: sig([I, I, I]),
  poll_oneoff: sig([I, I, I, I]),
  proc_exit: sig([I], []),
  proc_raise: sig([I]),
  sched_yield: sig([]),
  random_get: sig([I, I]),
  sock_accept: sig([I, I, I]),
  sock_recv: sig([I, I, I, I, I, I]),
  sock_send: sig([I, I, I, I, I]),
  sock_shutdown: sig([I, I]),
};

/** The signature an import must have, or undefined when the host does not provide it. */
export function allowedImport(module: string, name: string): FuncType | undefined {
  if (module === OPENFIEF_MODULE) return name === "host_call" ? HOST_CALL_TYPE : undefined;
  if (module === WASI_MODULE && Object.hasOwn(WASI_FUNCTIONS, name)) return WASI_FUNCTIONS[name];
  return undefined;
}

/** `(i32, i64) -> (i32)` style, for messages. */
export function formatType(t: FuncType): string {
  return `(${t.params.join(", ")}) -> (${t.results.join(", ")})`;
}

/** True when two function types are the same. */
export function sameType(a: FuncType, b: FuncType): boolean {
  return a.params.length === b.params.length && a.results.length === b.results.length &&
    a.params.every((p, i) => p === b.params[i]) && a.results.every((r, i) => r === b.results[i]);
}
