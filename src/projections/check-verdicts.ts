/**
 * The verdicts re-decided (docs/adr/0191): every `signature.verdict`, `config.verdict` and
 * `grant.verdict` names the version of its family's rules that made it, and is re-decided from the
 * events before it under those rules (a difference: a divergence, a bug or tampering) and, when
 * they are older, under today's (a difference: an upgrade's effect, reported apart).
 *
 * - a signature verdict: its catalog part, from the catalog it cites (`check-catalog.ts`);
 * - a config verdict: the plugin's spec as last observed before it (the image it names must be
 *   that spec's) checked against its manifest's config schema;
 * - a grant verdict: the grant last observed before it (the seq it names must be that one's) and
 *   every instance installed then, as the operator gathers them, asked which Secrets are another
 *   instance's.
 *
 * {@link VerdictChecker} is pure: it folds events in seq order. `checkVerdicts` feeds it the log.
 */
import { canonicalize } from "json-canonicalize";
import type { EventLog, EventOf, EventTypeName, KnownEvent } from "../events/index.js";
import { CONFIG_RULES, GRANT_RULES, parseGrant, parsePlugin, SIGNATURE_RULES } from "../plugins/index.js";
import type { ConfigCheck, ConfigStep, GrantStep, InstanceSecrets, JsonValue, RulesRegistry, SignatureCatalogStep, VerdictFamily } from "../plugins/index.js";
import { recheckCatalogVerdict } from "./check-catalog.js";

/** One verdict the rules it names do not reproduce. */
export interface VerdictDivergence {
  readonly seq: number;
  /** The plugin (config, grant) or the image (signature) the verdict is about. */
  readonly name: string;
  readonly family: VerdictFamily;
  readonly rules: number;
  /**
   * Which part differs: `signature` verdicts `catalog.event`, `catalog.publishers`,
   * `catalog.outcome`; `config` and `grant` verdicts `<family>.inputs` (the image or grant it names
   * is not the one the log held) or `<family>.verdict` (its answer); `<family>.rules`: rules this
   * release does not know.
   */
  readonly field: VerdictField;
  readonly recorded: unknown;
  readonly expected: unknown;
}

/** The parts of a verdict that can differ. */
export type VerdictField =
  | "catalog.event" | "catalog.publishers" | "catalog.outcome" | "catalog.rules"
  | "config.inputs" | "config.verdict" | "config.rules"
  | "grant.inputs" | "grant.verdict" | "grant.rules";

/** One verdict made under older rules that today's rules would give differently. */
export interface VerdictUpgrade {
  readonly seq: number;
  readonly name: string;
  readonly family: VerdictFamily;
  readonly rules: number;
  readonly today: number;
  readonly field: "catalog.publishers" | "catalog.outcome" | "config.verdict" | "grant.verdict";
  readonly before: unknown;
  readonly after: unknown;
}

/** The rules each verdict family re-decides with: the released ones, or a test's with a version more. */
export interface VerdictRulesSet {
  readonly signature?: RulesRegistry<SignatureCatalogStep>;
  readonly config?: RulesRegistry<ConfigStep>;
  readonly grant?: RulesRegistry<GrantStep>;
}

/** What the verdict check found. */
export interface VerdictCheckResult {
  readonly divergences: VerdictDivergence[];
  readonly upgrades: VerdictUpgrade[];
  /** Verdicts re-decided per family, by the rules version they name. */
  readonly byRules: Readonly<Record<VerdictFamily, ReadonlyMap<number, number>>>;
}

/** The event types the verdict check reads. */
export const VERDICT_CHECK_EVENT_TYPES: readonly EventTypeName[] = [
  "catalog.observed", "signature.verdict", "plugin.observed", "plugin.deleted", "grant.observed", "grant.deleted", "config.verdict", "grant.verdict",
];

/** The types a verdict check folds but does not re-decide: what a check starting mid-log reads first. */
export const VERDICT_INPUT_TYPES: readonly EventTypeName[] = ["catalog.observed", "plugin.observed", "plugin.deleted", "grant.observed", "grant.deleted"];

/** One plugin as the log held it. */
interface PluginFold {
  /** The spec last observed, or null after a deletion. */
  spec: JsonValue | null;
  /** The seq of the first observation since the last deletion. */
  installedSeq: number;
  /** The grant last observed (seq and spec), or null (none, or deleted). */
  grant: { seq: number; spec: JsonValue } | null;
}

