/**
 * Opening the upstream connection to the one checked address, under the connect deadline. The
 * answer is a value: the connected socket, or the refusal code of why not.
 */
import type { Socket } from "node:net";
import type { DialAddress } from "./decide.js";
import { dialErrorType, type ProxyError } from "./proxy-status.js";

/** Opens the upstream connection; tests map "public" addresses to local listeners here. */
export type ConnectFn = (addr: DialAddress) => Socket | Promise<Socket>;

/** A dial's end; a failure names its `Proxy-Status` error (from the errno: refused, unroutable, …). */
export type DialResult =
  | { readonly ok: true; readonly socket: Socket }
  | { readonly ok: false; readonly code: "dial_failed" | "connect_timeout"; readonly proxyError: ProxyError };

function failed(err: unknown): DialResult {
  const errno = typeof err === "object" && err !== null && "code" in err && typeof err.code === "string" ? err.code : undefined;
  return { ok: false, code: "dial_failed", proxyError: { error: dialErrorType(errno) } };
}

/**
 * A connected upstream may wait for the decision's commit: an error in that window must destroy
 * it (the tunnel then sees it destroyed) rather than go unhandled.
 */
function guarded(socket: Socket): Socket {
  socket.on("error", () => socket.destroy());
  return socket;
}

/** Dials `target` with `connect`; a socket not connected within `timeoutMs` is destroyed. */
export async function dial(connect: ConnectFn, target: DialAddress, timeoutMs: number): Promise<DialResult> {
  let socket: Socket;
  try {
    socket = await connect(target);
  } catch (err) {
    return failed(err);
  }
  // Already connected (a connect function may hand back an open socket). A fresh, never
  // connected Socket also reads as "open", so look for a peer instead.
  if (!socket.connecting && socket.remoteAddress !== undefined && !socket.destroyed) return { ok: true, socket: guarded(socket) };
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      cleanup();
      socket.destroy();
      resolve({ ok: false, code: "connect_timeout", proxyError: { error: "connection_timeout" } });
    }, timeoutMs);
    const onConnect = (): void => {
      cleanup();
      resolve({ ok: true, socket: guarded(socket) });
    };
    const onError = (err: Error): void => {
      cleanup();
      socket.destroy();
      resolve(failed(err));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      socket.off("connect", onConnect);
      socket.off("error", onError);
    };
    socket.once("connect", onConnect);
    socket.once("error", onError);
  });
}
