/**
 * What the witness cosigned, per log: the latest size and root, and the cosigned checkpoint it
 * serves to monitors. One file per origin, `state/<SHA-256 of the origin, hex>.json`, so writes for
 * different logs never wait on one another, and the file name is the origin hash monitors ask for.
 *
 * A new state is on disk before anything is answered: written to `<hash>.json.tmp`, synced,
 * renamed over the state file, and the folder synced. The rename is the commit: a crash before it
 * leaves the previous state (and a temporary file, removed at the next start), a crash after it
 * the new one, never a mix. Each update runs under the origin's queue with the state it read, so
 * the check of a request and the write of its result are one compare-and-set. A state file that
 * does not parse or does not agree with itself refuses the start: the witness never resets
 * silently, since forgetting a size would let it cosign a second root for it.
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { closeSync, existsSync, fstatSync, openSync, readdirSync, readSync, unlinkSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import { join } from "node:path";
import { EMPTY_ROOT, formatHash, hashEquals, parseCheckpoint, parseHash, WITNESS_CAPS } from "../tlog/index.js";
import type { Hash } from "../tlog/index.js";
import { fail, ok, WitnessErrorCode } from "./errors.js";
import type { Result } from "./errors.js";
import { OriginQueue } from "./origin-queue.js";

/** The latest checkpoint the witness cosigned for one log. */
export interface CosignedState {
  readonly origin: string;
  readonly size: number;
  readonly root: Hash;
  /** The checkpoint with the log's verified signatures and the witness's cosignatures. */
  readonly checkpoint: string;
}

/** The first line of every state file's JSON: a later format is refused, never misread. */
export const STATE_FORMAT = "openfief-witness-state/v1";
const SUFFIX = ".json";
const TMP_SUFFIX = ".json.tmp";
/** A cosigned checkpoint is at most a request body; the JSON around it is small. */
const MAX_STATE_BYTES = 2 * WITNESS_CAPS.maxBodyBytes;
const FIELDS = ["format", "origin", "size", "root", "checkpoint"];

/** SHA-256 of an origin, lowercase hex: its state file's name and its monitoring path. */
export function originHash(origin: string): string {
  return createHash("sha256").update(origin, "utf8").digest("hex");
}

const isOriginHash = (s: string) => s.length === 64 && [...s].every((c) => (c >= "0" && c <= "9") || (c >= "a" && c <= "f"));

/** A state as its file's text. */
export function encodeState(s: CosignedState): string {
  return `${JSON.stringify({ format: STATE_FORMAT, origin: s.origin, size: s.size, root: formatHash(s.root), checkpoint: s.checkpoint })}\n`;
}

/** Why a state file's own fields are wrong, or them typed. */
function fieldsOf(o: Record<string, unknown>, hash: string): string | { origin: string; size: number; root: Hash; checkpoint: string } {
  if (o["format"] !== STATE_FORMAT) return `format is not ${STATE_FORMAT}`;
  const extra = Object.keys(o).find((k) => !FIELDS.includes(k));
  if (extra !== undefined) return `unknown field ${JSON.stringify(extra)}`;
  const { origin, size, root, checkpoint } = o;
  if (typeof origin !== "string" || originHash(origin) !== hash) return "its origin is not the one its name hashes";
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) return "size is not a tree size";
  const rootHash = typeof root === "string" ? parseHash(root) : null;
  if (rootHash === null || !rootHash.ok) return "root is not a hash in base64";
  if (typeof checkpoint !== "string") return "checkpoint is not a signed checkpoint";
  return { origin, size, root: rootHash.value, checkpoint };
}

/** Why a state file's fields are not a cosigned state, or the state. */
function stateOf(o: Record<string, unknown>, hash: string): string | CosignedState {
  const s = fieldsOf(o, hash);
  if (typeof s === "string") return s;
  if (s.size === 0 && !hashEquals(s.root, EMPTY_ROOT)) return "size 0 with another root than the empty tree's";
  const end = s.checkpoint.indexOf("\n\n");
  const parsed = end < 0 ? null : parseCheckpoint(s.checkpoint.slice(0, end + 1));
  if (parsed === null || !parsed.ok) return "checkpoint is not a signed checkpoint";
  const c = parsed.value;
  if (c.origin !== s.origin || c.size !== s.size || !hashEquals(c.root, s.root)) return "its checkpoint is not its size and root";
  return s;
}

/** A state file's text, checked against itself and against its file name's origin hash. */
export function decodeState(text: string, hash: string, path: string): Result<CosignedState> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    v = undefined;
  }
  const state = typeof v !== "object" || v === null || Array.isArray(v) ? "not a JSON object" : stateOf(v as Record<string, unknown>, hash);
  return typeof state === "string" ? corrupt(path, state) : ok(state);
}

