// The ABI's exports under their ABI names. A plugin's entry file re-exports them:
//   export * from "@openfief/sdk-wasm/assembly/exports";
import { abiVersion, alloc, call } from "./abi";

/** The ABI version the module speaks: 1. */
export function openfief_abi_version(): i32 {
  return abiVersion();
}

/** Allocates `len` bytes the host writes an input into; they stay pinned until the guest takes them. */
export function openfief_alloc(len: i32): i32 {
  return alloc(len);
}

/** Serves one call: UTF-8 JSON request at ptr/len; returns `(resPtr << 32) | resLen`. */
export function openfief_call(ptr: i32, len: i32): i64 {
  return call(ptr, len);
}
