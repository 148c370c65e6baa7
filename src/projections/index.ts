/** Projections, audit queries and the decision check: the public surface. */
export { Projector } from "./projector.js";
export type { ProjectorOptions, CatchUpResult } from "./projector.js";
export { PROJECTIONS, pluginsProjection, verdictsProjection, decisionsProjection, workloadsProjection, allowListsProjection, pendingProjection } from "./projections.js";
export type { Projection, Cell } from "./projection.js";
export * from "./folds.js";
export { timeline, why, stateAt, loadDeciderState, previousVersion } from "./queries.js";
export type { WhyAnswer, ProjectedState, DeciderSources, PreviousVersion } from "./queries.js";
export { decideRollout, rolloutInputsFrom, evolveFacts, emptyFacts, deployedBy, observedVersion } from "./decide-rollout.js";
export type { DeciderState, PluginFacts, RecordedInputs } from "./decide-rollout.js";
export { checkDecisions, DecisionChecker, DECIDER_EVENT_TYPES } from "./check-decisions.js";
export type { CheckResult, Divergence } from "./check-decisions.js";
export { viewPlan, isNothingPending } from "./plan-view.js";
export type { PlanView } from "./plan-view.js";
export { allowListConfigData, entryToHost } from "./allowlists.js";
