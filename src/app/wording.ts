/**
 * The words every face uses: `why`'s codes and facts, the cause chain's events and pending
 * permissions as sentences. The CLI and the console print these, so the two say the same thing,
 * written in one place.
 */
import { decisionOutcome, refusalOutcome } from "../egress/index.js";
import type { KnownEvent } from "../events/index.js";
import { EMPTY_PENDING, formatErrors, formatHostPort } from "../plugins/index.js";
import type { Pending, PolicyRule, PolicyRuleJSON, RolloutReason } from "../plugins/index.js";
import { summarizeDecisions } from "../projections/index.js";
import type { EventOf } from "../events/index.js";
import type { Blocker, WhyAnswer } from "../projections/index.js";
import type { LastCallView, PluginProblem, PluginStatus } from "./plugins.js";

/** A PolicyRule as a phrase: "rule get,list plugins of openfief.io named a,b", "rule get /healthz". */
export function describeRule(r: PolicyRule | PolicyRuleJSON): string {
  const urls = r.nonResourceURLs ?? [];
  const verbs = r.verbs.join(",");
  if (urls.length > 0) return `rule ${verbs} ${urls.join(",")}`;
  const groups = (r.apiGroups ?? []).map((g) => (g === "" ? "core" : g)).join(",");
  const names = r.resourceNames ?? [];
  return `rule ${verbs} ${(r.resources ?? []).join(",")} of ${groups}${names.length === 0 ? "" : ` named ${names.join(",")}`}`;
}

/** What can be pending, from a plan (rules in Kubernetes' JSON) or from the model (rules as values). */
export type PendingLike = Omit<Pending, "rbac"> & { readonly rbac?: readonly (PolicyRule | PolicyRuleJSON)[] };

/** Every pending permission as a phrase (`egress static.nbp.pl:443`), in the grant's order of kinds. */
export function pendingItems(p: PendingLike): string[] {
  return [
    ...p.capabilities.map((c) => `capability ${c}`),
    ...p.egress.map((h) => `egress ${formatHostPort(h)}`),
    ...p.secrets.map((s) => `Secret ${s}`),
    ...p.dataTiers.map((t) => `data tier ${t}`),
    ...(p.rbac ?? []).map(describeRule),
  ];
}

/** One line naming every pending permission ("nothing" when there is none). */
export function describePending(p: PendingLike): string {
  const parts = pendingItems(p);
  return parts.length === 0 ? "nothing" : parts.join(", ");
}

/** A view's recent gateway decisions as lines for `why`: a summary, then one line each, newest first. */
export function viewDecisionSentences(recent: readonly EventOf<"gateway.decision">[]): string[] {
  if (recent.length === 0) return [];
  const s = summarizeDecisions(recent);
  const by = Object.entries(s.deniedBy).map(([gate, n]) => `${n} at ${gate}`).join(", ");
  return [
    `Its view's latest ${recent.length} gateway decisions: ${s.allowed} allowed, ${s.denied} denied${by === "" ? "" : ` (${by})`}:`,
    ...recent.map((e) => `  - ${describeDecision(e)}`),
  ];
}

const REASON_TEXT: Record<RolloutReason, string> = {
  no_current_version: "the Plugin asks for no valid version (deleted, or its spec is invalid)",
  current_not_deployable: "the version asked for did not pass its checks",
  approval_pending: "the version asked for needs permissions the grant does not give",
  no_capability_granted: "the grant approves none of the capabilities the version asks for",
  no_previous_version: "no earlier version was running to keep",
  previous_no_capability_granted: "the grant approves none of the capabilities of the earlier version",
};

/** A rollout reason code as a phrase. */
export function reasonText(r: RolloutReason): string {
  return REASON_TEXT[r] ?? r;
}

