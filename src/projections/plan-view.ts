/**
 * Reading a recorded rollout plan (`rolloutPlanToJSON` output) without depending on more of its
 * shape than the projections need: the outcome, the image that runs, and what is pending.
 */
import type { JsonValue } from "../plugins/index.js";

/** The parts of a recorded plan the projections and queries use. */
export interface PlanView {
  readonly outcome: string | null;
  /** The image reference that runs, or null when nothing runs. */
  readonly runImage: string | null;
  /** What waits for approval; null when nothing does. */
  readonly pending: JsonValue | null;
  readonly reasons: readonly JsonValue[];
}

function rec(v: unknown): Record<string, unknown> | null {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

function imageOf(v: unknown): string | null {
  if (typeof v === "string") return v;
  const r = rec(v);
  if (r === null) return null;
  if (typeof r.image === "string") return r.image;
  return imageOf(r.version) ?? imageOf(r.image);
}

/** True when `p` asks for nothing: null, or an object whose lists are all empty. */
export function isNothingPending(p: unknown): boolean {
  if (p === null || p === undefined) return true;
  if (Array.isArray(p)) return p.length === 0;
  const r = rec(p);
  if (r === null) return false;
  return Object.values(r).every((v) => isNothingPending(v));
}

/** Extracts the {@link PlanView} of a recorded plan. */
export function viewPlan(plan: unknown): PlanView {
  const p = rec(plan) ?? {};
  const outcome = typeof p.outcome === "string" ? p.outcome : null;
  const runImage = imageOf(p.run) ?? (typeof p.runImage === "string" ? p.runImage : null);
  const pending = isNothingPending(p.pending) ? null : (p.pending as JsonValue);
  const reasons = Array.isArray(p.reasons) ? (p.reasons as JsonValue[]) : [];
  return { outcome, runImage, pending, reasons };
}
