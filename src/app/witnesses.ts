/**
 * Witnesses on up (docs/adr/0155): after each signed checkpoint, the log submits it to each
 * witness with C2SP tlog-witness `add-checkpoint` — the size that witness last cosigned and the
 * consistency proof from it — and keeps the cosignature it answers, so that the published
 * checkpoint, `prove` and `export` carry it. A 409 says the size the witness holds: the request is
 * made again from it. A 422 (the witness finds the checkpoint inconsistent with what it cosigned:
 * a fork, or a log rewritten) is recorded and logged as an error, and shown on the integrity page.
 * Every call has a deadline, one request per witness at a time, and only the newest checkpoint
 * waits: a witness that is down never holds back an append or another witness.
 *
 * What each witness last did is kept in a table beside the log (a projection table, on both
 * stores), so that other commands (`prove`, `export`) read the cosignatures too.
 */
import { Buffer } from "node:buffer";
import type { Logger } from "pino";
import { Counter } from "prom-client";
import type { Registry } from "prom-client";
import type { EventLog, StoredCheckpoint } from "../events/index.js";
import { formatHash, formatKeyId, openCheckpoint, parseDecimalSize, parseVerifierKey, proveConsistency } from "../tlog/index.js";
import type { NoteVerifier } from "../tlog/index.js";
import { AppError } from "./errors.js";
import { WITNESS_TABLE, witnessStates } from "./witness-states.js";
import type { WitnessState } from "./witness-states.js";

/** A witness as `--witness` names it: its submission URL, and optionally its verifier key. */
export interface WitnessTarget {
  readonly url: URL;
  /** Checks its cosignatures before they are kept; without it they are kept as answered. */
  readonly key: NoteVerifier | null;
}

/** Parses `--witness "<url>[ <verifier key>]"`: an http(s) URL, optionally a space and the witness's key. Refuses in one line. */
export function parseWitnessTarget(text: string): WitnessTarget {
  const trimmed = text.trim();
  const space = trimmed.indexOf(" ");
  const urlText = space < 0 ? trimmed : trimmed.slice(0, space);
  const keyText = space < 0 ? "" : trimmed.slice(space + 1).trim();
  let url: URL;
  try {
    url = new URL(urlText);
  } catch {
    throw new AppError("usage", `--witness is "<http(s) URL>[ <verifier key>]", not ${JSON.stringify(text.slice(0, 80))}`, "witness");
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "") {
    throw new AppError("usage", `--witness takes an http(s) URL without credentials, query or fragment, not ${JSON.stringify(urlText.slice(0, 80))}`, "witness");
  }
  if (!url.pathname.endsWith("/add-checkpoint")) url.pathname = `${url.pathname.replace(/\/$/, "")}/add-checkpoint`;
  let key: NoteVerifier | null = null;
  if (keyText !== "") {
    const v = parseVerifierKey(keyText);
    if (!v.ok) throw new AppError("usage", `--witness ${urlText}: the key after the URL is not a verifier key: ${v.error.message}`, "witness");
    key = v.value;
  }
  return { url, key };
}

/** Options of {@link Witnesses}. */
export interface WitnessesOptions {
  readonly logger: Logger;
  /** Each request's deadline, answer read included (default 5 s). */
  readonly timeoutMs?: number;
  /** The metrics registry to count submissions in (by result). */
  readonly registry?: Registry;
  readonly clock?: () => Date;
}

/** The largest answer read from a witness: a few cosignature lines. */
const MAX_ANSWER = 16 * 1024;

