/**
 * Every signature verdict becomes a `signature.verdict` event in stream `trust`, carrying what it
 * was decided from (the signer identities, the trust root's and the catalog's SHA-256), so a
 * rollout decision can name the verdict it relied on. A verdict equal to the last one recorded
 * for the same digest is not appended again; a changed one is a new event.
 */
import { canonicalize } from "json-canonicalize";
import type { EventStore, SignatureVerdict } from "../events/index.js";
import type { ImageVerdict } from "./image-check.js";

/** The event type and stream verdicts go to. */
export const VERDICT_EVENT = "signature.verdict";
export const TRUST_STREAM = "trust";

/** The port the recorder writes through: the latest verdict per digest, and append. */
export interface VerdictLog {
  /** The data of the latest `signature.verdict` for `digest`, if any. */
  last(digest: string): SignatureVerdict | undefined;
  /** Appends one verdict; returns its seq. */
  append(verdict: SignatureVerdict, actor: string, causedBy?: number): number;
}

/** Versions of the inputs a verdict was decided with. */
export interface VerdictInputs {
  /** SHA-256 (hex) of the trust root. */
  readonly trustRoot: string;
  /** SHA-256 (hex) of the catalog file. */
  readonly catalog: string;
}

/** The event data for a verdict. */
export function verdictEventData(verdict: ImageVerdict, inputs: VerdictInputs): SignatureVerdict {
  return {
    digest: verdict.digest,
    image: verdict.image,
    outcome: verdict.outcome,
    ...(verdict.reason === undefined ? {} : { reason: verdict.reason }),
    signers: verdict.signers.map((s) => ({ name: s.name, kind: s.kind })),
    identities: verdict.identities.map((id) =>
      id.kind === "key" ? { kind: "key", publicKey: id.publicKey } : { kind: "keyless", issuer: id.issuer, subject: id.subject },
    ),
    trustRoot: inputs.trustRoot,
    catalog: inputs.catalog,
  };
}

/**
 * The event store as a {@link VerdictLog}. The latest verdict for a digest is read from the log on
 * every call (an indexed lookup), so several processes writing to one data folder never append a
 * verdict that another already recorded.
 */
export function storeVerdictLog(store: EventStore): VerdictLog {
  const latest = store.database.prepare<[string], { seq: number }>(
    "SELECT seq FROM events WHERE type = 'signature.verdict' AND json_extract(data, '$.digest') = ? ORDER BY seq DESC LIMIT 1",
  );
  return {
    last(digest) {
      const row = latest.get(digest);
      const e = row === undefined ? null : store.get(row.seq);
      return e?.type === "signature.verdict" ? e.data : undefined;
    },
    append(verdict, actor, causedBy) {
      const [stored] = store.append([{ stream: TRUST_STREAM, type: VERDICT_EVENT, data: verdict, actor, ...(causedBy === undefined ? {} : { causedBy }) }]);
      if (stored === undefined) throw new Error("the store appended nothing");
      return stored.seq;
    },
  };
}

/** Records verdicts, skipping ones unchanged since the last recorded for the same digest. */
export class VerdictRecorder {
  constructor(
    readonly log: VerdictLog,
    readonly inputs: VerdictInputs,
    readonly actor: string = "reconciler",
  ) {}

  /** Appends the verdict unless it equals the last one for its digest; returns the new seq, or undefined. */
  record(verdict: ImageVerdict, causedBy?: number): number | undefined {
    const data = verdictEventData(verdict, this.inputs);
    const last = this.log.last(data.digest);
    if (last !== undefined && canonicalize(last) === canonicalize(data)) return undefined;
    return this.log.append(data, this.actor, causedBy);
  }
}