/** What kept a version from running, as a phrase. */
export function blockerText(b: Blocker): string {
  switch (b.code) {
    case "plugin_missing": return "no Plugin was observed";
    case "plugin_deleted": return "the Plugin was deleted";
    case "spec_invalid": return `the spec is invalid: ${formatErrors(b.errors)}`;
    case "config_verdict_missing": return `no config verdict for ${b.image}`;
    case "config_mismatch": return `the config does not match the schema: ${b.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`;
    case "signature_verdict_missing": return `no signature verdict for ${b.image}`;
    case "signature_refused": return `the signature check refused ${b.digest}${b.reason === null ? "" : `: ${b.reason}`}`;
  }
}

/** `host:port`, with an IPv6 address in brackets (`[::1]:443`). */
export function hostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

function imageOfSpec(spec: unknown): string {
  return typeof spec === "object" && spec !== null && "image" in spec && typeof spec.image === "string" ? spec.image : "?";
}

/** How each event type reads as a sentence (the compiler checks every type has one). */
const DESCRIBE: { readonly [T in KnownEvent["type"]]: (e: Extract<KnownEvent, { type: T }>) => string } = {
  "plugin.observed": (e) => `the Plugin was applied by ${e.actor}, asking for ${imageOfSpec(e.data.spec)}`,
  "plugin.deleted": (e) => `the Plugin was deleted by ${e.actor}`,
  "grant.observed": (e) => `the grant was set by ${e.actor}`,
  "grant.deleted": (e) => `the grant was deleted by ${e.actor}`,
  "signature.verdict": (e) => `the signature check found ${e.data.digest} ${e.data.outcome}${e.data.reason === undefined ? "" : ` (${e.data.reason})`}`,
  "config.verdict": (e) => `the config ${e.data.ok ? "matched" : "did not match"} the schema of ${e.data.image}`,
  "rollout.decided": (e) => `a rollout decision (${e.data.plan.outcome})`,
  "workload.desired": (e) => (e.data.running ? `the workload of ${e.data.image ?? "?"} was compiled` : "the workload was stopped"),
  "previous.observed": (e) => `the cluster's status named ${e.data.deployed.image} as running`,
  "kube.applied": (e) => `${e.data.records.length} object change(s) were applied to the cluster`,
  "workload.applied": (e) => `the workload was applied to ${e.data.target}${e.data.ok ? "" : ` and failed: ${e.data.error ?? "?"}`}`,
  "reconcile.failed": (e) => `reconciling failed: ${e.data.error}`,
  "egress.decision": (e) => egressDecisionText(e.data),
  "egress.refused": (e) => `${refusalOutcome(e.data.code) === "failed" ? "could not check the identity of" : "refused"} a CONNECT from ${e.data.source}${e.data.host === undefined ? "" : ` to ${hostPort(e.data.host, e.data.port ?? 0)}`} before identity (${e.data.code})${e.data.dropped > 0 ? `; ${e.data.dropped} more from it went unrecorded` : ""}`,
  "module.installed": (e) => `the WebAssembly module ${e.data.digest} (${e.data.size} bytes) was installed by ${e.actor}`,
  "module.uninstalled": (e) => `the WebAssembly module ${e.data.digest} was uninstalled by ${e.actor}`,
  "plugin.call": (e) => `a call of ${e.data.method} failed with ${e.data.code}${e.data.source === "plugin" ? " (reported by the plugin)" : ""}: ${e.data.message}`,
  "plugin.calls": (e) => `${e.data.succeeded} call(s) of ${e.data.runtime === "wasm" ? "module" : "executable"} ${e.data.digest} succeeded between ${e.data.from} and ${e.data.to}`,
  "executable.permitted": (e) => `the unconfined executable ${e.data.executable} (${e.data.digest}) was permitted by ${e.actor}`,
  "gateway.decision": (e) => `the gateway ${e.data.decision === "allow" ? "allowed" : `refused at ${e.data.gate} (${e.data.status ?? "?"})`} ${e.data.user}'s ${e.data.method} ${e.data.path} through ${e.data.installationName}`,
};

/** One sentence about an event, for the cause chain and the log. */
export function describeEvent(e: KnownEvent): string {
  const describe = DESCRIBE[e.type] as ((e: KnownEvent) => string) | undefined;
  return describe === undefined ? e.type : describe(e);
}

