/**
 * One plugin as an owner looks at it before deciding: its row of `get plugins`, what its Plugin
 * asks for (image, manifest, config), the grant, the permissions the latest decision runs under,
 * `why` in sentences, the timeline of its events with their causes, and — when its current
 * version waits — exactly what an approval would add and the stream version to send with it
 * (HTTP `If-Match`), read before the facts so that approving against it is never a decision on
 * facts the owner did not see. A version that cannot run whatever is approved (its spec, its
 * signature or its config refused) carries its blockers, and no approval is offered for it.
 */
import { coreStream, pluginStream } from "../events/index.js";
import type { EventLog, KnownEvent } from "../events/index.js";
import { formatHostPort, isEmptyPending, parseGrant, parsePlugin } from "../plugins/index.js";
import type { GrantSpec, JsonValue, Pending, RolloutPlanJSON } from "../plugins/index.js";
import { readySchemaCheck, recentGatewayRecords, summarizeDecisions, why, withSchemaChecks } from "../projections/index.js";
import type { GatewayRecord, HardBlocker, WhyAnswer } from "../projections/index.js";
import { AppError } from "./errors.js";
import { checkLogQuery, eventSentence, eventSentences, pluginVerdicts, unmarkedEventSentence } from "./log.js";
import { grantWithPending, pendingOf } from "./owner-edits.js";
import { listPlugins } from "./plugins.js";
import type { PluginRow, SignatureView } from "./plugins.js";
import { catalogText, describeEvent, describePending, describeRule, pendingItems, removedHeadline, viewDecisionSentences, whySentences } from "./wording.js";
import { currentRemoval } from "./removed.js";
import type { RemovedInstance } from "./removed.js";
import type { NextSteps } from "./wording.js";

/** What a Plugin asks for, as given. */
export interface AskedFor {
  readonly image: string | null;
  readonly manifest: JsonValue | null;
  readonly config: JsonValue | null;
}

/** Permissions as lists of words, for a table: asked for, granted, or run with. */
export interface PermissionLists {
  readonly capabilities: readonly string[];
  /** `host:port`. */
  readonly egress: readonly string[];
  /** Secret names (with their mount path when the manifest gives one). */
  readonly secrets: readonly string[];
  readonly dataTiers: readonly string[];
  /** A view's Kubernetes rules (PolicyRules), as phrases. */
  readonly rules: readonly string[];
}

/** What approving would do, at the version it was read at. */
export interface PendingApproval {
  readonly name: string;
  /** Exactly what the approval adds to the grant. */
  readonly pending: Pending;
  /** The same, as one line. */
  readonly text: string;
  /** The grant as it would be after the approval. */
  readonly grantAfter: GrantSpec;
  /** The plugin stream's version the facts were read at: what an approval expects (`If-Match`). */
  readonly version: number;
  /**
   * What keeps the version from running whatever is approved (spec, signature, config). While it
   * holds any, the approval is not offered: the faces show the blockers first, and `approve` refuses.
   */
  readonly blockers: readonly HardBlocker[];
}

/** One event of a plugin's timeline, worded, with the event that caused it. */
export interface TimelineEntry {
  readonly event: KnownEvent;
  readonly text: string;
  readonly cause: { readonly seq: number; readonly type: string; readonly text: string } | null;
}

/** A plugin's timeline, newest last. */
export interface Timeline {
  readonly entries: readonly TimelineEntry[];
  /** The `afterSeq` of the next page, or null when there is none yet. */
  readonly next: number | null;
}

/** Everything the plugin page shows. */
export interface PluginView {
  readonly name: string;
  /** The plugin stream's version when this was read (the `ETag` / `If-Match` of its approval). */
  readonly version: number;
  readonly row: PluginRow;
  readonly asked: AskedFor | null;
  /** The grant as last set, or null when there is none (or it was deleted). */
  readonly grant: GrantSpec | null;
  /** What the latest decision runs, and under which permissions; null when nothing runs. */
  readonly running: RolloutPlanJSON["run"];
  /** The three sides of least privilege: what the version asked for requests, what the grant gives, what runs. */
  readonly permissions: {
    /** Null when the Plugin's spec is invalid or deleted. */
    readonly asked: PermissionLists | null;
    readonly granted: PermissionLists | null;
    /** Null when nothing runs. */
    readonly effective: PermissionLists | null;
  };
  /** What an approval would add now; null when nothing is pending (or the spec is invalid). */
  readonly pending: PendingApproval | null;
  /** An approval the latest decision has not taken in yet (the rollout is coming), or null. */
  readonly approved: ApprovalInFlight | null;
  /** The latest decision explained, or null when none was decided yet. */
  readonly why: { readonly answer: WhyAnswer; readonly sentences: readonly string[] } | null;
  /** How it was removed, when it is a removed instance now (docs/adr/0195); null while installed. */
  readonly removed: RemovedInstance | null;
  /** The latest events of the plugin's own stream. */
  readonly timeline: Timeline;
}

