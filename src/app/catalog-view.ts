/**
 * Where the image a plugin asks for stands with the catalog, read from the log alone: the verdict's
 * recorded identities and the `catalog.observed` event it was decided with (read back through the
 * catalog's strict parser), so the faces say "verified since …" or what does not match without
 * reading any file. A catalog entry whose digest or publisher does not match is told as such and
 * is never verified.
 */
import { TRUST_STREAM } from "../events/index.js";
import type { EventLog, EventOf } from "../events/index.js";
import { parseCatalog, parseImageRef } from "../plugins/index.js";
import type { CatalogStanding, JsonValue, VerifiedIdentity } from "../plugins/index.js";

/** The catalog's word on one image, for the faces (the JSON API carries it as is). */
export type CatalogView =
  | {
      readonly standing: "verified";
      readonly entry: string;
      readonly publisher: string;
      readonly digest: string;
      /** When the catalog first pinned this digest with this publisher, in the run of catalogs up to the verdict's. */
      readonly since: string;
      /** The seq of that `catalog.observed` event. */
      readonly sinceEvent: number;
    }
  | {
      /** An entry lists the plugin (by name or repository) at another digest. */
      readonly standing: "other_digest";
      readonly entry: string;
      readonly publisher: string;
      /** The digest the catalog lists. */
      readonly listed: string;
      /** The digest of the image asked for. */
      readonly digest: string;
    }
  | {
      /** An entry pins this digest, but its publisher's signature is not among those that verified. */
      readonly standing: "other_publisher";
      readonly entry: string;
      readonly publisher: string;
      readonly digest: string;
    };

/** What one catalog entry must equal for a later catalog to keep vouching for a digest the same way. */
function entryKey(e: JsonValue): string {
  return JSON.stringify(e);
}

function entriesOf(e: EventOf<"catalog.observed">): readonly JsonValue[] {
  return e.data.entries;
}

/** The catalog a verdict was decided with: the event it cites, else the latest one before it with the same SHA-256. */
function catalogOf(events: readonly EventOf<"catalog.observed">[], verdict: EventOf<"signature.verdict">): number {
  const cited = verdict.data.catalogEvent;
  if (cited !== undefined) return events.findIndex((e) => e.seq === cited);
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e !== undefined && e.seq < verdict.seq && e.data.sha256 === verdict.data.catalog) return i;
  }
  return -1;
}

function standingOf(entries: readonly JsonValue[], name: string, image: string, identities: readonly JsonValue[]): CatalogStanding | null {
  const catalog = parseCatalog(JSON.stringify({ plugins: entries }));
  const ref = parseImageRef(image);
  if (!catalog.ok || !ref.ok) return null;
  return catalog.value.standing({ name, repository: ref.value.name, digest: ref.value.digest }, identities as unknown as VerifiedIdentity[]);
}

/**
 * The catalog's word on the image of the verdict recorded at `verdictSeq`, for plugin `name`; null
 * when the catalog it was decided with does not list the image or the plugin (or is not recorded).
 */
export async function catalogView(store: EventLog, verdictSeq: number, name: string): Promise<CatalogView | null> {
  const verdict = await store.get(verdictSeq);
  if (verdict?.type !== "signature.verdict") return null;
  const events = await store.read({ type: "catalog.observed", stream: TRUST_STREAM });
  const at = catalogOf(events, verdict);
  const cited = events[at];
  if (cited === undefined) return null;
  const s = standingOf(entriesOf(cited), name, verdict.data.image, verdict.data.identities);
  if (s === null || s.kind === "not_listed") return null;
  const entry = s.entry.name;
  const publisher = s.entry.publisher.name;
  const digest = verdict.data.digest;
  if (s.kind === "other_digest") return { standing: "other_digest", entry, publisher, listed: s.entry.image.digest, digest };
  if (s.kind === "other_publisher") return { standing: "other_publisher", entry, publisher, digest };
  // Since: walk back through the catalogs before the cited one while each still holds the same entry.
  const key = entryKey(entriesOf(cited).find((e) => typeof e === "object" && e !== null && !Array.isArray(e) && e["name"] === entry) ?? null);
  let first = cited;
  for (let i = at - 1; i >= 0; i--) {
    const e = events[i];
    if (e === undefined || !entriesOf(e).some((x) => entryKey(x) === key)) break;
    first = e;
  }
  return { standing: "verified", entry, publisher, digest, since: first.time, sinceEvent: first.seq };
}