/** Reads at most `cap` bytes of a response body; longer is a failure. */
async function cappedText(res: Response, cap: number): Promise<string> {
  if (res.body === null) return "";
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    n += chunk.length;
    if (n > cap) throw new Error(`the answer is over ${cap} bytes`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** One line of an answer, safe to log and show (no control characters, capped). */
const oneLine = (s: string) => [...s].map((c) => (c < " " || c === "\u007f" ? " " : c)).join("").replace(/ +/g, " ").trim().slice(0, 200);

/** One witness: its state, and the newest checkpoint waiting for it. */
class OneWitness {
  state: WitnessState;
  pending: StoredCheckpoint | null = null;
  running: Promise<void> | null = null;
  constructor(readonly target: WitnessTarget, state: WitnessState | undefined, readonly controller: AbortController) {
    this.state = state ?? { url: target.url.href, size: 0, cosignature: "", witness: "", status: "behind", detail: "", at: "" };
  }
}

/** The witnesses of a running log; see the module comment. */
export class Witnesses {
  readonly #store: EventLog;
  readonly #opts: WitnessesOptions;
  readonly #all: OneWitness[] = [];
  readonly #counter: Counter<"result"> | null;
  #stopped = false;
  #unsubscribe: (() => void) | null = null;

  private constructor(store: EventLog, opts: WitnessesOptions) {
    this.#store = store;
    this.#opts = opts;
    this.#counter = opts.registry === undefined ? null : new Counter({
      name: "openfief_witness_submissions_total", help: "checkpoints submitted to witnesses, by result (cosigned, conflict, refused, rejected, unreachable)",
      labelNames: ["result"], registers: [opts.registry],
    });
  }

  /** The witnesses of `targets`, their states read back from beside the log. */
  static async start(store: EventLog, targets: readonly WitnessTarget[], opts: WitnessesOptions): Promise<Witnesses> {
    const w = new Witnesses(store, opts);
    const states = new Map((await witnessStates(store)).map((s) => [s.url, s]));
    for (const t of targets) w.#all.push(new OneWitness(t, states.get(t.url.href), new AbortController()));
    return w;
  }

  /** What each witness last did. */
  states(): WitnessState[] {
    return this.#all.map((w) => w.state);
  }

  /**
   * Submits each checkpoint the log records from now on (its `log.checkpoint` events, whoever
   * appends them), and the newest one now. Returns at once; {@link stop} ends it.
   */
  follow(): void {
    if (this.#unsubscribe !== null || this.#stopped) return;
    this.#unsubscribe = this.#store.subscribe((events) => {
      for (const e of events) if (e.type === "log.checkpoint") this.submit({ size: e.data.size, root: e.data.root, note: e.data.note, seq: e.seq });
    });
    void this.#store.tree.latestCheckpoint().then((c) => { if (c !== null) this.submit(c); }, (err: unknown) => {
      this.#opts.logger.warn({}, `cannot read the newest checkpoint for the witnesses: ${err instanceof Error ? err.message : String(err)}`);
    });
  }

  /** Hands a new checkpoint to every witness; returns at once. */
  submit(c: StoredCheckpoint): void {
    if (this.#stopped) return;
    for (const w of this.#all) {
      if (c.size <= w.state.size) continue;
      if (w.pending === null || w.pending.size < c.size) w.pending = c;
      if (w.running === null) w.running = this.#drain(w).finally(() => { w.running = null; });
    }
  }

  /** Waits for every submission under way (for tests and an orderly stop). */
  async settled(): Promise<void> {
    while (this.#all.some((w) => w.running !== null)) await Promise.all(this.#all.map((w) => w.running));
  }

  /** Cuts every request under way and waits for them to end. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    for (const w of this.#all) {
      w.pending = null;
      w.controller.abort();
    }
    await Promise.all(this.#all.map((w) => w.running));
  }

  async #drain(w: OneWitness): Promise<void> {
    while (w.pending !== null && !this.#stopped) {
      const c = w.pending;
      w.pending = null;
      try {
        await this.#submit(w, c);
      } catch (err) {
        if (this.#stopped) return;
        await this.#record(w, { status: "unreachable", detail: oneLine(err instanceof Error ? err.message : String(err)) }, c.seq);
        this.#opts.logger.warn({ witness: w.target.url.origin, size: c.size }, `witness ${w.target.url.origin} could not be reached: ${w.state.detail}`);
        this.#counter?.inc({ result: "unreachable" });
      }
    }
  }

  /** One add-checkpoint request from `old`: the answer's status and text (read within the deadline, capped). */
  async #post(w: OneWitness, c: StoredCheckpoint, old: number): Promise<{ status: number; text: string; statusText: string }> {
    let proofLines = "";
    if (old > 0) {
      const proof = await proveConsistency(old, c.size, this.#store.tree.hashes);
      if (!proof.ok) throw new Error(`no consistency proof from ${old} to ${c.size}: ${proof.error.message}`);
      proofLines = proof.value.map((h) => `${formatHash(h)}\n`).join("");
    }
    const signal = AbortSignal.any([w.controller.signal, AbortSignal.timeout(this.#opts.timeoutMs ?? 5_000)]);
    const res = await fetch(w.target.url, { method: "POST", body: `old ${old}\n${proofLines}\n${c.note}`, headers: { "content-type": "text/plain; charset=utf-8" }, signal, redirect: "error" });
    return { status: res.status, text: await cappedText(res, MAX_ANSWER), statusText: res.statusText };
  }

  /** One checkpoint to one witness: at most a few requests (each 409 moves the old size once). */
  async #submit(w: OneWitness, c: StoredCheckpoint): Promise<void> {
    let old = w.state.size;
    for (let attempt = 0; attempt < 3; attempt++) {
      // Equal sizes after a 409 are still sent (no proof): the witness then compares the roots.
      if (old > c.size) return;
      const res = await this.#post(w, c, old);
      if (res.status === 200) return this.#cosigned(w, c, res.text);
      if (res.status !== 409) return this.#refused(w, c, old, res);
      const size = await this.#conflict(w, c, old, res.text);
      if (size === null) return;
      old = size;
    }
    throw new Error("the witness kept answering 409");
  }

  /** A 409: the size to try again from, or null when the witness holds more of the log than the checkpoint (recorded). */
  async #conflict(w: OneWitness, c: StoredCheckpoint, old: number, text: string): Promise<number | null> {
    const size = parseDecimalSize(text.replace(/\n$/, ""));
    if (size === null) throw new Error("the witness answered 409 without a size");
    this.#counter?.inc({ result: "conflict" });
    if (size > c.size) {
      await this.#record(w, { status: "refused", detail: `the witness has cosigned ${size} events of this log, more than its checkpoint of ${c.size}: events were removed, or the log signed another history` }, c.seq);
      this.#opts.logger.error({ witness: w.target.url.origin, size: c.size, witnessed: size }, `witness ${w.target.url.origin} holds a larger checkpoint of this log (${size}) than the newest one (${c.size})`);
      return null;
    }
    if (size === old) throw new Error(`the witness answered 409 with the size it was sent (${old})`);
    return size;
  }

  /** Any answer but 200 and 409: a 422 refused (an alert), another 4xx rejected, the rest thrown (unreachable, tried again later). */
  async #refused(w: OneWitness, c: StoredCheckpoint, old: number, res: { status: number; text: string; statusText: string }): Promise<void> {
    const detail = `HTTP ${res.status}: ${oneLine(res.text) || res.statusText}`;
    if (res.status === 422) {
      await this.#record(w, { status: "refused", detail: `the witness refuses the checkpoint of ${c.size} events as inconsistent with what it cosigned (${detail})` }, c.seq);
      this.#opts.logger.error({ witness: w.target.url.origin, size: c.size, old }, `witness ${w.target.url.origin} refused the checkpoint of ${c.size} events as inconsistent with the ${old} it cosigned: the log may have been rewritten`);
      this.#counter?.inc({ result: "refused" });
      return;
    }
    if (res.status < 400 || res.status >= 500 || res.status === 429) throw new Error(detail);
    await this.#record(w, { status: "rejected", detail }, c.seq);
    this.#opts.logger.warn({ witness: w.target.url.origin, status: res.status }, `witness ${w.target.url.origin} does not take this log's checkpoints (${detail}); it needs this log's origin and key`);
    this.#counter?.inc({ result: "rejected" });
  }

  async #cosigned(w: OneWitness, c: StoredCheckpoint, answer: string): Promise<void> {
    const lines = answer.split("\n").filter((l) => l !== "");
    if (lines.length === 0 || lines.length > 8 || !lines.every((l) => l.startsWith("— ") && l.split(" ").length === 3)) {
      throw new Error("the witness answered 200 without cosignature lines");
    }
    const cosignature = lines.map((l) => `${l}\n`).join("");
    let witness = lines[0]?.split(" ")[1] ?? "";
    if (w.target.key !== null) {
      const opened = openCheckpoint(c.note + cosignature, [w.target.key]);
      if (!opened.ok) throw new Error(`its cosignature does not verify with the key given for it (${opened.error.code})`);
      witness = `${w.target.key.name}+${formatKeyId(w.target.key.keyId)}`;
    }
    await this.#record(w, { size: c.size, cosignature, witness, status: "cosigned", detail: "" }, c.seq);
    this.#counter?.inc({ result: "cosigned" });
  }

  async #record(w: OneWitness, change: Partial<WitnessState>, seq: number): Promise<void> {
    w.state = { ...w.state, ...change, at: (this.#opts.clock?.() ?? new Date()).toISOString() };
    const s = w.state;
    try {
      await this.#store.tables.projections.open([WITNESS_TABLE]);
      await this.#store.tables.projections.commit([{ spec: WITNESS_TABLE, upserts: [[s.url, [s.size, s.cosignature, s.witness, s.status, s.detail, s.at]]], deletes: [] }], seq);
    } catch (err) {
      this.#opts.logger.warn({ witness: w.target.url.origin }, `cannot keep witness ${w.target.url.origin}'s state beside the log: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
