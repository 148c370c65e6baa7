/**
 * A listener of `openfief up` that could not bind, as a refusal: which listener (the field, so a
 * face can name the flag that moves it), where, and why in words. Everything started before it is
 * stopped by the caller.
 */
import { AppError } from "../app/index.js";

/** The listeners of the embedded control plane besides the console (whose face reports its own). */
export type Listener = "egress" | "plugin-proxy" | "gateway";

const NAMES: Readonly<Record<Listener, string>> = { egress: "the egress proxy", "plugin-proxy": "the plugin proxy", gateway: "the gateway" };

/** The refusal for a listener that failed to bind with the system's `code`. */
export function listenRefused(listener: Listener, address: string, code: string): AppError {
  const what = NAMES[listener];
  switch (code) {
    case "EADDRINUSE":
      return new AppError("conflict", `${what} cannot listen on ${address}: another program uses that port`, listener);
    case "EACCES":
      return new AppError("bad_setting", `${what} may not listen on ${address}: a port below 1024 needs privileges`, listener);
    case "EADDRNOTAVAIL":
      return new AppError("bad_setting", `${what} cannot listen on ${address}: not an address of this machine`, listener);
    default:
      return new AppError("bad_setting", `${what} cannot listen on ${address} (${code.slice(0, 32)})`, listener);
  }
}

/** Whether `err` is Node's refusal of a `listen` (it carries the system's code). */
export function isListenError(err: unknown): err is NodeJS.ErrnoException & { code: string } {
  const e = err as NodeJS.ErrnoException | null;
  return e instanceof Error && e.syscall === "listen" && typeof e.code === "string";
}