/** The most timeline entries one read returns. */
export const MAX_TIMELINE = 500;

function rec(v: unknown): Record<string, JsonValue> | null {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, JsonValue>) : null;
}

async function askedFor(store: EventLog, name: string): Promise<AskedFor | null> {
  const last = (await store.read({ stream: pluginStream(name), type: ["plugin.observed", "plugin.deleted"] })).at(-1);
  if (last === undefined || last.type === "plugin.deleted") return null;
  const spec = rec(last.data.spec) ?? {};
  return { image: typeof spec.image === "string" ? spec.image : null, manifest: spec.manifest ?? null, config: spec.config ?? null };
}

function askedPermissions(name: string, asked: AskedFor | null): PermissionLists | null {
  if (asked === null) return null;
  const p = parsePlugin({ name, spec: { image: asked.image, manifest: asked.manifest, ...(asked.config === null ? {} : { config: asked.config }) } });
  if (!p.ok) return null;
  const m = p.value.spec.manifest;
  return { capabilities: [...m.capabilities], egress: m.egress.map(formatHostPort), secrets: m.secrets.map((s) => `${s.name} (at ${s.mountPath})`), dataTiers: [...m.dataTiers], rules: (m.rbac ?? []).map(describeRule) };
}

function grantLists(g: GrantSpec | null): PermissionLists | null {
  return g === null ? null : { capabilities: [...g.capabilities], egress: g.egress.map(formatHostPort), secrets: [...g.secrets], dataTiers: [...g.dataTiers], rules: (g.rbac ?? []).map(describeRule) };
}

function runLists(run: RolloutPlanJSON["run"]): PermissionLists | null {
  if (run === null) return null;
  const p = run.permissions;
  return { capabilities: [...p.capabilities], egress: p.egress.map(formatHostPort), secrets: p.secrets.map((s) => `${s.name} (at ${s.mountPath})`), dataTiers: [...p.dataTiers], rules: (p.rbac ?? []).map(describeRule) };
}

async function grantOf(store: EventLog, name: string): Promise<GrantSpec | null> {
  const last = (await store.read({ stream: pluginStream(name), type: ["grant.observed", "grant.deleted"] })).at(-1);
  if (last === undefined || last.type === "grant.deleted") return null;
  const g = parseGrant({ name, spec: last.data.spec });
  return g.ok ? g.value.spec : null;
}

/**
 * What approving `name` would add now, or null when nothing is pending; `version` pins the facts.
 * With blockers, it says what the version waits for but is not offered (see {@link PendingApproval.blockers}).
 */
export async function pendingApproval(store: EventLog, name: string, version?: number): Promise<PendingApproval | null> {
  try {
    const p = await pendingOf(store, name, version ?? await store.version(pluginStream(name)));
    if (isEmptyPending(p.pending)) return null;
    return { name, pending: p.pending, text: describePending(p.pending), grantAfter: grantWithPending(p.grant, p.pending, name), version: p.version, blockers: p.blockers };
  } catch (err) {
    // A deleted plugin has nothing an approval could add.
    if (err instanceof AppError && err.code === "not_found") return null;
    throw err;
  }
}

/**
 * An approval recorded after the latest decision: that decision waited for an approval, the grant
 * has been set since, and nothing is pending under it any more. The reconciler will decide again
 * (the plan's pending permissions change, so it appends a decision); until it has, the faces say
 * "approved; rolling out" rather than show the old decision's "waits for approval" beside an
 * empty approval box.
 */
export interface ApprovalInFlight {
  /** The grant edit that approved. */
  readonly seq: number;
  readonly actor: string;
  /** Whether the version asked for passed its other checks at the last decision: it will run. */
  readonly rollsOut: boolean;
  /** The image asked for. */
  readonly image: string | null;
}

/** The approval of `name` the latest decision has not taken in yet, or null. */
export async function approvalInFlight(store: EventLog, name: string): Promise<ApprovalInFlight | null> {
  const stream = pluginStream(name);
  const decision = await store.last(stream, "rollout.decided");
  if (decision === null || pendingItems(decision.data.plan.pending).length === 0) return null;
  const grant = await store.last(stream, "grant.observed");
  if (grant === null || grant.seq < decision.seq || (await pendingApproval(store, name)) !== null) return null;
  return { seq: grant.seq, actor: grant.actor, rollsOut: decision.data.inputs.currentDeployable, image: decision.data.inputs.current?.image ?? null };
}

