/** Projections, audit queries and the decision check: the public surface. */
export { Projector } from "./projector.js";
export type { ProjectorOptions, CatchUpResult } from "./projector.js";
export { PROJECTIONS, pluginsProjection, verdictsProjection, decisionsProjection, workloadsProjection, allowListsProjection, pendingProjection } from "./projections.js";
export type { Projection, Cell } from "./projection.js";
export * from "./folds.js";
/** A plugin's events in order. */
export { timeline } from "./timeline.js";
export type { TimelineOptions } from "./timeline.js";
/** `why`: the latest decision in codes and facts (the faces word them). */
export { why } from "./why.js";
export type { FailedCalls, WhyAnswer } from "./why.js";
export { BLOCKER_CODES, isHardBlocker, standingBlockers } from "./blockers.js";
/** What the log already says about a config schema, so a reader need not load its checks (ADR 0186). */
export { readySchemaCheck, recordedConfigVerdict, withSchemaChecks } from "./schema-facts.js";
export type { Blocker, HardBlocker } from "./blockers.js";
/** Replay: the projected state as of a seq or a time. */
export { stateAt } from "./state-at.js";
export type { ProjectedState } from "./state-at.js";
/** The decider's state of a plugin from indexed lookups, and Previous. */
export { grantBefore, loadDeciderState, moduleOfVersion, previousVersion } from "./decider-state.js";
export type { DeciderSources, PreviousVersion } from "./decider-state.js";
export { decideRollout, decideRolloutV1, ROLLOUT_RULES, rolloutInputsFrom, evolveFacts, emptyFacts, deployedBy, observedVersion, recordedManifestDigest, specManifestDigest, verdictOf } from "./decide-rollout.js";
export type { DeciderState, PluginFacts, RecordedInputs, RolloutDecider, RolloutDecision } from "./decide-rollout.js";
export { checkDecisions, DecisionChecker, DECIDER_EVENT_TYPES, recheckRollout } from "./check-decisions.js";
export type { CheckResult, DeciderRules, DecisionFamily, Divergence, FamilyRules, RolloutFindings, UpgradeEffect } from "./check-decisions.js";
/** The egress re-decider (ADR 0032): egress decisions re-run over their recorded inputs. */
export { checkEgress, EgressChecker, EGRESS_CHECK_EVENT_TYPES, type AddressRecheck, type AddressRules, type EgressCheckResult, type EgressDivergence, type EgressUpgrade } from "./check-egress.js";
export { viewPlan, isNothingPending } from "./plan-view.js";
export type { PlanView } from "./plan-view.js";
export { allowListConfigData, entryToHost } from "./allowlists.js";
/** The `openfief-plugin-host` ConfigMap's data: the running WebAssembly plugins (ADR 0080). */
export { pluginHostConfigData } from "./plugin-host.js";
/** A view's recent gateway decisions and their counts by gate. */
export { recentDecisions, recentGatewayRecords, summarizeDecisions } from "./gateway-decisions.js";
export type { DecisionSummary, GatewayRecord } from "./gateway-decisions.js";
/** The egress proxy's decisions counted by second, minute, hour and day as they arrive (ADR 0100). */
export { EgressCounts, egressCounts, countSpans, COUNT_UNITS } from "./egress-counts.js";
export type { EgressCountRow } from "./egress-counts.js";
/** The decision check kept as events arrive (the console's integrity page). */
export { DecisionCheck, decisionCheck, MAX_KEPT } from "./decision-check.js";
export { checkVerdicts, VerdictChecker, VERDICT_CHECK_EVENT_TYPES } from "./check-verdicts.js";
export type { VerdictCheckResult, VerdictDivergence, VerdictField, VerdictRulesSet, VerdictUpgrade } from "./check-verdicts.js";
export type { DecisionCheckState } from "./decision-check.js";
export type { EgressCheckerState, EgressListState } from "./check-egress.js";
