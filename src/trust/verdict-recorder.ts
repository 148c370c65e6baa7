/**
 * Every signature verdict becomes a `signature.verdict` event in stream `trust`, carrying what it
 * was decided from (the signer identities, the trust root's and the catalog's SHA-256), so a
 * rollout decision can name the verdict it relied on. A verdict is about an image digest checked
 * against one declared manifest (two plugins may run one digest with different manifests); a
 * verdict equal to the last one recorded for the same digest and manifest is not appended again,
 * a changed one is a new event.
 */
import { canonicalize } from "json-canonicalize";
import { manifestDigest } from "../events/index.js";
import type { EventLog, SignatureVerdict } from "../events/index.js";
import { catalogEntriesJSON, SIGNATURE_RULES } from "../plugins/index.js";
import type { Catalog, JsonValue, Manifest } from "../plugins/index.js";
import type { ImageVerdict } from "./image-check.js";
import { TRUST_STREAM, VERDICT_EVENT } from "./verdict-stream.js";

/** The port the recorder writes through: the latest verdict per digest, and append. */
export interface VerdictLog {
  /** The data of the latest `signature.verdict` for `digest` checked against `manifest` (a {@link manifestDigest}, or null), if any. */
  last(digest: string, manifest: string | null): Promise<SignatureVerdict | undefined>;
  /** Appends one verdict; returns its seq. */
  append(verdict: SignatureVerdict, actor: string, causedBy?: number): Promise<number>;
}

/** Versions of the inputs a verdict was decided with. */
export interface VerdictInputs {
  /** SHA-256 (hex) of the trust root. */
  readonly trustRoot: string;
  /** SHA-256 (hex) of the catalog file. */
  readonly catalog: string;
  /** The seq of the `catalog.observed` event recording that catalog ({@link recordCatalog}). */
  readonly catalogEvent?: number;
}

/** The event data for a verdict. */
export function verdictEventData(verdict: ImageVerdict, inputs: VerdictInputs, declared?: Manifest): SignatureVerdict {
  return {
    digest: verdict.digest,
    ...(declared === undefined ? {} : { manifest: manifestDigest(declared) }),
    image: verdict.image,
    outcome: verdict.outcome,
    ...(verdict.reason === undefined ? {} : { reason: verdict.reason }),
    signers: verdict.signers.map((s) => ({ name: s.name, kind: s.kind })),
    identities: verdict.identities.map((id) =>
      id.kind === "key" ? { kind: "key", publicKey: id.publicKey } : { kind: "keyless", issuer: id.issuer, subject: id.subject },
    ),
    trustRoot: inputs.trustRoot,
    catalog: inputs.catalog,
    ...(verdict.module === undefined ? {} : { module: verdict.module.digest }),
    ...(inputs.catalogEvent === undefined ? {} : { catalogEvent: inputs.catalogEvent }),
    // The trust policy decides the catalog's part with today's signature rules (docs/adr/0191).
    rules: SIGNATURE_RULES.today.version,
  };
}

/**
 * Records the catalog a process starts with as a `catalog.observed` event in stream `trust`, unless
 * the latest one recorded has the same SHA-256; returns the seq of the event that records it, for
 * the verdicts decided with it to cite.
 */
export async function recordCatalog(store: EventLog, catalog: Catalog, sha256: string, actor = "reconciler"): Promise<number> {
  const last = await store.last(TRUST_STREAM, "catalog.observed");
  if (last !== null && last.data.sha256 === sha256) return last.seq;
  const entries = catalogEntriesJSON(catalog) as unknown as JsonValue[];
  const [stored] = await store.append([{ stream: TRUST_STREAM, type: "catalog.observed", data: { sha256, entries }, actor }], { durable: true });
  if (stored === undefined) throw new Error("the store appended nothing");
  return stored.seq;
}

/**
 * The event store as a {@link VerdictLog}. The latest verdict for a digest is read from the log on
 * every call (an indexed lookup), so several processes writing to one data folder never append a
 * verdict that another already recorded.
 */
export function storeVerdictLog(store: EventLog): VerdictLog {
  return {
    async last(digest, manifest) {
      // Exactly this manifest: a verdict recorded before manifests were (none) is not this one.
      return (await store.lookups.signatureVerdict(digest, manifest))?.data;
    },
    async append(verdict, actor, causedBy) {
      const [stored] = await store.append([{ stream: TRUST_STREAM, type: VERDICT_EVENT, data: verdict, actor, ...(causedBy === undefined ? {} : { causedBy }) }]);
      if (stored === undefined) throw new Error("the store appended nothing");
      return stored.seq;
    },
  };
}

/** Records verdicts, skipping ones unchanged since the last recorded for the same digest. */
export class VerdictRecorder {
  #catalogEvent: Promise<number> | undefined;

  /**
   * `catalogEvent`, when given, records the catalog (once, before the first verdict: never for a
   * process that checks nothing, and never before the log was found intact) and answers the seq
   * each verdict cites.
   */
  constructor(
    readonly log: VerdictLog,
    readonly inputs: VerdictInputs,
    readonly actor: string = "reconciler",
    readonly catalogEvent?: () => Promise<number>,
  ) {}

  /** The seq of the catalog's event, recording it on first use; a failed recording is tried again next time. */
  async #catalogSeq(): Promise<number | undefined> {
    if (this.inputs.catalogEvent !== undefined || this.catalogEvent === undefined) return this.inputs.catalogEvent;
    this.#catalogEvent ??= this.catalogEvent();
    try {
      return await this.#catalogEvent;
    } catch (err) {
      this.#catalogEvent = undefined;
      throw err;
    }
  }

  /** Appends the verdict unless it equals the last one for its digest and manifest; returns the new seq, or undefined. */
  async record(verdict: ImageVerdict, causedBy?: number, declared?: Manifest): Promise<number | undefined> {
    const catalogEvent = await this.#catalogSeq();
    const data = verdictEventData(verdict, { ...this.inputs, ...(catalogEvent === undefined ? {} : { catalogEvent }) }, declared);
    const last = await this.log.last(data.digest, data.manifest ?? null);
    // The same answer under newer rules is the same verdict: an upgrade alone records nothing.
    if (last !== undefined && canonicalize({ ...last, rules: 0 }) === canonicalize({ ...data, rules: 0 })) return undefined;
    return this.log.append(data, this.actor, causedBy);
  }
}
