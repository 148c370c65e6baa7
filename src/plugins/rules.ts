/**
 * Rules versions: every decision event records which version of its decider's rules made it, and
 * each released version's decider stays in the code, as a pure function, in a registry per family
 * (rollout, egress). A change to a rule adds a version to its family; it never edits a released
 * one, so a decision is always re-decided under the rules it was made with, and separately under
 * today's (the newest) to show what an upgrade would change (docs/adr/0150).
 */

/** One released version of a family's rules: its number and its decider (a pure function). */
export interface RulesVersion<D> {
  /** 1, 2, …: the version a decision event's `rules` field names. */
  readonly version: number;
  /** What changed in this version, in a sentence (shown by `check-decisions`). */
  readonly change: string;
  readonly decide: D;
}

/** Every released version of one family's rules, oldest first; today's is the newest. */
export interface RulesRegistry<D> {
  /** The decider family (`rollout`, `egress`): what the decision events are of. */
  readonly family: string;
  readonly versions: readonly RulesVersion<D>[];
  /** Today's rules: the newest version, which every new decision is made with. */
  readonly today: RulesVersion<D>;
  /** The version's rules, or undefined when this release does not know it (a newer release's, or a forged number). */
  get(version: number): RulesVersion<D> | undefined;
}

/** The first rules of every family: what every decision recorded before decisions named their rules was made with. */
export const FIRST_RULES = 1;

/**
 * A registry of `versions`, which must be numbered 1, 2, … in order with nothing missing (a
 * version is added, never replaced). Throws on a gap or a duplicate: a programming error.
 */
export function rulesRegistry<D>(family: string, versions: readonly RulesVersion<D>[]): RulesRegistry<D> {
  if (versions.length === 0) throw new Error(`rules of ${family}: no version`);
  versions.forEach((v, i) => {
    if (v.version !== i + FIRST_RULES) throw new Error(`rules of ${family}: version ${v.version} at place ${i + 1} (versions are 1, 2, … in order)`);
  });
  const list = Object.freeze([...versions]);
  const today = list[list.length - 1] as RulesVersion<D>;
  return {
    family,
    versions: list,
    today,
    get: (version) => (Number.isSafeInteger(version) && version >= FIRST_RULES ? list[version - FIRST_RULES] : undefined),
  };
}

/** The same registry with one more version (today's from then on): how a change is made, and how tests try one. */
export function withVersion<D>(registry: RulesRegistry<D>, change: string, decide: D): RulesRegistry<D> {
  return rulesRegistry(registry.family, [...registry.versions, { version: registry.today.version + 1, change, decide }]);
}
