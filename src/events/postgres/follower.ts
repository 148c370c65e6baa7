/**
 * Live subscribers of the PostgreSQL log: one LISTEN connection per log, started by the first
 * subscriber from the latest seq the log knew of then (its head when opened, or since: its own
 * appends, heads it read), so a listener hears every event committed after it subscribed, and
 * perhaps a few committed just before by other connections, never one twice. Each append notifies, in its transaction, with its new head's seq; a notification
 * (delivered only once that transaction committed) makes the follower read the rows after the
 * last seq it delivered, in order, and hand them to the listeners. Appends of this process are
 * handed over as they commit when they follow the last delivered seq, else read like the others,
 * so listeners hear every event once, in seq order, whoever appended it. A lost connection is
 * opened again (backing off up to 2 s) and the rows committed meanwhile are read from the last seq.
 */
import type pg from "pg";
import type { KnownEvent } from "../catalog.js";
import type { EventListener } from "../port.js";

/** What the follower needs of its log. */
export interface FollowerSource {
  /** A new connection listening on the log's channel, `onNotify` called with each notified seq. */
  listen(onNotify: (seq: number) => void): Promise<pg.Client>;
  /** The seq of the latest committed event. */
  head(): Promise<number>;
  /** Events in (afterSeq, toSeq], in seq order, in pages. */
  pages(afterSeq: number, toSeq: number): AsyncIterable<readonly KnownEvent[]>;
}

const BACKOFF_MS = { first: 50, max: 2_000 } as const;

export class Follower {
  readonly #source: FollowerSource;
  readonly #listeners = new Set<EventListener>();
  #state: "idle" | "starting" | "running" | "closed" = "idle";
  /** The seq delivered up to. */
  #last = 0;
  /** The highest seq known to be committed. */
  #wanted = 0;
  #client: pg.Client | null = null;
  #draining: Promise<void> | null = null;
  #backoff: number = BACKOFF_MS.first;
  #timer: NodeJS.Timeout | null = null;

  constructor(source: FollowerSource) {
    this.#source = source;
  }

  /** Adds a listener; the first one starts the follower after `known`, the latest seq the log knows committed. */
  subscribe(fn: EventListener, known: number): () => void {
    this.#listeners.add(fn);
    if (this.#state === "idle") {
      this.#state = "starting";
      this.#last = known;
      this.#wanted = known;
      void this.#connect();
    }
    return () => { this.#listeners.delete(fn); };
  }

  /** Events this process committed (or was told of): delivered now when they follow the last delivered seq. */
  committed(events: readonly KnownEvent[]): void {
    const first = events[0]?.seq;
    const last = events[events.length - 1]?.seq;
    if (first === undefined || last === undefined || this.#state === "idle" || this.#state === "closed") return;
    if (first === this.#last + 1 && this.#draining === null && this.#state === "running") {
      this.#last = last;
      this.#deliver(events);
      return;
    }
    if (last > this.#last) this.#want(last);
  }

  async close(): Promise<void> {
    this.#state = "closed";
    this.#listeners.clear();
    if (this.#timer !== null) clearTimeout(this.#timer);
    const c = this.#client;
    this.#client = null;
    if (c !== null) await c.end().catch(() => undefined);
    await this.#draining?.catch(() => undefined);
  }

  async #connect(): Promise<void> {
    this.#timer = null;
    let client: pg.Client | null = null;
    try {
      client = await this.#source.listen((seq) => this.#want(seq));
      const c = client;
      c.on("error", () => this.#lost(c));
      c.on("end", () => this.#lost(c));
      if (this.#state === "closed") { await c.end(); return; }
      this.#client = c;
      // Listening now: whatever is committed from here on is notified; what was before is read.
      const head = await this.#source.head();
      this.#state = "running";
      this.#backoff = BACKOFF_MS.first;
      this.#want(head);
    } catch {
      if (client !== null) await client.end().catch(() => undefined);
      if (this.#client === client) this.#client = null;
      this.#retry();
    }
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = null;
    client.removeAllListeners("notification");
    void client.end().catch(() => undefined);
    this.#retry();
  }

  #retry(): void {
    if (this.#state === "closed" || this.#timer !== null) return;
    const wait = this.#backoff;
    this.#backoff = Math.min(BACKOFF_MS.max, this.#backoff * 2);
    this.#timer = setTimeout(() => void this.#connect(), wait);
    this.#timer.unref();
  }

  #want(seq: number): void {
    if (seq > this.#wanted) this.#wanted = seq;
    if (this.#state === "running" && this.#last < this.#wanted) this.#drain();
  }

  #drain(): void {
    if (this.#draining !== null) return;
    let failed = false;
    this.#draining = this.#readUpTo()
      .catch(() => { failed = true; })
      .finally(() => {
        this.#draining = null;
        if (this.#state !== "running" || this.#last >= this.#wanted) return;
        // A failed read is tried again a little later; what was committed while a read finished is read now.
        if (!failed) this.#drain();
        else setTimeout(() => this.#drain(), BACKOFF_MS.max).unref();
      });
  }

  async #readUpTo(): Promise<void> {
    while (this.#state === "running" && this.#last < this.#wanted) {
      const from = this.#last;
      for await (const page of this.#source.pages(from, this.#wanted)) {
        const fresh = page.filter((e) => e.seq > this.#last);
        const last = fresh[fresh.length - 1];
        if (last === undefined) continue;
        this.#last = last.seq;
        this.#deliver(fresh);
        if (this.#state !== "running") return;
      }
      if (this.#last !== from) continue;
      // Nothing after the last seq although a later one was announced: the head decides (a commit
      // is readable before it is notified, so only an announcement of events that were not committed gets here).
      const head = await this.#source.head();
      if (head <= this.#last) this.#wanted = this.#last;
    }
  }

  #deliver(events: readonly KnownEvent[]): void {
    for (const fn of this.#listeners) {
      try { fn(events); } catch { /* a listener's failure must not stop the others, nor the log */ }
    }
  }
}
