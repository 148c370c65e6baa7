/**
 * Tunnels: each admitted CONNECT holds a slot from admission to close, through a small state
 * type (deciding → open → closed, or deciding → closed). Idle open tunnels are found by one
 * sweep over all of them, never by a timer per socket.
 */
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import type { Duplex } from "node:stream";
import { ESTABLISHED } from "./answer.js";

/** Where a slot is in its life. `seen`/`activeAt` are the idle sweep's last reading. */
export type SlotState =
  | { readonly phase: "deciding" }
  | { readonly phase: "open"; readonly upstream: Socket; seen: number; activeAt: number }
  | { readonly phase: "closed" };

/** One admitted CONNECT. */
export interface Slot {
  readonly client: Duplex;
  readonly state: SlotState;
}

/** Options of {@link Tunnels}. */
export interface TunnelsOptions {
  readonly maxTunnels: number;
  readonly idleMs: number;
  /** Told when a tunnel opens and closes (the open-tunnel gauge). */
  readonly onOpenChange?: (open: number) => void;
}

class TunnelSlot implements Slot {
  state: SlotState = { phase: "deciding" };
  constructor(
    readonly client: Duplex,
    readonly owner: Tunnels,
  ) {}
}

/** Every slot of one proxy. */
export class Tunnels {
  readonly #o: TunnelsOptions;
  readonly #deciding = new Set<TunnelSlot>();
  readonly #open = new Set<TunnelSlot>();
  #sweeper: NodeJS.Timeout | undefined;
  readonly #sweepEveryMs: number;

  constructor(o: TunnelsOptions) {
    this.#o = o;
    this.#sweepEveryMs = Math.max(10, Math.min(5000, Math.floor(o.idleMs / 8)));
  }

  /** Admitted and not yet closed: CONNECTs being decided plus open tunnels. */
  get active(): number {
    return this.#deciding.size + this.#open.size;
  }

  /** Open tunnels. */
  get open(): number {
    return this.#open.size;
  }

  /** Slots still deciding or open. */
  get busy(): boolean {
    return this.#open.size > 0 || this.#deciding.size > 0;
  }

  /** A slot for `client`, or undefined when the limit is reached. */
  admit(client: Duplex): Slot | undefined {
    if (this.active >= this.#o.maxTunnels) return undefined;
    const slot = new TunnelSlot(client, this);
    this.#deciding.add(slot);
    client.once("close", () => this.#close(slot));
    return slot;
  }

  /** Ends a slot whose CONNECT got no tunnel: its place is free at once. */
  release(s: Slot): void {
    this.#close(this.#own(s));
  }

  /**
   * Opens the tunnel of a slot that is deciding: the 200, then `head` (bytes the client sent
   * right after its CONNECT head) upstream, then bytes both ways.
   */
  start(s: Slot, upstream: Socket, head: Buffer): void {
    const slot = this.#own(s);
    if (slot.state.phase !== "deciding") {
      upstream.destroy();
      return;
    }
    const client = slot.client as Socket;
    slot.state = { phase: "open", upstream, seen: -1, activeAt: performance.now() };
    this.#deciding.delete(slot);
    this.#open.add(slot);
    this.#o.onOpenChange?.(this.#open.size);
    const end = (): void => this.#close(slot);
    upstream.setNoDelay(true);
    client.setNoDelay?.(true);
    upstream.on("error", end);
    client.on("error", end);
    upstream.on("close", end);
    if (this.#sweeper === undefined) {
      this.#sweeper = setInterval(() => this.#sweep(), this.#sweepEveryMs);
      this.#sweeper.unref();
    }
    client.write(ESTABLISHED);
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Destroys every slot (the end of a drain). */
  destroyAll(): void {
    for (const s of [...this.#open, ...this.#deciding]) {
      s.client.destroy();
      if (s.state.phase === "open") s.state.upstream.destroy();
      this.#close(s);
    }
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  #own(s: Slot): TunnelSlot {
    if (!(s instanceof TunnelSlot) || s.owner !== this) throw new Error("not a slot of these tunnels");
    return s;
  }

  #close(slot: TunnelSlot): void {
    const was = slot.state;
    if (was.phase === "closed") return;
    slot.state = { phase: "closed" };
    if (was.phase === "deciding") {
      this.#deciding.delete(slot);
      return;
    }
    slot.client.destroy();
    was.upstream.destroy();
    this.#open.delete(slot);
    this.#o.onOpenChange?.(this.#open.size);
  }

  // Both directions pass through the client socket, so its byte counters tell whether a tunnel
  // moved anything since the last sweep.
  #sweep(): void {
    const now = performance.now();
    for (const slot of this.#open) {
      const st = slot.state;
      if (st.phase !== "open") continue;
      const c = slot.client as Socket;
      const seen = c.bytesRead + c.bytesWritten;
      if (seen !== st.seen) {
        st.seen = seen;
        st.activeAt = now;
      } else if (now - st.activeAt >= this.#o.idleMs) this.#close(slot);
    }
    if (this.#open.size === 0 && this.#sweeper !== undefined) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }
}
