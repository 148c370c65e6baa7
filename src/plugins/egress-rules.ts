/**
 * The egress decider's rules by version (docs/adr/0150): the allow-list step every egress decision
 * is made with, one pure function per released version. The proxy decides with today's and
 * records its number in each `egress.decision`; the re-decider runs the one a decision names. The
 * address step (the proxy's fixed ranges, `src/egress`) keeps its versions under the same numbers.
 */
import { decideEgress, type AllowLists, type EgressDecision } from "./allowlist.js";
import { rulesRegistry, type RulesRegistry } from "./rules.js";

/** The allow-list step: may `plugin` reach `host:port` under these lists. */
export type EgressListStep = (lists: AllowLists | null, plugin: string, host: string, port: number) => EgressDecision;

/** Every released version of the egress rules' allow-list step; today's is the newest. */
export const EGRESS_RULES: RulesRegistry<EgressListStep> = rulesRegistry<EgressListStep>("egress", [
  { version: 1, change: "the first released rules: a destination is allowed when its plugin's allow-list holds its host and port", decide: decideEgress },
]);