/** The first sentence of `why`: what runs, since when. */
function outcomeSentence(a: WhyAnswer): string {
  const at = `event ${a.decision.seq}, ${a.decision.time}`;
  const current = a.inputs.current?.image;
  const previous = a.inputs.previous?.image;
  switch (a.decision.data.plan.outcome) {
    case "current": return `${a.plugin} runs ${current ?? "?"}, the version its Plugin asks for (decided at ${at}).`;
    case "previous":
      // The same image as asked for: what changed is the grant or the config, not the version.
      if (previous !== undefined && previous === current) return `${a.plugin} keeps running ${previous} as it ran before: what the Plugin or its grant now asks for is not applied (decided at ${at}).`;
      return `${a.plugin} keeps running ${previous ?? "?"} under its current grant, instead of ${current ?? "the version asked for"} (decided at ${at}).`;
    case "none": return a.deleted ? `${a.plugin} runs nothing: its Plugin was deleted (decided at ${at}).` : `${a.plugin} runs nothing (decided at ${at}).`;
  }
}

/** The reasons, minus those beside the point: after a deletion, "no earlier version to keep" is true but says nothing. */
function reasonSentences(a: WhyAnswer): string[] {
  return a.decision.data.plan.reasons
    .filter((r) => !(a.deleted && (r === "no_current_version" || r === "no_previous_version")))
    .map((r) => `Because ${reasonText(r)}.`);
}

/** What kept the version asked for from running; an invalid spec names no version, but the owner must still learn what is wrong with it. */
function blockerSentences(a: WhyAnswer): string[] {
  if (a.deployable.ok || a.deleted) return [];
  const current = a.inputs.current?.image ?? "The version asked for";
  return a.deployable.because.map((b) => `${current} could not run: ${blockerText(b)}.`);
}

/** What `why`'s sentences tell an owner to do next, in the words of the face that shows them. */
export interface NextSteps {
  /** How to approve the plugin's pending permissions ("Run `openfief approve x`"). */
  readonly approve: (plugin: string) => string;
  /** How to see which decisions do not reproduce. */
  readonly check: string;
}

/** The CLI's next steps. */
export const CLI_STEPS: NextSteps = { approve: (p) => `Run \`openfief approve ${p}\``, check: "run `openfief check-decisions`" };

const EGRESS_REASON_TEXT: Readonly<Record<string, string>> = {
  listed: "on its allow-list",
  not_listed: "not on its allow-list",
  no_allow_list: "it has no allow-list (nothing of it runs)",
  forbidden_address: "the name resolves to a private or reserved address",
  dns_nxdomain: "no such host",
  dns_servfail: "DNS failed to answer",
  dns_refused: "DNS refused to answer",
  dns_no_addresses: "the name has no addresses",
  dns_timeout: "DNS did not answer in time",
  dns_failed: "the name could not be resolved",
  dial_failed: "the connection failed",
  connect_timeout: "the connection timed out",
};

/** An egress decision's reason code as a phrase (unknown codes as they are). */
export function egressReasonText(reason: string): string {
  return EGRESS_REASON_TEXT[reason] ?? reason.replace(/_/g, " ");
}

/**
 * An egress decision as a sentence that keeps the two ways of not connecting apart: "refused
 * api.nbp.pl:443 by policy: not on its allow-list (not_listed)" when the plugin may not go there,
 * "failed to reach api.nbp.pl:443: no such host (dns_nxdomain)" when it may but could not.
 */
export function egressDecisionText(d: { readonly allowed: boolean; readonly reason: string; readonly host: string; readonly port: number; readonly address?: string }): string {
  const where = hostPort(d.host, d.port);
  switch (decisionOutcome(d)) {
    case "allowed": return `allowed ${where} (${d.reason})${d.address === undefined ? "" : ` via ${d.address}`}`;
    case "refused": return `refused ${where} by policy: ${egressReasonText(d.reason)} (${d.reason})`;
    case "failed": return `failed to reach ${where}: ${egressReasonText(d.reason)} (${d.reason})`;
  }
}

