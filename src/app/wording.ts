/**
 * The words every face uses: `why`'s codes and facts, the cause chain's events and pending
 * permissions as sentences, signature verdicts as what they mean, what keeps a version from
 * running, a grant edit as what it changed. The CLI, the console and the API print these, so they
 * say one outcome one way, written in one place; `wording.test.ts` holds a table per family of
 * codes and fails when a code has no words.
 */
import { egressCodeOutcome, egressDecisionOutcome } from "../events/index.js";
import type { KnownEvent } from "../events/index.js";
import { EMPTY_PENDING, formatErrors, formatHostPort, parseGrant } from "../plugins/index.js";
import type { JsonValue, Pending, PolicyRule, PolicyRuleJSON, RolloutReason } from "../plugins/index.js";
import { isHardBlocker, summarizeDecisions, viewPlan } from "../projections/index.js";
import type { EventOf } from "../events/index.js";
import type { Blocker, GatewayRecord, WhyAnswer } from "../projections/index.js";
import type { RefusalReason } from "../trust/index.js";
import { shortImage } from "./plugins.js";
import type { CatalogView } from "./catalog-view.js";
import type { LastCallView, PluginProblem, PluginRow, PluginStatus, SignatureView } from "./plugins.js";

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
export function viewDecisionSentences(recent: readonly GatewayRecord[]): string[] {
  if (recent.length === 0) return [];
  const s = summarizeDecisions(recent);
  const by = Object.entries(s.deniedBy).map(([gate, n]) => `${n} at ${gate}`).join(", ");
  const counted = s.summarised === 0 ? "" : `, ${s.summarised} of them counted in summaries rather than one by one`;
  return [
    `Its view's latest ${recent.length} gateway records: ${s.allowed} allowed, ${s.denied} denied${by === "" ? "" : ` (${by})`}${counted}:`,
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

/** What keeps a version from running, as a phrase ("its signature was refused: it is signed, but by no signer you trust"). */
export function blockerText(b: Blocker): string {
  switch (b.code) {
    case "plugin_missing": return "no Plugin was observed";
    case "plugin_deleted": return "the Plugin was deleted";
    case "spec_invalid": return `its spec is invalid: ${formatErrors(b.errors)}`;
    case "config_verdict_missing": return "its config was not checked yet";
    case "config_mismatch": return `its config does not match its schema: ${b.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`;
    case "signature_verdict_missing": return "its signature was not checked yet";
    case "signature_refused": return b.reason === null ? "its signature was refused" : `its signature was refused: ${refusalText(b.reason)}`;
  }
}

/** The same phrase, for an owner's refused approval. */
export const blockerPhrase = blockerText;

/** What a blocker is about, in one word, for a button or a badge ("signature", "config", "spec"). */
export function blockerSubject(b: Blocker): string {
  switch (b.code) {
    case "spec_invalid": case "plugin_missing": case "plugin_deleted": return "spec";
    case "config_mismatch": case "config_verdict_missing": return "config";
    case "signature_refused": case "signature_verdict_missing": return "signature";
  }
}

const REFUSAL_TEXT: { readonly [R in RefusalReason]: string } = {
  unsigned: "it carries no signature that verifies",
  untrusted_signer: "it is signed, but by no signer you trust",
  manifest_mismatch: "the Plugin's manifest is not the one its image was signed with",
  invalid_type: "what was found for the image could not be read",
  too_large: "the image or its signatures are over their size limits",
  invalid_image_ref: "its image reference is not pinned by a valid digest",
  image_not_found: "the registry has no image with this digest",
  digest_mismatch: "the registry's bytes do not match the digest",
  malformed_image: "the image is malformed",
  auth_failed: "the registry refused the credentials",
  registry_error: "the registry answered with an error",
  verify_error: "its signatures could not be checked",
  unreachable: "the registry could not be reached, and it was never checked",
};

/** A refused verdict's reason as what it means, with the code (`it is signed, but by no signer you trust (untrusted_signer)`). */
export function refusalText(reason: string | null): string {
  if (reason === null) return "refused";
  const text = (REFUSAL_TEXT as Readonly<Record<string, string>>)[reason];
  return text === undefined ? reason.replace(/_/g, " ") : `${text} (${reason})`;
}

/** Who signed, as owners read it: "demo-owner, a signer you trust", "acme, the catalog's publisher", "OpenFief's CI". */
export function signersText(signers: readonly { readonly name: string; readonly kind: string }[]): string {
  if (signers.length === 0) return "nobody you trust";
  const one = (s: { readonly name: string; readonly kind: string }): string =>
    s.kind === "openfief-ci" ? "OpenFief's CI" : s.kind === "publisher" ? `${s.name}, the catalog's publisher` : `${s.name}, a signer you trust`;
  return signers.map(one).join(" and ");
}

/** A verdict as what it means: "signed by demo-owner, a signer you trust; not in the catalog". */
export function verdictText(v: Pick<SignatureView, "outcome" | "reason" | "signers" | "catalog">): string {
  const c = v.catalog ?? null;
  switch (v.outcome) {
    case "verified": return `signed by ${signersText(v.signers)}; in the catalog${c?.standing === "verified" ? ` as ${c.entry}, verified since ${utcTime(c.since)}` : ""}`;
    case "unverified": return `signed by ${signersText(v.signers)}; ${c === null ? "not in the catalog" : catalogText(c)}`;
    case "refused": return `refused: ${refusalText(v.reason)}${c === null || c.standing === "verified" ? "" : `; ${catalogText(c)}`}`;
  }
}

/** An ISO time as people read it: `2026-12-02 11:20:03 UTC`. */
export function utcTime(iso: string): string {
  return iso.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC");
}

/**
 * The catalog's word on an image: "the catalog pins nbp-fx at sha256:… by openfief-release, verified
 * since …", or what does not match: "catalog lists nbp-fx at sha256:… by openfief-release; this
 * image is sha256:…" (`short`: digests cut to 12 hex digits, for a line under a table).
 */
export function catalogText(c: CatalogView, o: { readonly short?: boolean } = {}): string {
  const d = (digest: string): string => (o.short === true ? digest.slice(0, "sha256:".length + 12) : digest);
  switch (c.standing) {
    case "verified": return `the catalog pins ${c.entry} at ${d(c.digest)} by ${c.publisher}, who signed it: verified since ${utcTime(c.since)} (event ${c.sinceEvent})`;
    case "other_digest": return `catalog lists ${c.entry} at ${d(c.listed)} by ${c.publisher}; this image is ${d(c.digest)}`;
    case "other_publisher": return `catalog lists ${c.entry} at ${d(c.digest)} by ${c.publisher}; this image is not signed by ${c.publisher}`;
  }
}

/** A verdict in one word, for a badge or the start of `verify`'s line: `verified` (the catalog), `trusted` (a signer you trust), `refused`. */
export function verdictWord(outcome: SignatureView["outcome"]): string {
  return outcome === "unverified" ? "trusted" : outcome;
}

/** A verdict in a table cell: "catalog (acme)", "signed by demo-owner", "refused: untrusted signer". */
export function verdictCell(v: Pick<SignatureView, "outcome" | "reason" | "signers" | "catalog"> | null): string {
  if (v === null) return "not checked yet";
  const names = v.signers.map((s) => s.name).join(",");
  const publishers = v.signers.filter((s) => s.kind === "publisher").map((s) => s.name).join(",");
  const mismatch = v.catalog === undefined || v.catalog === null || v.catalog.standing === "verified" ? "" : ` (not as the catalog lists ${v.catalog.entry})`;
  switch (v.outcome) {
    case "verified": return `in the catalog (${publishers === "" ? names : publishers})`;
    case "unverified": return `signed by ${names}${mismatch}`;
    case "refused": return `refused: ${(v.reason ?? "refused").replace(/_/g, " ")}${mismatch}`;
  }
}

/** One line of help beside a verdict: what it means for the plugin. */
export function verdictHelp(outcome: SignatureView["outcome"] | null): string {
  switch (outcome) {
    case null: return "The image's signature is checked at the next reconcile; nothing runs before.";
    case "verified": return "A catalog entry pins this image and its publisher signed it: it may run.";
    case "unverified": return "Signed by a signer you trust, so it may run; only the catalog makes an image verified, and none pins this one.";
    case "refused": return "It does not run, whatever the grant approves.";
  }
}

/** `host:port`, with an IPv6 address in brackets (`[::1]:443`). */
export function hostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

function imageOfSpec(spec: unknown): string {
  return typeof spec === "object" && spec !== null && "image" in spec && typeof spec.image === "string" ? spec.image : "?";
}

/** A grant spec as recorded, as the phrases of its permissions (`capability connector`, `egress api.nbp.pl:443`). */
export function grantItems(spec: JsonValue | null): string[] {
  if (spec === null) return [];
  const g = parseGrant({ name: "grant", spec });
  // A grant that does not validate grants nothing the reconciler would use: its items are unknown.
  return g.ok ? pendingItems(g.value.spec) : [];
}

/** What a grant edit changed, per permission: `+egress static.nbp.pl:443`, `−capability view`. */
export function grantChange(before: JsonValue | null, after: JsonValue | null): string[] {
  const was = grantItems(before);
  const now = grantItems(after);
  const had = new Set(was);
  const has = new Set(now);
  return [...now.filter((i) => !had.has(i)).map((i) => `+${i}`), ...was.filter((i) => !has.has(i)).map((i) => `−${i}`)];
}

/** The cluster's resources a purge deleted, as a clause (empty where the log held them). */
function clusterResourcesText(resources: readonly { readonly kind: string; readonly outcome: string }[]): string {
  const removed = resources.filter((r) => r.outcome === "removed").map((r) => r.kind);
  const absent = resources.filter((r) => r.outcome === "absent").map((r) => r.kind);
  return `${removed.length === 0 ? "" : `; deleted its ${removed.join(" and ")} from the cluster`}${absent.length === 0 ? "" : `; its ${absent.join(" and ")} already gone from the cluster`}`;
}

/** What an uninstall removes, in words: `its objects, its grant, Secret a, Secret b`. */
export function removalText(r: { readonly grant: boolean; readonly secrets: readonly string[]; readonly module: string | null }): string {
  const parts = ["its objects and allow-list entry", ...(r.grant ? ["its grant"] : []), ...r.secrets.map((n) => `Secret ${n}`), ...(r.module === null ? [] : [`module ${r.module.slice(0, 12)}`])];
  return parts.join(", ");
}

/** A removal as {@link removedInstanceText} words it. */
export interface RemovalWords {
  readonly name: string;
  readonly how: "deleted" | "uninstalled";
  readonly seq: number;
  readonly at: string;
}

/**
 * What came from a removed instance, one way on every face (docs/adr/0195):
 * "from removed instance ecb-fx (removed at 2026-12-02 17:15:45 UTC, event 40, uninstalled)".
 */
export function removedInstanceText(r: RemovalWords): string {
  return `from removed instance ${r.name} (removed at ${utcTime(r.at)}, event ${r.seq}, ${r.how === "uninstalled" ? "uninstalled" : "its Plugin deleted"})`;
}

/**
 * The first line of `why` (and the console's plugin page) for a removed instance: how it went and
 * what went with it; `removed` is what the uninstall removed once carried out (null: not yet, or a deletion).
 */
export function removedHeadline(r: RemovalWords, removed: { readonly grant: boolean; readonly secrets: readonly string[]; readonly module: string | null } | null): string {
  const how = r.how === "deleted"
    ? `its Plugin was deleted at ${utcTime(r.at)} (event ${r.seq}); nothing else was removed (its grant and Secrets go only when it is uninstalled), and applying it again brings it back`
    : removed === null
      ? `its uninstall was asked for at ${utcTime(r.at)} (event ${r.seq}) and is not finished yet`
      : `it was uninstalled at ${utcTime(r.at)} (event ${r.seq}), removing ${removalText(removed)}`;
  return `${r.name} is a removed instance: ${how}. Its decisions and deliveries stay in the log, shown as from a removed instance.`;
}

/** What else a sentence about an event needs to know: for a grant event, the grant before it (null: none). */
export interface EventContext {
  readonly grantBefore?: JsonValue | null;
}

function grantSentence(verb: string, actor: string, before: JsonValue | null | undefined, after: JsonValue | null): string {
  // Without the grant before, the whole grant is what it sets.
  const change = before === undefined ? grantItems(after).map((i) => `+${i}`) : grantChange(before, after);
  if (change.length === 0) return `the grant was ${verb} by ${actor}, changing no permission`;
  return `the grant was ${verb} by ${actor}: ${change.join(", ")}`;
}

/** What keeps the version asked for waiting, when a decision runs another one (or none); null when nothing does. */
function waitsText(e: EventOf<"rollout.decided">, reasons: readonly RolloutReason[]): string | null {
  const { inputs, plan } = e.data;
  const current = inputs.current?.image ?? null;
  if (current === null) return null;
  if (!inputs.currentDeployable) return `${current} cannot run: it did not pass its signature or config check`;
  const pending = describePending(plan.pending);
  if (pending !== "nothing") return `${current} waits for approval of ${pending}`;
  return reasons.includes("no_capability_granted") ? `${current} cannot run: ${reasonText("no_capability_granted")}` : null;
}

/** What a recorded rollout decision did, in the owner's words. */
function decisionSentence(e: EventOf<"rollout.decided">): string {
  const view = viewPlan(e.data.plan);
  const current = e.data.inputs.current?.image ?? null;
  const reasons = view.reasons.filter((r): r is RolloutReason => typeof r === "string" && r in REASON_TEXT);
  const waits = waitsText(e, reasons);
  const then = waits === null ? "" : `; ${waits}`;
  const runs = view.runImage ?? "?";
  switch (view.outcome) {
    case "current": return `runs ${runs}, the version asked for`;
    case "previous": return `${runs === current ? `keeps ${runs} running as it ran before` : `keeps ${runs} running under the current grant`}${then}`;
    case "none":
      if (current === null) return `runs nothing: ${reasonText("no_current_version")}`;
      return waits === null ? `runs nothing: ${reasons.map(reasonText).join("; ") || "nothing may run"}` : `runs nothing${then}`;
    default: return `a rollout decision (${view.outcome ?? "?"})`;
  }
}

/** How each event type reads as a sentence (the compiler checks every type has one). */
const DESCRIBE: { readonly [T in KnownEvent["type"]]: (e: Extract<KnownEvent, { type: T }>, ctx: EventContext) => string } = {
  "plugin.observed": (e) => `the Plugin was applied by ${e.actor}, asking for ${imageOfSpec(e.data.spec)}`,
  "plugin.deleted": (e) => `the Plugin was deleted by ${e.actor}`,
  "grant.observed": (e, ctx) => grantSentence("set", e.actor, ctx.grantBefore, e.data.spec),
  "grant.deleted": (e, ctx) => grantSentence("deleted", e.actor, ctx.grantBefore ?? null, null),
  "signature.verdict": (e) => `the signature check of ${e.data.image}: ${verdictText({ outcome: e.data.outcome, reason: e.data.reason ?? null, signers: e.data.signers })}`,
  "grant.verdict": (e) => (e.data.ok ? `the grant of event ${e.data.grant} mounts only this instance's own Secrets` : `the grant of event ${e.data.grant} was refused, so it approves nothing: ${e.data.errors.map((x) => `${x.path}: ${x.message}`).join("; ")}`),
  "plugin.uninstall.requested": (e) => `${e.actor} asked to uninstall the plugin and remove ${removalText(e.data)}`,
  "plugin.uninstalled": (e) => `the plugin was uninstalled: removed ${removalText({ grant: e.data.grant, secrets: e.data.secrets, module: e.data.module })}${e.data.absent.length === 0 ? "" : `; ${e.data.absent.map((n) => `Secret ${n}`).join(", ")} already gone`}${clusterResourcesText(e.data.resources)}`,
  "catalog.observed": (e) => catalogObservedText(e.data.sha256, e.data.entries),
  "config.verdict": (e) => (e.data.ok ? `the config matches the schema of ${e.data.image}` : `the config does not match the schema of ${e.data.image}: ${e.data.errors.map((x) => `${x.path}: ${x.message}`).join("; ")}`),
  "rollout.decided": (e) => decisionSentence(e),
  "workload.desired": (e) => (e.data.running ? `the workload of ${e.data.image ?? "?"} was compiled` : "the workload was stopped"),
  "previous.observed": (e) => `the cluster's status named ${e.data.deployed.image} as running`,
  "kube.applied": (e) => `${e.data.records.length} object change(s) were applied to the cluster`,
  "workload.applied": (e) => `the workload was applied to ${embeddedFolder(e.data.target) ?? e.data.target}${embeddedFolder(e.data.target) === null ? "" : " (its objects only: no container runtime in the embedded mode)"}${e.data.ok ? "" : ` and failed: ${e.data.error ?? "?"}`}`,
  "reconcile.failed": (e) => `reconciling failed: ${e.data.error}`,
  "egress.decision": (e) => egressDecisionText(e.data),
  "egress.refused": (e) => `${egressCodeOutcome(e.data.code) === "failed" ? "could not check the identity of" : "refused"} a CONNECT from ${e.data.source}${e.data.host === undefined ? "" : ` to ${hostPort(e.data.host, e.data.port ?? 0)}`} before identity (${e.data.code})${e.data.dropped > 0 ? `; ${e.data.dropped} more from it went unrecorded` : ""}`,
  "module.installed": (e) => `the WebAssembly module ${e.data.digest} (${e.data.size} bytes) was installed by ${e.actor}`,
  "module.uninstalled": (e) => `the WebAssembly module ${e.data.digest} was uninstalled by ${e.actor}`,
  "plugin.call": (e) => `a call of ${e.data.method} failed with ${e.data.code}${e.data.source === "plugin" ? " (reported by the plugin)" : ""}: ${e.data.message}`,
  "plugin.calls": (e) => `${e.data.succeeded} call(s) of ${e.data.runtime === "wasm" ? "module" : "executable"} ${e.data.digest} succeeded between ${e.data.from} and ${e.data.to}`,
  "executable.permitted": (e) => `the unconfined executable ${e.data.executable} (${e.data.digest}) was permitted by ${e.actor}`,
  "gateway.decision": (e) => `the gateway ${e.data.decision === "allow" ? "allowed" : `refused at ${e.data.gate} (${e.data.status ?? "?"})`} ${e.data.user}'s ${e.data.method} ${e.data.path} through ${e.data.installationName}`,
  "gateway.refusals": (e) => `the gateway refused ${refusalCount(e.data.count, "more request")} of ${e.data.user}'s through ${e.data.installationName} at ${e.data.gate} (${e.data.status}, ${e.data.reason}) ${between(e.data.first, e.data.last)}, counted rather than recorded one by one`,
  "log.checkpoint": (e) => `the log signed a checkpoint of its first ${e.data.size} event${e.data.size === 1 ? "" : "s"} as ${e.data.origin} (root ${e.data.root})`,
  "egress.refusals": (e) => `refused ${refusalCount(e.data.count, "more CONNECT")} from ${e.data.source} before identity (${e.data.code}) ${between(e.data.first, e.data.last)}, counted rather than recorded one by one`,
  "sync.started": (e) => `the scheduler called Sync for batch ${e.data.batchId}${e.data.attempt === 1 ? "" : ` again (attempt ${e.data.attempt})`}${e.data.watermark ? ", after the last delivery's watermark" : ", from the start"}`,
  "sync.delivered": (e) => `the delivery of batch ${e.data.batchId} was kept (${deliveryText(e.data.counts)})${e.data.fresh ? "" : ", as stored before a restart: nothing counted twice"}`,
  "sync.failed": (e) => `Sync of batch ${e.data.batchId} failed (attempt ${e.data.attempt}) with ${e.data.code}${e.data.retryAt === undefined ? "; the batch was given up" : `; retried at ${e.data.retryAt}`}`,
  "import.delivered": (e) => `${e.data.fileName} (${e.data.size} bytes) was imported by ${e.actor} as batch ${e.data.batchId} (${deliveryText(e.data.counts)})`,
  "core.refused": (e) => `the core refused ${e.data.plugin === undefined ? "a plugin's" : `${e.data.plugin}'s`} call ${e.data.call} from ${e.data.source} (${e.data.code}${e.data.capability === undefined ? "" : `: it does not hold ${e.data.capability}`})`,
  "core.refusals": (e) => `the core refused ${refusalCount(e.data.count, "more call")} ${e.data.call} ${e.data.plugin === undefined ? `from ${e.data.source} before identity` : `by ${e.data.plugin}`} (${e.data.code}) ${between(e.data.first, e.data.last)}, counted rather than recorded one by one`,
};

/** A delivery's counts in words: "3 FX rates, 1 transaction", or "nothing new". */
function deliveryText(c: { transactions: number; fxRates: number; prices: number; balanceAssertions: number; indexReadings: number; problems: number }): string {
  const parts: [number, string][] = [[c.transactions, "transaction"], [c.fxRates, "FX rate"], [c.prices, "price"], [c.balanceAssertions, "balance"], [c.indexReadings, "index reading"], [c.problems, "problem"]];
  const said = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}${n === 1 ? "" : "s"}`);
  return said.length === 0 ? "nothing new" : said.join(", ");
}

/** A recorded catalog in a sentence: "the catalog 3f2a…c0de was observed, pinning ecb-fx, ledger-view and nbp-fx". */
export function catalogObservedText(sha256: string, entries: readonly JsonValue[]): string {
  const names = entries.flatMap((e) => (typeof e === "object" && e !== null && !Array.isArray(e) && typeof e["name"] === "string" ? [e["name"]] : [])).sort();
  const pinned = names.length === 0 ? "pinning no plugin" : `pinning ${names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`}`;
  return `the catalog ${sha256.slice(0, 12)} was observed, ${pinned}`;
}

function refusalCount(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

function between(first: string, last: string): string {
  return first === last ? `at ${first}` : `between ${first} and ${last}`;
}

/** The event types that have a sentence: every type of the catalog (a test holds the two together). */
export const DESCRIBED_TYPES: readonly string[] = Object.keys(DESCRIBE);

/**
 * One sentence about an event, for the cause chain and the log. A grant event says what it
 * changed when `ctx` gives the grant before it (`eventSentence` in `log.ts` looks it up).
 */
export function describeEvent(e: KnownEvent, ctx: EventContext = {}): string {
  const describe = DESCRIBE[e.type] as ((e: KnownEvent, ctx: EventContext) => string) | undefined;
  return describe === undefined ? e.type : describe(e, ctx);
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

/**
 * The reasons, minus those beside the point: after a deletion, "no earlier version to keep" is
 * true but says nothing; once the blockers are named, "did not pass its checks" repeats them.
 */
function reasonSentences(a: WhyAnswer, blocked: boolean): string[] {
  const named = blockerSentences(a).length > 0;
  return a.decision.data.plan.reasons
    .filter((r) => !(a.deleted && (r === "no_current_version" || r === "no_previous_version")))
    .filter((r) => !(named && r === "current_not_deployable"))
    // While no approval can make it run, what is pending is said once, without a nudge.
    .filter((r) => !(blocked && r === "approval_pending"))
    .map((r) => `Because ${reasonText(r)}.`);
}

/** What kept the version asked for from running; an invalid spec names no version, but the owner must still learn what is wrong with it. */
function blockerSentences(a: WhyAnswer): string[] {
  if (a.deployable.ok || a.deleted) return [];
  const current = a.inputs.current?.image ?? "The version asked for";
  return a.deployable.because.map((b) => `${current} cannot run: ${blockerText(b)}.`);
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
  switch (egressDecisionOutcome(d)) {
    case "allowed": return `allowed ${where} (${d.reason})${d.address === undefined ? "" : ` via ${d.address}`}`;
    case "refused": return `refused ${where} by policy: ${egressReasonText(d.reason)} (${d.reason})`;
    case "failed": return `failed to reach ${where}: ${egressReasonText(d.reason)} (${d.reason})`;
  }
}

/**
 * `why`'s answer as plain sentences; `steps` words what to do next for the face showing them,
 * `describe` the events of the cause chain (a grant edit as what it changed, given the log).
 * What keeps the version asked for from running comes first, right after what runs; while that
 * is something no approval lifts, no approval is suggested.
 */
export function whySentences(a: WhyAnswer, steps: NextSteps = CLI_STEPS, describe: (e: KnownEvent) => string = describeEvent): string[] {
  const blocked = !a.deleted && !a.deployable.ok && a.deployable.because.some(isHardBlocker);
  const out = [outcomeSentence(a), ...blockerSentences(a), ...reasonSentences(a, blocked), ...pendingSentences(a, steps, blocked)];
  for (const f of a.failedCalls) out.push(`Its calls ${f.code === "plugin_not_approved" ? "were refused" : "failed"} with ${f.code}${f.source === "plugin" ? " (reported by the plugin)" : ""} ${f.count === 1 ? "once" : `${f.count} times`} in the last hour (last at ${f.last}${f.by.length === 0 ? "" : `, recorded by ${f.by.join(", ")}`}).`);
  for (const e of a.egress) out.push(`Its latest egress decision by ${e.actor}: ${egressDecisionText(e.data)} (event ${e.seq}, ${e.time}).`);
  // A grant has the shape of what can be pending: capabilities, egress, Secret names, data tiers.
  out.push(`The grant approved: ${describePending({ ...EMPTY_PENDING, ...(a.inputs.grant as Partial<PendingLike>) })}.`);
  if (a.chain.length > 0) {
    out.push("It was caused by:");
    for (const e of a.chain) out.push(`  - event ${e.seq} (${e.time}): ${describe(e)}`);
  }
  out.push(a.replays ? "Re-deciding from the log gives the same answer." : `WARNING: re-deciding from the log gives a different answer (${steps.check}).`);
  return out;
}

/** What waits for approval, and what to do about it — nothing to approve while the version cannot run whatever is approved. */
function pendingSentences(a: WhyAnswer, steps: NextSteps, blocked: boolean): string[] {
  const pending = a.decision.data.plan.pending;
  const text = describePending(pending);
  if (text === "nothing") return [];
  if (blocked) return [`It also asks for ${text} beyond its grant; approving that would not make it run, so no approval is offered until what keeps it from running is fixed.`];
  // A WebAssembly plugin reaches its origins only once each is approved (seed 003's wording).
  const origins = a.askedWasm ? pending.egress.map((h) => `It waits: origin https://${h.host}${h.port === 443 ? "" : `:${h.port}`} is pending approval.`) : [];
  return [`Pending approval: ${text}. ${steps.approve(a.plugin)} to grant exactly that.`, ...origins];
}

/**
 * What a rollout decision's outcome means, in one phrase: the console's tables, `replay` and the
 * demo's view (ledger-view's own copy, held equal to this one by a test) say it so.
 */
export const OUTCOME_TEXT: { readonly [O in "current" | "previous" | "none"]: string } = {
  current: "runs the current version",
  previous: "runs the previous version (the new one waits)",
  none: "runs nothing",
};

/** A recorded outcome as its phrase ("not decided yet" for none). */
export function outcomeText(outcome: string | null): string {
  return outcome === null ? "not decided yet" : ((OUTCOME_TEXT as Readonly<Record<string, string>>)[outcome] ?? outcome);
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
export function runtimeText(r: Pick<PluginRow, "runtime" | "module" | "target">): string {
  if (r.runtime === null) return "-";
  if (r.runtime === "wasm") return `wasm ${(r.module ?? "").slice(0, 12)}`;
  return embeddedFolder(r.target) === null ? "container" : "objects only";
}

/** The folder of a directory target (`directory:<folder>`, the embedded mode), or null for a cluster. */
export function embeddedFolder(target: string | null): string | null {
  return target !== null && target.startsWith("directory:") ? target.slice("directory:".length) : null;
}

/**
 * How a container plugin that "runs" runs, as a phrase: in a cluster, as a container; in the
 * embedded mode nothing runs it, and saying so keeps the demo honest.
 */
export function containerText(target: string | null): string {
  const folder = embeddedFolder(target);
  return folder === null ? "as a container" : `objects written to ${folder} (no container runtime in the embedded mode)`;
}

/** Why `call` does not reach a container plugin: the plugin host runs only WebAssembly, and the embedded mode runs no container. */
export function containerCallRefusal(name: string, target: string | null): string {
  return embeddedFolder(target) === null
    ? `${name} runs as a container, not in the plugin host: call it through its own service`
    : `${name} is a container plugin, not one the plugin host runs, and nothing runs it here: its ${containerText(target)}`;
}

/** The one line under a table whose rows say "objects only", or null when none does. */
export function objectsOnlyNote(rows: readonly Pick<PluginRow, "runtime" | "module" | "target">[]): string | null {
  const folder = rows.map((r) => (r.runtime === "container" ? embeddedFolder(r.target) : null)).find((f) => f !== null);
  return folder === undefined || folder === null ? null : `RUNTIME "objects only": ${containerText(`directory:${folder}`)}.`;
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
    case "spec_invalid": return "spec invalid";
    case "config_refused": return "config refused by its schema";
    case "signature_refused": return `signature refused${p.reason === null ? "" : ` (${p.reason})`}`;
    case "reconcile_failed": return `reconcile failed: ${p.error}`;
  }
}

/** One line about a decision or a summary of refusals, for `why`. */
export function describeDecision(e: GatewayRecord): string {
  if (e.type === "gateway.refusals") {
    const r = e.data;
    return `event ${e.seq} (${e.time}): ${r.user} via ${r.installationName}: ${refusalCount(r.count, "more request")} denied at ${r.gate} (${r.status}, ${r.reason}) ${between(r.first, r.last)}, counted rather than recorded one by one (requests ${r.firstRequestId} to ${r.lastRequestId})`;
  }
  const d = e.data;
  const a = d.attributes;
  const what = a === null ? `${d.method} ${d.route}${d.path === "" ? "" : ` ${d.path}`}` : a.kind === "resource"
    ? `${a.verb} ${a.resource}${a.subresource === "" ? "" : `/${a.subresource}`}${a.apiGroup === "" ? "" : `.${a.apiGroup}`}${a.name === "" ? "" : ` ${a.name}`}${a.namespace === "" ? "" : ` in ${a.namespace}`}`
    : `${a.verb} ${a.path}`;
  const outcome = d.decision === "allow" ? "allowed" : `denied at ${d.gate} (${d.status ?? "?"}${d.reason === undefined ? "" : `, ${d.reason}`})`;
  return `event ${e.seq} (${e.time}): ${d.user} via ${d.installationName}: ${what}: ${outcome}`;
}

const DIGEST = "sha256:";
const HEX64 = /^[0-9a-f]{64}$/;

/** Whether a character can be part of an image reference's repository (`registry:5000/org/name`). */
function inReference(c: string | undefined): boolean {
  return c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c === "." || c === "-" || c === "_" || c === "/" || c === ":");
}

/**
 * A sentence for a terminal: every image reference shortened as `get plugins` shows it
 * (`nbp-fx@sha256:32a155bf1326`), every other digest to 12 hex and `…`. The console shortens the
 * same sentences with the full value on hover. Scans with `indexOf`, never a backtracking regex.
 */
export function shortRefs(text: string): string {
  let out = "";
  let from = 0;
  for (let at = text.indexOf(DIGEST, from); at >= 0; at = text.indexOf(DIGEST, from)) {
    const end = at + DIGEST.length + 64;
    if (!HEX64.test(text.slice(at + DIGEST.length, end))) {
      out += text.slice(from, at + DIGEST.length);
      from = at + DIGEST.length;
      continue;
    }
    let start = at;
    if (text[at - 1] === "@") {
      start = at - 1;
      while (start > from && inReference(text[start - 1])) start -= 1;
    }
    out += text.slice(from, start) + (start === at ? `${text.slice(at, at + DIGEST.length + 12)}…` : shortImage(text.slice(start, end)));
    from = end;
  }
  return out + text.slice(from);
}