/** A verdict's answer as recorded: whether it holds and its problems. */
interface Answer { readonly ok: boolean; readonly errors: readonly { readonly code: string; readonly path: string; readonly message: string }[] }

function answer(errors: readonly { readonly code: string; readonly path: string; readonly message: string }[]): Answer {
  return { ok: errors.length === 0, errors: errors.map((e) => ({ code: e.code, path: e.path, message: e.message })) };
}

function same(a: unknown, b: unknown): boolean {
  return canonicalize(a) === canonicalize(b);
}

/** Folds events in seq order and re-decides each verdict from what came before it. Pure. */
export class VerdictChecker {
  readonly #catalogs = new Map<number, EventOf<"catalog.observed">>();
  readonly #plugins = new Map<string, PluginFold>();
  readonly #divergences: VerdictDivergence[] = [];
  readonly #upgrades: VerdictUpgrade[] = [];
  readonly #byRules: Record<VerdictFamily, Map<number, number>> = { signature: new Map(), config: new Map(), grant: new Map() };
  readonly #signature: RulesRegistry<SignatureCatalogStep>;
  readonly #config: RulesRegistry<ConfigStep>;
  readonly #grant: RulesRegistry<GrantStep>;
  readonly #check: ConfigCheck;

  /** `check`: the config-schema check (the pure model's `validateConfig`, loaded: ADR 0186). */
  constructor(check: ConfigCheck, rules: VerdictRulesSet = {}) {
    this.#check = check;
    this.#signature = rules.signature ?? SIGNATURE_RULES;
    this.#config = rules.config ?? CONFIG_RULES;
    this.#grant = rules.grant ?? GRANT_RULES;
  }