/** Every plugin whose current version waits for the owner and would run once approved, with what approving it would add. */
export async function pendingApprovals(store: EventLog): Promise<PendingApproval[]> {
  const out: PendingApproval[] = [];
  for (const r of await listPlugins(store)) {
    if (r.deleted) continue;
    const a = await pendingApproval(store, r.name);
    if (a !== null && a.blockers.length === 0) out.push(a);
  }
  return out;
}

/** A page of a plugin's events (its own stream and the core's refusals of its calls; with `includeEgress` its egress decisions too), each with its cause. */
export async function pluginTimeline(store: EventLog, name: string, o: { afterSeq?: number; limit?: number; includeEgress?: boolean; latest?: boolean; markRemoved?: boolean } = {}): Promise<Timeline> {
  checkLogQuery(store, { plugin: name });
  const limit = Math.min(o.limit ?? MAX_TIMELINE, MAX_TIMELINE);
  // The core's refusals of its calls (few: a budget bounds them) are part of its story too.
  const streams = [pluginStream(name), coreStream(name), ...(o.includeEgress === true ? [`egress/${name}`] : [])];
  const range = { afterSeq: o.afterSeq ?? 0, ...(o.latest === true ? {} : { limit }) };
  // Its signature verdicts live in the trust stream; they are part of its story all the same.
  const read: KnownEvent[] = [];
  for (const stream of streams) read.push(...(await store.read({ stream, ...range })));
  const all = [...read, ...(await pluginVerdicts(store, name, { afterSeq: range.afterSeq }, o.latest === true ? undefined : limit))].sort((a, b) => a.seq - b.seq);
  const page = o.latest === true ? all.slice(-limit) : all.slice(0, limit);
  const full = o.latest !== true && page.length === limit;
  return { entries: await withCauses(store, page, o.markRemoved ?? true), next: full ? (page.at(-1)?.seq ?? null) : null };
}

/** Each event worded, with the event that caused it (from the page, else read from the log). */
async function withCauses(store: EventLog, page: readonly KnownEvent[], markRemoved: boolean): Promise<TimelineEntry[]> {
  const seen = new Map(page.map((e) => [e.seq, e]));
  const entries: TimelineEntry[] = [];
  const say = markRemoved ? eventSentence : unmarkedEventSentence;
  for (const event of page) {
    const c = event.causedBy === null ? null : (seen.get(event.causedBy) ?? await store.get(event.causedBy));
    entries.push({ event, text: await say(store, event), cause: c === null ? null : { seq: c.seq, type: c.type, text: await say(store, c) } });
  }
  return entries;
}

/** The plugins page: every row, what waits for approval, what cannot run as asked, and when each latest decision was taken. */
export interface PluginsOverview {
  readonly rows: readonly PluginRow[];
  /** The approvals offered: each would let the version asked for run. */
  readonly pending: readonly PendingApproval[];
  /** The plugins whose version asked for cannot run whatever is approved, blockers first. */
  readonly blocked: readonly PluginRow[];
  /** The time of each row's latest decision, by plugin name. */
  readonly decidedAt: ReadonlyMap<string, string>;
  /** The plugins approved since their latest decision, whose rollout is coming, by name. */
  readonly approved: ReadonlyMap<string, ApprovalInFlight>;
}

/** Every plugin at a glance. */
export async function pluginsOverview(store: EventLog): Promise<PluginsOverview> {
  const rows = await listPlugins(store);
  const decidedAt = new Map<string, string>();
  const approved = new Map<string, ApprovalInFlight>();
  for (const r of rows) {
    const time = r.decided === null ? undefined : (await store.get(r.decided.seq))?.time;
    if (time !== undefined) decidedAt.set(r.name, time);
    const a = r.deleted ? null : await approvalInFlight(store, r.name);
    if (a !== null) approved.set(r.name, a);
  }
  const live = rows.filter((r) => !r.deleted);
  const pending: PendingApproval[] = [];
  for (const r of live) {
    if (r.blockers.length > 0) continue;
    const a = await pendingApproval(store, r.name);
    if (a !== null) pending.push(a);
  }
  return {
    rows,
    pending,
    blocked: live.filter((r) => r.blockers.length > 0),
    decidedAt,
    approved,
  };
}

