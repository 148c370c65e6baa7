/**
 * The catalog part of signature verdicts, re-decided from the log (docs/adr/0158). A verdict that
 * cites a catalog (`catalogEvent`, version 3) records what the catalog made of the image; the
 * catalog itself is in the log as that `catalog.observed` event, and the identities whose
 * signatures verified are in the verdict. So, from recorded events alone:
 * - the cited event must be a catalog recorded before the verdict, with the SHA-256 the verdict names;
 * - the catalog publishers among the verdict's signers must be exactly those of the recorded
 *   catalog whose identity is among the verdict's identities;
 * - a verdict that was not refused is `verified` exactly when an entry of the recorded catalog pins
 *   its digest and that entry's publisher signed it, else `unverified`; one refused for want of a
 *   trusted signer must have no catalog publisher among its identities.
 * What the catalog does not decide (the Sigstore checks, the owner's signers, the signed label) is
 * not re-decided here: those inputs are not in the log.
 */
import type { EventLog, EventOf } from "../events/index.js";
import { identityMatches, parseCatalog } from "../plugins/index.js";
import type { Catalog, VerifiedIdentity } from "../plugins/index.js";

/** The catalog rule re-decided here: the one released (verdicts name no rules version of their own). */
export const CATALOG_RULES = 1;

/** One verdict whose catalog part the recorded catalog does not reproduce. */
export interface CatalogDivergence {
  readonly seq: number;
  /** The image the verdict is about. */
  readonly image: string;
  readonly field: "event" | "publishers" | "outcome";
  readonly recorded: unknown;
  readonly expected: unknown;
}

/** What {@link checkCatalogVerdicts} found. */
export interface CatalogCheck {
  /** Verdicts whose catalog part was re-decided (those citing a catalog event). */
  readonly checked: number;
  readonly divergences: CatalogDivergence[];
}

function sortedUnique(xs: Iterable<string>): string[] {
  return [...new Set(xs)].sort();
}

/** The catalog a `catalog.observed` event records, read back by the strict parser; null when it does not parse. */
function recordedCatalog(e: EventOf<"catalog.observed">): Catalog | null {
  const parsed = parseCatalog(JSON.stringify({ plugins: e.data.entries }));
  return parsed.ok ? parsed.value : null;
}

/** Re-decides one verdict's catalog part given the catalogs recorded before it (by seq); its divergences. */
export function recheckCatalogVerdict(verdict: EventOf<"signature.verdict">, catalogs: ReadonlyMap<number, EventOf<"catalog.observed">>): CatalogDivergence[] {
  const v = verdict.data;
  const cited = v.catalogEvent;
  if (cited === undefined) return [];
  const at = (field: CatalogDivergence["field"], recorded: unknown, expected: unknown): CatalogDivergence => ({ seq: verdict.seq, image: v.image, field, recorded, expected });
  const event = catalogs.get(cited);
  if (event === undefined || event.seq >= verdict.seq || event.data.sha256 !== v.catalog) {
    const same = [...catalogs.values()].filter((c) => c.seq < verdict.seq && c.data.sha256 === v.catalog).at(-1);
    return [at("event", { catalogEvent: cited, catalog: v.catalog }, { catalogEvent: same?.seq ?? null, catalog: v.catalog })];
  }
  const catalog = recordedCatalog(event);
  if (catalog === null) return [at("event", { catalogEvent: cited }, "a catalog.observed whose entries the catalog's parser reads")];
  const ids = v.identities as unknown as VerifiedIdentity[];
  const signedBy = (e: { readonly publisher: { readonly identity: Parameters<typeof identityMatches>[0] } }): boolean => ids.some((id) => identityMatches(e.publisher.identity, id));
  const publishers = sortedUnique(catalog.entries.filter(signedBy).map((e) => e.publisher.name));
  const out: CatalogDivergence[] = [];
  if (v.outcome === "refused") {
    if (v.reason === "untrusted_signer" && publishers.length > 0) out.push(at("outcome", "refused (untrusted_signer)", `signed by ${publishers.join(", ")}, a publisher of the recorded catalog`));
    return out;
  }
  const recorded = sortedUnique(v.signers.filter((s) => s.kind === "publisher").map((s) => s.name));
  if (JSON.stringify(recorded) !== JSON.stringify(publishers)) out.push(at("publishers", recorded, publishers));
  const expected = catalog.entriesForDigest(v.digest).some(signedBy) ? "verified" : "unverified";
  if (v.outcome !== expected) out.push(at("outcome", v.outcome, expected));
  return out;
}

/** Re-decides the catalog part of every verdict that cites a catalog event (up to `toSeq`). */
export async function checkCatalogVerdicts(store: EventLog, opts: { toSeq: number; pageSize: number }): Promise<CatalogCheck> {
  const catalogs = new Map<number, EventOf<"catalog.observed">>();
  let checked = 0;
  const divergences: CatalogDivergence[] = [];
  for await (const page of store.pages({ types: ["catalog.observed", "signature.verdict"], toSeq: opts.toSeq, pageSize: opts.pageSize, hashes: false })) {
    for (const e of page) {
      if (e.type === "catalog.observed") catalogs.set(e.seq, e);
      else if (e.type === "signature.verdict" && e.data.catalogEvent !== undefined) {
        checked++;
        divergences.push(...recheckCatalogVerdict(e, catalogs));
      }
    }
  }
  return { checked, divergences };
}
