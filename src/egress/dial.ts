/**
 * Opening the upstream connection to the one checked address, under the connect deadline. The
 * answer is a value: the connected socket, or the refusal code of why not.
 */
import type { Socket } from "node:net";
import type { DialAddress } from "./decide.js";

/** Opens the upstream connection; tests map "public" addresses to local listeners here. */
export type ConnectFn = (addr: DialAddress) => Socket | Promise<Socket>;

/** A dial's end. */
export type DialResult = { readonly ok: true; readonly socket: Socket } | { readonly ok: false; readonly code: "dial_failed" | "connect_timeout" };

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
  } catch {
    return { ok: false, code: "dial_failed" };
  }
  // Already connected (a connect function may hand back an open socket). A fresh, never
  // connected Socket also reads as "open", so look for a peer instead.
  if (!socket.connecting && socket.remoteAddress !== undefined && !socket.destroyed) return { ok: true, socket: guarded(socket) };
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      cleanup();
      socket.destroy();
      resolve({ ok: false, code: "connect_timeout" });
    }, timeoutMs);
    const onConnect = (): void => {
      cleanup();
      resolve({ ok: true, socket: guarded(socket) });
    };
    const onError = (): void => {
      cleanup();
      socket.destroy();
      resolve({ ok: false, code: "dial_failed" });
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
