/**
 * The step every adapter of the log runs before it writes: each event of a batch validated against
 * its type, its data put in canonical form (RFC 8785) first so that what the schema checks is
 * exactly what is stored and hashed. Shared so that a log copied between stores holds the same
 * bytes, whichever store appended them. Nothing here touches a database.
 */
import { canonicalForm, canonicalJson } from "./canonical.js";
import type { Canonical } from "./canonical.js";
import { StoreError, StoreErrorCode } from "./errors.js";
import type { EventProblem } from "./errors.js";
import type { EventRegistry, EventType } from "./registry.js";
import { parseStream } from "./streams.js";
import type { NewEvent } from "./types.js";

/** An event ready to be written: validated, its data as canonical text and as the value that text denotes. */
export interface Prepared {
  readonly stream: string;
  readonly type: string;
  readonly schemaVersion: number;
  readonly actor: string;
  readonly causedBy: number | null;
  /** Canonical JSON text, as stored and hashed. */
  readonly data: string;
  /** The plain value `data` denotes (what `JSON.parse(data)` gives), returned as the event's data. */
  readonly value: unknown;
}

/** The longest actor accepted, in UTF-16 code units. */
export const MAX_ACTOR = 200;

/** Stream names already found valid are remembered up to this many (a log has few streams). */
const STREAM_MEMO = 4096;

/** Validates batches for one log (it remembers the stream names it has seen valid). */
export class BatchPreparer {
  readonly #streams = new Set<string>();

  constructor(readonly registry: EventRegistry) {}

  /**
   * Validates the whole batch before anything is written; throws a {@link StoreError} naming every
   * problem found (its code is the first problem's), so that nothing of a refused batch is written.
   */
  prepare(batch: readonly NewEvent[]): Prepared[] {
    const out: Prepared[] = [];
    const problems: (EventProblem & { code: StoreErrorCode })[] = [];
    for (let index = 0; index < batch.length; index++) {
      const r = this.#one(batch[index] as NewEvent);
      if ("code" in r) problems.push(...r.problems.map((p) => ({ code: r.code, index, path: p.path, message: p.message })));
      else out.push(r);
    }
    const first = problems[0];
    if (first !== undefined) {
      const summary = problems.slice(0, 5).map((p) => `event ${p.index}: ${p.path}: ${p.message}`).join("; ");
      throw new StoreError(first.code, `batch refused, nothing written: ${summary}${problems.length > 5 ? `; and ${problems.length - 5} more` : ""}`, {
        problems: problems.map(({ index, path, message }) => ({ index, path, message })),
      });
    }
    return out;
  }

  /** True for a valid stream name. */
  validStream(stream: unknown): stream is string {
    if (typeof stream !== "string") return false;
    if (this.#streams.has(stream)) return true;
    if (parseStream(stream) === null) return false;
    if (this.#streams.size >= STREAM_MEMO) this.#streams.clear();
    this.#streams.add(stream);
    return true;
  }

  #one(e: NewEvent): Prepared | { code: StoreErrorCode; problems: { path: string; message: string }[] } {
    const refuse = (code: StoreErrorCode, path: string, message: string) => ({ code, problems: [{ path, message }] });
    const def = this.registry.get(e.type);
    if (def === undefined) return refuse(StoreErrorCode.UnknownType, "type", `unknown event type ${JSON.stringify(String(e.type))}`);
    let canonical: Canonical;
    try { canonical = canonicalForm(e.data); } catch (err) { return refuse(StoreErrorCode.InvalidData, "data", `not JSON: ${err instanceof Error ? err.message : String(err)}`); }
    const data = canonical.value;
    const bad = def.validate(data);
    if (bad !== null) return { code: StoreErrorCode.InvalidData, problems: bad.map((b) => ({ path: b.path, message: `${e.type}: ${b.message}` })) };
    if (!this.validStream(e.stream)) return refuse(StoreErrorCode.InvalidStream, "stream", `invalid stream name ${JSON.stringify(String(e.stream))}`);
    const why = def.checkStream(e.stream, data);
    if (why !== null) return refuse(StoreErrorCode.InvalidStream, "stream", `${e.type} ${why}`);
    if (typeof e.actor !== "string" || e.actor.length === 0 || e.actor.length > MAX_ACTOR) {
      return refuse(StoreErrorCode.InvalidEvent, "actor", `actor must be a non-empty string of at most ${MAX_ACTOR} characters`);
    }
    const causedBy = e.causedBy ?? null;
    if (causedBy !== null && (!Number.isSafeInteger(causedBy) || causedBy < 1)) return refuse(StoreErrorCode.InvalidCause, "causedBy", "causedBy must be the seq of an earlier event");
    return { stream: e.stream, type: e.type, schemaVersion: def.version, actor: e.actor, causedBy, data: canonical.text, value: data };
  }
}

/** What `observe` compares: the latest stored event of the new event's observation group. */
export interface LatestObserved {
  readonly type: string;
  readonly schema_version: number;
  /** The stored canonical text. */
  readonly data: string;
}

/**
 * Whether `prepared` says nothing new after `latest`, the latest event of its observation group in
 * its stream: the same type with equal canonical data (an older row upcast to the current shape first).
 */
export function sameObservation(def: EventType, latest: LatestObserved | undefined, prepared: Prepared): boolean {
  if (latest === undefined || latest.type !== prepared.type) return false;
  return latest.schema_version === prepared.schemaVersion
    ? latest.data === prepared.data
    : canonicalJson(def.upcast(latest.schema_version, JSON.parse(latest.data))) === prepared.data;
}

/** The versions each stream of a batch must be at, checked against the versions read under the write lock; throws `conflict`. */
export function checkExpected(expected: Readonly<Record<string, number>> | undefined, versions: ReadonlyMap<string, number>): void {
  if (expected === undefined) return;
  for (const [stream, want] of Object.entries(expected)) {
    const actual = versions.get(stream) ?? 0;
    if (actual !== want) {
      throw new StoreError(StoreErrorCode.Conflict, `stream ${stream} is at version ${actual}, expected ${want}: read it again and retry`, {
        conflict: { stream, expected: want, actual },
      });
    }
  }
}