  /** Folds one event, re-deciding it first when it is a verdict. Other types are ignored. */
  feed(e: KnownEvent): void {
    switch (e.type) {
      case "catalog.observed": this.#catalogs.set(e.seq, e); return;
      case "signature.verdict": this.#signatureVerdict(e); return;
      case "config.verdict": this.#configVerdict(e); return;
      case "grant.verdict": this.#grantVerdict(e); return;
      case "plugin.observed": {
        const p = this.#plugins.get(e.data.name);
        if (p === undefined) this.#plugins.set(e.data.name, { spec: e.data.spec, installedSeq: e.seq, grant: null });
        else {
          if (p.spec === null) p.installedSeq = e.seq;
          p.spec = e.data.spec;
        }
        return;
      }
      case "plugin.deleted": { const p = this.#plugins.get(e.data.name); if (p !== undefined) p.spec = null; return; }
      case "grant.observed": this.#fold(e.data.name).grant = { seq: e.seq, spec: e.data.spec }; return;
      case "grant.deleted": this.#fold(e.data.name).grant = null; return;
      default: return;
    }
  }

  /** What was found so far. */
  result(): VerdictCheckResult {
    return { divergences: [...this.#divergences], upgrades: [...this.#upgrades], byRules: this.#byRules };
  }

  #fold(name: string): PluginFold {
    let p = this.#plugins.get(name);
    if (p === undefined) { p = { spec: null, installedSeq: 0, grant: null }; this.#plugins.set(name, p); }
    return p;
  }

  #count(family: VerdictFamily, rules: number): void {
    const m = this.#byRules[family];
    m.set(rules, (m.get(rules) ?? 0) + 1);
  }

  #signatureVerdict(e: EventOf<"signature.verdict">): void {
    // Only a verdict that cites the catalog it was decided with has its catalog part in the log.
    if (e.data.catalogEvent === undefined) return;
    this.#count("signature", e.data.rules);
    const found = recheckCatalogVerdict(e, this.#catalogs, this.#signature);
    for (const d of found.divergences) this.#divergences.push({ seq: d.seq, name: d.image, family: "signature", rules: d.rules, field: `catalog.${d.field}`, recorded: d.recorded, expected: d.expected });
    for (const u of found.upgrades) this.#upgrades.push({ seq: u.seq, name: u.image, family: "signature", rules: u.rules, today: u.today, field: `catalog.${u.field}`, before: u.before, after: u.after });
  }

  #configVerdict(e: EventOf<"config.verdict">): void {
    const { name, rules } = e.data;
    this.#count("config", rules);
    const div = (field: VerdictField, recorded: unknown, expected: unknown): void => { this.#divergences.push({ seq: e.seq, name, family: "config", rules, field, recorded, expected }); };
    const own = this.#config.get(rules);
    if (own === undefined) { div("config.rules", rules, `rules 1 to ${this.#config.today.version}`); return; }
    const spec = this.#plugins.get(name)?.spec ?? null;
    const parsed = spec === null ? null : parsePlugin({ name, spec });
    if (parsed === null || !parsed.ok) { div("config.inputs", { image: e.data.image }, spec === null ? "no plugin observed before it" : "a spec that does not parse: no config verdict"); return; }
    const { manifest, config, image } = parsed.value.spec;
    if (image !== e.data.image) { div("config.inputs", { image: e.data.image }, { image }); return; }
    const recorded: Answer = { ok: e.data.ok, errors: e.data.errors };
    const expected = answer(own.decide(manifest, config, this.#check));
    if (!same(recorded, expected)) div("config.verdict", recorded, expected);
    if (this.#config.today.version !== rules) {
      const now = answer(this.#config.today.decide(manifest, config, this.#check));
      if (!same(now, expected)) this.#upgrades.push({ seq: e.seq, name, family: "config", rules, today: this.#config.today.version, field: "config.verdict", before: expected, after: now });
    }
  }

  /** An installed instance as the operator gathers it (its roles, its parsed grant, when it was installed); null when not installed. */
  #instance(name: string, p: PluginFold): InstanceSecrets | null {
    if (p.spec === null) return null;
    const parsed = parsePlugin({ name, spec: p.spec });
    const grant = p.grant === null ? null : parseGrant({ name, spec: p.grant.spec });
    return {
      name,
      installedSeq: p.installedSeq,
      roles: parsed.ok ? parsed.value.spec.manifest.secrets.map((s) => s.name) : [],
      grant: grant?.ok === true ? grant.value.spec : null,
    };
  }

  #grantVerdict(e: EventOf<"grant.verdict">): void {
    const { name, rules } = e.data;
    this.#count("grant", rules);
    const div = (field: VerdictField, recorded: unknown, expected: unknown): void => { this.#divergences.push({ seq: e.seq, name, family: "grant", rules, field, recorded, expected }); };
    const own = this.#grant.get(rules);
    if (own === undefined) { div("grant.rules", rules, `rules 1 to ${this.#grant.today.version}`); return; }
    const p = this.#plugins.get(name);
    const grantSeq = p?.grant?.seq ?? null;
    if (grantSeq !== e.data.grant) { div("grant.inputs", { grant: e.data.grant }, { grant: grantSeq }); return; }
    const self = p === undefined ? null : this.#instance(name, p);
    const others: InstanceSecrets[] = [];
    if (self !== null) {
      for (const [other, fold] of this.#plugins) {
        if (other === name) continue;
        const o = this.#instance(other, fold);
        if (o !== null) others.push(o);
      }
    }
    const decide = (step: GrantStep): Answer => answer(self === null ? [] : step(self, others));
    const recorded: Answer = { ok: e.data.ok, errors: e.data.errors };
    const expected = decide(own.decide);
    if (!same(recorded, expected)) div("grant.verdict", recorded, expected);
    if (this.#grant.today.version !== rules) {
      const now = decide(this.#grant.today.decide);
      if (!same(now, expected)) this.#upgrades.push({ seq: e.seq, name, family: "grant", rules, today: this.#grant.today.version, field: "grant.verdict", before: expected, after: now });
    }
  }
}

/** Re-decides every verdict in the store up to `toSeq`. */
export async function checkVerdicts(store: EventLog, opts: { toSeq: number; pageSize: number; check: ConfigCheck; rules?: VerdictRulesSet }): Promise<VerdictCheckResult> {
  const checker = new VerdictChecker(opts.check, opts.rules);
  for await (const page of store.pages({ types: VERDICT_CHECK_EVENT_TYPES, toSeq: opts.toSeq, pageSize: opts.pageSize, hashes: false })) for (const e of page) checker.feed(e);
  return checker.result();
}