const corrupt = (path: string, why: string) =>
  fail<never>(WitnessErrorCode.CorruptState, path, `state file ${path} is corrupt (${why}): the witness refuses to start rather than forget what it cosigned; restore it from a backup`);

/** Reads one state file whole, its size checked before it is read. */
function readStateFile(path: string, hash: string): Result<CosignedState> {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    return fail(WitnessErrorCode.CorruptState, path, `state file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"}): the witness refuses to start rather than forget what it cosigned`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return decodeState("", hash, path);
    if (st.size > MAX_STATE_BYTES) return fail(WitnessErrorCode.CorruptState, path, `state file ${path} is corrupt (over ${MAX_STATE_BYTES} bytes): the witness refuses to start rather than forget what it cosigned`);
    const buf = Buffer.alloc(st.size);
    let at = 0;
    while (at < buf.length) {
      const n = readSync(fd, buf, at, buf.length - at, at);
      if (n === 0) break;
      at += n;
    }
    return decodeState(buf.subarray(0, at).toString("utf8"), hash, path);
  } finally {
    closeSync(fd);
  }
}

/** What an update step decides: the value to return, and the state to make durable first (if any). */
export interface Step<T> {
  readonly value: T;
  readonly next?: CosignedState;
}

/** The per-origin state: read at start, updated one request at a time per origin, durably. */
export class StateStore {
  private readonly queue = new OriginQueue();
  /** Origins whose file could not be written nor read back: refused until a restart reads them. */
  private readonly broken = new Set<string>();

  private constructor(
    readonly dir: string,
    private readonly states: Map<string, CosignedState>,
  ) {}

  /**
   * Reads every state file of `dir`, refusing the first that is corrupt. Temporary files a crash
   * left (never renamed, so never answered) are removed.
   */
  static open(dir: string): Result<StateStore> {
    const states = new Map<string, CosignedState>();
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (err) {
      return fail(WitnessErrorCode.BadDataFolder, dir, `state folder ${dir} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    }
    for (const name of names.sort()) {
      const path = join(dir, name);
      if (name.endsWith(TMP_SUFFIX) && isOriginHash(name.slice(0, -TMP_SUFFIX.length))) {
        try {
          unlinkSync(path);
        } catch (err) {
          return fail(WitnessErrorCode.BadDataFolder, path, `${path} is left from an interrupted write and cannot be removed (${(err as NodeJS.ErrnoException).code ?? "error"})`);
        }
        continue;
      }
      if (!name.endsWith(SUFFIX) || !isOriginHash(name.slice(0, -SUFFIX.length))) continue;
      const hash = name.slice(0, -SUFFIX.length);
      const state = readStateFile(path, hash);
      if (!state.ok) return state;
      states.set(hash, state.value);
    }
    return ok(new StateStore(dir, states));
  }

  /** The latest state cosigned for an origin, or `undefined` when none was. */
  get(origin: string): CosignedState | undefined {
    return this.states.get(originHash(origin));
  }

  /** The same, by the origin's hash (a monitor's request). */
  getByHash(hash: string): CosignedState | undefined {
    return this.states.get(hash);
  }

  /** How many logs have a cosigned state. */
  get size(): number {
    return this.states.size;
  }

  /**
   * Runs `step` with the origin's current state once every earlier update of that origin has
   * ended, writes the state it returns durably, and only then resolves with its value. Rejects
   * (and writes nothing) when `signal` is aborted before the step runs, and when the write fails:
   * the state is then read back from disk, since the rename may or may not have happened.
   */
  update<T>(origin: string, step: (current: CosignedState | undefined) => Step<T> | Promise<Step<T>>, signal?: AbortSignal): Promise<T> {
    const hash = originHash(origin);
    return this.queue.run(hash, async () => {
      signal?.throwIfAborted();
      if (this.broken.has(hash)) throw new Error(`the state of ${origin} could not be written or read back; restart the witness`);
      const decided = await step(this.states.get(hash));
      if (decided.next !== undefined) await this.write(hash, decided.next);
      return decided.value;
    });
  }

  /** Resolves when no update is queued or running. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  private async write(hash: string, next: CosignedState): Promise<void> {
    if (originHash(next.origin) !== hash) throw new Error("a state is written under its own origin's hash");
    const path = join(this.dir, `${hash}${SUFFIX}`);
    const tmp = join(this.dir, `${hash}${TMP_SUFFIX}`);
    try {
      const file = await open(tmp, "w", 0o600);
      try {
        await file.writeFile(encodeState(next), "utf8");
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(tmp, path);
      const folder = await open(this.dir, "r");
      try {
        await folder.sync();
      } finally {
        await folder.close();
      }
      this.states.set(hash, next);
    } catch (err) {
      const back = existsSync(path) ? readStateFile(path, hash) : null;
      if (back === null) this.states.delete(hash);
      else if (back.ok) this.states.set(hash, back.value);
      else this.broken.add(hash);
      throw err;
    }
  }
}
