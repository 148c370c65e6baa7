/**
 * The witness itself, without HTTP: an add-checkpoint body in, the answer tlog-witness defines out,
 * decided by `src/tlog`'s pure decision against the state of the checkpoint's log, and on a
 * cosignature the new state made durable before the answer is returned. Requests for one log run
 * one at a time (the state store's queue); requests for different logs run alongside.
 */
import { Buffer } from "node:buffer";
import { decideAddCheckpoint, EMPTY_ROOT, parseAddCheckpointRequest, parseDecimalSize, WITNESS_CAPS } from "../tlog/index.js";
import type { AddCheckpointAnswer, AddCheckpointRequest, CosignatureSigner, WitnessCaps, WitnessedLog } from "../tlog/index.js";
import type { LogConfig } from "./logs-config.js";
import type { StateStore } from "./state-store.js";

const TEXT = "text/plain; charset=utf-8";

/** An HTTP answer: status, content type, body; and what the access log says of it. */
export interface WitnessAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
  /** `cosigned`, or the refusal's stable code (`old_size_mismatch`, `inconsistent`, …). */
  readonly outcome: string;
  /** The checkpoint's origin as the request named it, cut to 200 characters (never trusted). */
  readonly origin?: string;
  readonly oldSize?: number;
  /** The checkpoint's size as its text says it (verified only when cosigned). */
  readonly size?: number;
}

export interface WitnessServiceOptions {
  readonly signer: CosignatureSigner;
  readonly logs: readonly LogConfig[];
  readonly store: StateStore;
  /** Now, in seconds since the Epoch: the cosignatures' time. */
  readonly clock?: () => number;
  readonly caps?: WitnessCaps;
}

/** The size line of a checkpoint as sent, for the access log (nothing is decided on it). */
function claimedSize(checkpoint: Uint8Array): number | undefined {
  const buf = Buffer.from(checkpoint.buffer, checkpoint.byteOffset, checkpoint.byteLength);
  const first = buf.indexOf(0x0a);
  const second = first < 0 ? -1 : buf.indexOf(0x0a, first + 1);
  if (second < 0 || second - first > 17) return undefined;
  return parseDecimalSize(buf.subarray(first + 1, second).toString("latin1")) ?? undefined;
}

const short = (origin: string) => (origin.length > 200 ? `${origin.slice(0, 200)}…` : origin);

function fromDecision(a: AddCheckpointAnswer, request: AddCheckpointRequest): WitnessAnswer {
  const seen = { origin: short(request.origin), oldSize: request.oldSize, ...(a.status === 200 ? { size: a.cosigned.size } : sizeOf(request)) };
  return { status: a.status, contentType: a.contentType, body: a.body, outcome: a.status === 200 ? "cosigned" : a.error.code, ...seen };
}

function sizeOf(request: AddCheckpointRequest): { size?: number } {
  const size = claimedSize(request.checkpoint);
  return size === undefined ? {} : { size };
}

export class WitnessService {
  private readonly logs: ReadonlyMap<string, LogConfig>;
  private readonly clock: () => number;
  private readonly caps: WitnessCaps;

  constructor(private readonly options: WitnessServiceOptions) {
    this.logs = new Map(options.logs.map((l) => [l.origin, l]));
    this.clock = options.clock ?? (() => Math.floor(Date.now() / 1000));
    this.caps = options.caps ?? WITNESS_CAPS;
  }

  /** The witness's cosigner verifier key: what a log operator configures to check its cosignatures. */
  get verifierKey(): string {
    return this.options.signer.verifierKey;
  }

  /** The largest request body. */
  get maxBodyBytes(): number {
    return this.caps.maxBodyBytes;
  }

  /**
   * Answers an add-checkpoint body. A cosignature is returned only once the new state is on disk;
   * `signal` aborted before the request's turn comes answers 503 without deciding.
   */
  async addCheckpoint(body: Uint8Array, signal?: AbortSignal): Promise<WitnessAnswer> {
    const parsed = parseAddCheckpointRequest(body, this.caps);
    if (!parsed.ok) return { status: 400, contentType: TEXT, body: `${parsed.error.message}\n`, outcome: parsed.error.code };
    const request = parsed.value;
    const witness = { cosigners: [this.options.signer], now: this.clock(), caps: this.caps.note };
    const log = this.logs.get(request.origin);
    if (log === undefined) return fromDecision(decideAddCheckpoint(request, undefined, witness), request);
    try {
      return await this.options.store.update(
        log.origin,
        (current) => {
          const known: WitnessedLog = { origin: log.origin, verifiers: log.verifiers, size: current?.size ?? 0, root: current?.root ?? EMPTY_ROOT };
          // The time is read when the request's turn comes: a cosignature is never older than one made before it.
          const answer = decideAddCheckpoint(request, known, { ...witness, now: Math.max(witness.now, this.clock()) });
          return answer.status === 200 ? { value: fromDecision(answer, request), next: answer.cosigned } : { value: fromDecision(answer, request) };
        },
        signal,
      );
    } catch (_err) {
      const late = signal?.aborted === true;
      return {
        status: 503,
        contentType: TEXT,
        body: late ? "the witness did not reach this request in time; retry\n" : "the witness could not store its state; retry later\n",
        outcome: late ? "deadline" : "state_write_failed",
        origin: short(request.origin),
        oldSize: request.oldSize,
        ...sizeOf(request),
      };
    }
  }

  /** Resolves when no state write is queued or under way. */
  idle(): Promise<void> {
    return this.options.store.idle();
  }

  /** The cosigned checkpoint of the log whose origin hashes to `hash`, for monitors; `undefined` if none. */
  checkpoint(hash: string): string | undefined {
    return this.options.store.getByHash(hash)?.checkpoint;
  }
}
