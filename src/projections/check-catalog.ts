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
 *
 * The catalog step is the signature rules' (docs/adr/0191): a verdict is re-decided under the
 * version it names (a difference: a divergence) and, when that is older, under today's too (a
 * difference: an upgrade's effect, reported apart).
 */
import type { EventOf } from "../events/index.js";
import { parseCatalog, SIGNATURE_RULES } from "../plugins/index.js";
import type { Catalog, CatalogAnswer, RulesRegistry, SignatureCatalogStep, VerifiedIdentity } from "../plugins/index.js";

/** One verdict whose catalog part the recorded catalog does not reproduce. */
export interface CatalogDivergence {
  readonly seq: number;
  /** The image the verdict is about. */
  readonly image: string;
  /** The signature rules the verdict names. */
  readonly rules: number;
  /** Which part differs; `rules`: the verdict names rules this release does not know. */
  readonly field: "event" | "publishers" | "outcome" | "rules";
  readonly recorded: unknown;
  readonly expected: unknown;
}

/** One verdict whose catalog part today's signature rules decide otherwise than the older rules it names. */
export interface CatalogUpgrade {
  readonly seq: number;
  readonly image: string;
  readonly rules: number;
  readonly today: number;
  readonly field: "publishers" | "outcome";
  readonly before: unknown;
  readonly after: unknown;
}

/** What re-deciding one verdict's catalog part found. */
export interface CatalogFindings {
  readonly divergences: CatalogDivergence[];
  readonly upgrades: CatalogUpgrade[];
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

/** The outcome a verdict that was not refused must have, given the catalog's answer. */
function outcomeOf(a: CatalogAnswer): "verified" | "unverified" {
  return a.entry === null ? "unverified" : "verified";
}

/**
 * Re-decides one verdict's catalog part given the catalogs recorded before it (by seq): under the
 * signature rules it names (divergences) and, when those are older, under today's (upgrade effects).
 */
export function recheckCatalogVerdict(
  verdict: EventOf<"signature.verdict">,
  catalogs: ReadonlyMap<number, EventOf<"catalog.observed">>,
  registry: RulesRegistry<SignatureCatalogStep> = SIGNATURE_RULES,
): CatalogFindings {
  const v = verdict.data;
  const cited = v.catalogEvent;
  const none: CatalogFindings = { divergences: [], upgrades: [] };
  if (cited === undefined) return none;
  const div = (field: CatalogDivergence["field"], recorded: unknown, expected: unknown): CatalogDivergence => ({ seq: verdict.seq, image: v.image, rules: v.rules, field, recorded, expected });
  const at = (field: CatalogDivergence["field"], recorded: unknown, expected: unknown): CatalogFindings => ({ divergences: [div(field, recorded, expected)], upgrades: [] });
  const own = registry.get(v.rules);
  if (own === undefined) return at("rules", v.rules, `rules 1 to ${registry.today.version}`);
  const event = catalogs.get(cited);
  if (event === undefined || event.seq >= verdict.seq || event.data.sha256 !== v.catalog) {
    const same = [...catalogs.values()].filter((c) => c.seq < verdict.seq && c.data.sha256 === v.catalog).at(-1);
    return at("event", { catalogEvent: cited, catalog: v.catalog }, { catalogEvent: same?.seq ?? null, catalog: v.catalog });
  }
  const catalog = recordedCatalog(event);
  if (catalog === null) return at("event", { catalogEvent: cited }, "a catalog.observed whose entries the catalog's parser reads");
  return redecide(verdict, catalog, own.decide, registry.today);
}

/** Re-decides a verdict's catalog part from the catalog it cites, under its own rules' step and today's. */
function redecide(verdict: EventOf<"signature.verdict">, catalog: Catalog, own: SignatureCatalogStep, todays: RulesRegistry<SignatureCatalogStep>["today"]): CatalogFindings {
  const v = verdict.data;
  const div = (field: CatalogDivergence["field"], recorded: unknown, expected: unknown): CatalogDivergence => ({ seq: verdict.seq, image: v.image, rules: v.rules, field, recorded, expected });
  const ids = v.identities as unknown as VerifiedIdentity[];
  const answer = own(catalog, v.digest, ids);
  const today = todays.version === v.rules ? null : todays.decide(catalog, v.digest, ids);
  const upgrade = (field: CatalogUpgrade["field"], before: unknown, after: unknown): CatalogUpgrade => ({ seq: verdict.seq, image: v.image, rules: v.rules, today: todays.version, field, before, after });
  const upgrades: CatalogUpgrade[] = [];
  if (today !== null && differ(answer.publishers, today.publishers)) upgrades.push(upgrade("publishers", answer.publishers, today.publishers));
  if (v.outcome === "refused") {
    const trusted = v.reason === "untrusted_signer" && answer.publishers.length > 0;
    return { divergences: trusted ? [div("outcome", "refused (untrusted_signer)", `signed by ${answer.publishers.join(", ")}, a publisher of the recorded catalog`)] : [], upgrades };
  }
  const divergences: CatalogDivergence[] = [];
  const recorded = sortedUnique(v.signers.filter((s) => s.kind === "publisher").map((s) => s.name));
  if (differ(recorded, answer.publishers)) divergences.push(div("publishers", recorded, answer.publishers));
  if (v.outcome !== outcomeOf(answer)) divergences.push(div("outcome", v.outcome, outcomeOf(answer)));
  if (today !== null && outcomeOf(today) !== outcomeOf(answer)) upgrades.push(upgrade("outcome", outcomeOf(answer), outcomeOf(today)));
  return { divergences, upgrades };
}

function differ(a: readonly string[], b: readonly string[]): boolean {
  return JSON.stringify(a) !== JSON.stringify(b);
}
