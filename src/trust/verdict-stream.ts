/** The event type and stream signature verdicts are recorded as (the stream is the events room's). */
export { TRUST_STREAM } from "../events/index.js";
export const VERDICT_EVENT = "signature.verdict";