/** `why`'s answer: the latest decision, its sentences, and for a view its recent gateway decisions. */
export interface Explained {
  readonly answer: WhyAnswer;
  /** How it was removed, when it is a removed instance now (docs/adr/0195); null while installed. */
  readonly removed: RemovedInstance | null;
  readonly sentences: string[];
  /** A view's latest gateway decisions (newest first) and their counts; null for a plugin with none. */
  readonly gateway: { readonly summary: ReturnType<typeof summarizeDecisions>; readonly recent: readonly GatewayRecord[] } | null;
}

/**
 * When the plugin is a removed instance now (docs/adr/0195): a sentence saying so, how it went and
 * what went with it; null otherwise.
 */
async function removedOf(store: EventLog, name: string): Promise<{ readonly instance: RemovedInstance; readonly text: string } | null> {
  const r = await currentRemoval(store, name);
  if (r === null) return null;
  if (r.doneSeq === null) return { instance: r, text: removedHeadline(r, null) };
  const [done] = await store.read({ stream: pluginStream(name), type: "plugin.uninstalled", afterSeq: r.doneSeq - 1, limit: 1 });
  return { instance: r, text: removedHeadline(r, done?.type === "plugin.uninstalled" ? done.data : null) };
}

/** `why`: the latest decision of a plugin and its sentences; `not_found` when none was decided yet. */
export async function explain(store: EventLog, name: string, steps?: NextSteps): Promise<Explained> {
  checkLogQuery(store, { plugin: name });
  // The version asked for: its schema, when the log vouches for it, is not checked again (ADR 0186).
  const asked = await store.lookups.lastOf(pluginStream(name), ["plugin.observed"], Number.MAX_SAFE_INTEGER);
  if (asked !== null) await readySchemaCheck(store, name, asked.data.spec);
  return withSchemaChecks(() => explained(store, name, steps));
}

async function explained(store: EventLog, name: string, steps?: NextSteps): Promise<Explained> {
  const answer = await why(store, name);
  const removed = await removedOf(store, name);
  if (answer === null) throw new AppError("not_found", `no decision recorded for ${name}${removed === null ? "" : `; ${removed.text}`}`);
  const recent = await recentGatewayRecords(store, name, 10);
  return {
    answer,
    removed: removed?.instance ?? null,
    sentences: [...(removed === null ? [] : [removed.text]), ...(await whyText(store, answer, steps, (await listPlugins(store)).find((r) => r.name === name)?.signature)), ...viewDecisionSentences(recent)],
    gateway: recent.length === 0 ? null : { summary: summarizeDecisions(recent), recent },
  };
}

/** One plugin for the plugin page; `not_found` when the log has never heard of it. */
export async function pluginView(store: EventLog, name: string, o: { timeline?: number; steps?: NextSteps } = {}): Promise<PluginView> {
  checkLogQuery(store, { plugin: name });
  // The version first: every fact below is read at or after it, so an approval expecting it is safe.
  const version = await store.version(pluginStream(name));
  const row = (await listPlugins(store)).find((r) => r.name === name);
  if (version === 0 || row === undefined) throw new AppError("not_found", `no plugin ${name}: the log has no events about it`);
  const answer = await why(store, name);
  const asked = await askedFor(store, name);
  const grant = await grantOf(store, name);
  const running = answer?.decision.data.plan.run ?? null;
  const removed = await removedOf(store, name);
  return {
    name,
    version,
    row,
    asked,
    grant,
    running,
    permissions: { asked: askedPermissions(name, asked), granted: grantLists(grant), effective: runLists(running) },
    pending: row.deleted ? null : await pendingApproval(store, name, version),
    approved: row.deleted ? null : await approvalInFlight(store, name),
    removed: removed?.instance ?? null,
    why: answer === null ? null : { answer, sentences: [...(removed === null ? [] : [removed.text]), ...await whyText(store, answer, o.steps, row.signature)] },
    // Its page says once, above, that it is a removed instance: the rows need not repeat it.
    timeline: await pluginTimeline(store, name, { latest: true, limit: o.timeline ?? 50, markRemoved: removed === null }),
  };
}

/** `why`'s sentences, each event of its chain worded with what the log knows around it. */
async function whyText(store: EventLog, answer: WhyAnswer, steps: NextSteps | undefined, signature: SignatureView | null | undefined): Promise<string[]> {
  const sentences = await eventSentences(store, answer.chain);
  const lines = whySentences(answer, steps, (e) => sentences.get(e.seq) ?? describeEvent(e));
  const c = signature?.catalog ?? null;
  // The catalog's word on the version asked for: since when it counts as verified, or what does not match.
  if (c === null) return lines;
  const text = catalogText(c);
  return [...lines, c.standing === "verified" ? `${text.charAt(0).toUpperCase()}${text.slice(1)}.` : `The ${text}; so it is not verified.`];
}