/** `why`'s answer as plain sentences; `steps` words what to do next for the face showing them. */
export function whySentences(a: WhyAnswer, steps: NextSteps = CLI_STEPS): string[] {
  const out = [outcomeSentence(a), ...reasonSentences(a)];
  const pending = a.decision.data.plan.pending;
  const pendingText = describePending(pending);
  if (pendingText !== "nothing") out.push(`Pending approval: ${pendingText}. ${steps.approve(a.plugin)} to grant exactly that.`);
  // A WebAssembly plugin reaches its origins only once each is approved (seed 003's wording).
  if (a.askedWasm) for (const h of pending.egress) out.push(`It waits: origin https://${h.host}${h.port === 443 ? "" : `:${h.port}`} is pending approval.`);
  for (const f of a.failedCalls) out.push(`Its calls ${f.code === "plugin_not_approved" ? "were refused" : "failed"} with ${f.code}${f.source === "plugin" ? " (reported by the plugin)" : ""} ${f.count === 1 ? "once" : `${f.count} times`} in the last hour (last at ${f.last}).`);
  out.push(...blockerSentences(a));
  // A grant has the shape of what can be pending: capabilities, egress, Secret names, data tiers.
  out.push(`The grant approved: ${describePending({ ...EMPTY_PENDING, ...(a.inputs.grant as Partial<PendingLike>) })}.`);
  if (a.chain.length > 0) {
    out.push("It was caused by:");
    for (const e of a.chain) out.push(`  - event ${e.seq} (${e.time}): ${describeEvent(e)}`);
  }
  out.push(a.replays ? "Re-deciding from the log gives the same answer." : `WARNING: re-deciding from the log gives a different answer (${steps.check}).`);
  return out;
}

/** A plugin's status as words. */
export function statusText(s: PluginStatus): string {
  switch (s) {
    case "running": return "running";
    case "held_back": return "held back";
    case "stopped": return "stopped";
    case "deleted": return "deleted";
  }
}

/** What runs a plugin, as a table cell: `container`, `wasm 1750a4f19745`, or `-`. */
export function runtimeText(r: { readonly runtime: "container" | "wasm" | null; readonly module: string | null }): string {
  if (r.runtime === null) return "-";
  return r.runtime === "wasm" ? `wasm ${(r.module ?? "").slice(0, 12)}` : "container";
}

/** A plugin's latest recorded call, as a table cell. */
export function lastCallText(c: LastCallView | null): string {
  if (c === null) return "-";
  const at = c.at.slice(11, 19);
  return c.ok ? `${c.succeeded} ok (until ${at})` : `${c.method}: ${c.code} (${at})`;
}

/** A plugin's problem as a short phrase (a table cell). */
export function problemText(p: PluginProblem): string {
  switch (p.code) {
    case "config_refused": return "config refused by its schema";
    case "signature_refused": return `signature refused${p.reason === null ? "" : ` (${p.reason})`}`;
    case "reconcile_failed": return `reconcile failed: ${p.error}`;
  }
}

/** One line about a decision, for `why`. */
export function describeDecision(e: EventOf<"gateway.decision">): string {
  const d = e.data;
  const a = d.attributes;
  const what = a === null ? `${d.method} ${d.route}${d.path === "" ? "" : ` ${d.path}`}` : a.kind === "resource"
    ? `${a.verb} ${a.resource}${a.subresource === "" ? "" : `/${a.subresource}`}${a.apiGroup === "" ? "" : `.${a.apiGroup}`}${a.name === "" ? "" : ` ${a.name}`}${a.namespace === "" ? "" : ` in ${a.namespace}`}`
    : `${a.verb} ${a.path}`;
  const outcome = d.decision === "allow" ? "allowed" : `denied at ${d.gate} (${d.status ?? "?"}${d.reason === undefined ? "" : `, ${d.reason}`})`;
  return `event ${e.seq} (${e.time}): ${d.user} via ${d.installationName}: ${what}: ${outcome}`;
}
