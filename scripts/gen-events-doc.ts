/**
 * Writes docs/events.md from the event catalog itself: every event type the store accepts, its
 * current version and the older versions it still reads, its stream, each field of its data with
 * its JSON type and meaning, and what causes it. Types, versions, streams and fields come from the
 * definitions the store validates with (src/events/catalog/*.ts); what causes each event and what
 * each field means from {@link CAUSES} and {@link FIELDS} below, in the words of a user's page.
 * test/docs/events-doc.test.ts fails when the page is stale, and this script when an event type
 * or a field has no words here.
 *
 *   npm run docs:events
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineEgressEvents } from "../src/events/catalog/egress-events.js";
import { defineGatewayEvents } from "../src/events/catalog/gateway-events.js";
import { defineHostEvents } from "../src/events/catalog/host-events.js";
import { defineLogEvents } from "../src/events/catalog/log-events.js";
import { definePluginEvents } from "../src/events/catalog/plugin-events.js";
import { defineSyncEvents } from "../src/events/catalog/sync-events.js";
import { defineCoreEvents } from "../src/events/catalog/core-events.js";
import { EventRegistry } from "../src/events/registry.js";
import type { EventDefinition, EventType } from "../src/events/registry.js";

export const OUTPUT = fileURLToPath(new URL("../docs/events.md", import.meta.url));

/** The areas of the catalog, each a module of `src/events/catalog/`, in the order the page shows them. */
const AREAS: readonly { title: string; define: (r: EventRegistry) => void; about: string }[] = [
  {
    title: "A plugin's life",
    define: definePluginEvents,
    about: "What the owner and the cluster said, the facts recorded about an image and a config, and the reconciler's decisions and their results.",
  },
  {
    title: "Egress",
    define: defineEgressEvents,
    about: "The egress proxy's decisions: one per CONNECT from an identified plugin, and the refusals before a plugin is identified.",
  },
  {
    title: "The plugin host",
    define: defineHostEvents,
    about: "WebAssembly modules stored and removed, unconfined executables permitted, and the calls of plugin code: each failure, and the successes counted.",
  },
  {
    title: "Views",
    define: defineGatewayEvents,
    about: "The gateway's decision on every request a view makes with a valid PluginToken.",
  },
  {
    title: "Connector syncs and imports",
    define: defineSyncEvents,
    about: "The core calling a connector's `Sync` on its schedule: each attempt of a batch, the recorded delivery (its digest and counts, never its contents) and each failure with when it is retried; and files imported through `ImportFile`.",
  },
  {
    title: "Plugins calling the core",
    define: defineCoreEvents,
    about: "Calls of the core API (`/core/v1/…`) that a plugin made with its `openfief-core` token and the core refused: each with its stable code, never the token, in `core/<instance>` once the token named one, else in `core/-`; past a budget, counted into a summary.",
  },
  {
    title: "The verifiable log",
    define: defineLogEvents,
    about: "The signed checkpoints of the Merkle tree over the log: each is served at `/tlog/checkpoint` and recorded here as an event of the log itself.",
  },
];

/** What causes each event: who appends it, and when. Every type of the catalog must have one. */
export const CAUSES: Readonly<Record<string, string>> = {
  "log.checkpoint":
    "The control plane signed a checkpoint of the Merkle tree over the log with the log's key: every N events and every T seconds while new events came (`openfief up --checkpoint-every`, `--checkpoint-interval`), at most one per size. A log whose only new event is its last checkpoint's record writes no new one.",
  "plugin.observed":
    "A Plugin resource was applied or changed: `openfief apply` (actor `owner:cli`), the console or the API (`owner:web:<user>`), `openfief up --demo`, or in a cluster the operator seeing the resource (`cluster`). An observation equal to the latest one is not appended again.",
  "plugin.deleted": "The Plugin was deleted: `openfief delete plugin NAME`, or the operator seeing the resource gone.",
  "grant.observed":
    "A PluginGrant was applied or changed: `openfief apply`, `openfief approve` and the console's Approve button (which add exactly what is pending), or the operator seeing the resource.",
  "grant.deleted": "The PluginGrant was deleted: `openfief delete grant NAME`, or the operator seeing the resource gone.",
  "signature.verdict":
    "The reconciler checked an image's signatures against the trusted signers and its signed label against the Plugin's manifest, for a digest and manifest it had no verdict for. Stream `trust`: a verdict is about an image, whichever plugin asked.",
  "grant.verdict": "The reconciler judged a plugin's grant against the other installed instances: refused when it maps a Secret that is another instance's, accepted again once it no longer does (recorded when the verdict changes).",
  "plugin.uninstall.requested": "The owner asked to uninstall a plugin and leave nothing behind: `openfief delete plugin NAME --purge`, or the console's Uninstall button. Appended in one batch with the plugin's and the grant's deletion.",
  "plugin.uninstalled": "A purge was carried out: by the same command, or by the reconciler (`reconcile`, `up`, the operator) finishing an intent a crash interrupted. Once per intent.",
  "catalog.observed":
    "The control plane started with a catalog whose SHA-256 differs from the last one recorded (or none was). Stream `trust`. From this event on, its entries count as verified; each signature verdict names the catalog event it was decided with.",
  "config.verdict": "The reconciler checked a plugin's config against the config schema of the image asked for (the config or the schema changed).",
  "rollout.decided":
    "The reconciler decided which version runs, whenever one of the decision's inputs changed: the Plugin, its grant, a verdict, the version running. Its `causedBy` names the event that triggered it, and `openfief check-decisions` re-decides it from the recorded inputs.",
  "workload.desired": "The reconciler compiled what runs into its objects and egress allow-list (or, with `running: false`, that nothing runs), after a decision that changed them.",
  "workload.applied": "The target (the directory target of `openfief up`, or Kubernetes) applied a desired workload, or failed to.",
  "previous.observed":
    "The operator found a Plugin whose status says a version runs that the log does not know (a new log beside a running cluster): it records that version so that the next decision can keep it.",
  "kube.applied": "The operator applied or pruned Kubernetes objects for a plugin in one pass: one record per object, each with its field manager.",
  "reconcile.failed": "A plugin's pass failed unexpectedly; the other plugins' passes go on. A later decision or apply in the stream ends the run of a repeated failure.",
  "egress.decision": "The egress proxy allowed or denied a CONNECT from an identified plugin, after checking its allow-list and every address the name resolved to. Committed before the tunnel carries a byte.",
  "egress.refused": "The egress proxy refused a CONNECT before it knew the plugin (no token, a bad token, a failed review, a malformed target). Rate-limited per source address.",
  "module.installed": "The plugin host checked a WebAssembly module (its imports, limits and ABI) and stored it by digest, because a running plugin's image carries it.",
  "module.uninstalled": "The plugin host removed a stored module that no running plugin uses any more.",
  "plugin.call": "A call of a plugin's code failed or was refused, with the host's code or one the plugin reported itself. Successful calls are counted instead (`plugin.calls`).",
  "plugin.calls": "The plugin host counted the successful calls of a plugin's code over a window of time.",
  "executable.permitted": "An owner permitted an unconfined executable by name and digest (only where the deployment enables the unconfined tier).",
  "gateway.refusals": "The gateway refused more requests of one kind from one user through one installation than its budget records one by one within a window: the rest are counted, and this summary says how many, the gate and reason, and the first and last time and request ID. Allowed requests are never summarised.",
  "egress.refusals": "The egress proxy refused more CONNECTs before identity (bad heads, missing or malformed credentials) from one source than its budget records one by one within a window: this summary counts the rest, with the first and last time.",
  "sync.started": "The scheduler of `openfief up` called a running connector's `Sync`: the first attempt of a batch when its schedule (`spec.sync`) came due, or a retry of the same batch (the same batch ID) after a failure that may be retried or a restart that found the batch unfinished.",
  "sync.delivered": "The batch's delivery was stored in the deliveries store (content-addressed, each transaction's source prefixed with the instance's name); its watermark is the one the next sync passes. Appended only after the delivery is stored, so a crash in between retries the batch, which finds it stored and counts nothing twice.",
  "sync.failed": "An attempt of a batch failed: `unavailable` is retried with capped exponential backoff (`retryAt`), up to eight attempts; any other failure, or the last attempt, gives the batch up and the next scheduled sync starts a new one with the same watermark.",
  "import.delivered": "`openfief import PLUGIN FILE` ran a running connector's `ImportFile` on a file as one batch, and its delivery was stored in the deliveries store (content-addressed, each transaction's source prefixed with the instance's name). A preview (`--preview`) stores and records nothing.",
  "core.refused": "The core API refused a plugin's call: its token was missing, malformed, for another audience, expired, another issuer's or otherwise not accepted, or named no plugin; or the instance it named is unknown, removed or not running, or does not hold the capability the call needs; or the caller went past its rate. Recorded one by one up to a budget per code, call and instance (or, before identity, source address) a window.",
  "core.refusals": "The core API refused more calls of one code and call, by one instance (or from one address before identity), than its budget records one by one within a window: this summary counts the rest, with the first and last time. Recorded when the window ends, or when the control plane stops.",
  "gateway.decision": "A view made a request with a valid PluginToken: to the Kubernetes data path through the gateway, or to its installation's own routes. The decision names the gate that decided.",
};

type Schema = Record<string, unknown>;

/**
 * What each field of an event's data means: `type.field`, or `field` where the meaning is the
 * same in every event that has it. Every field of the catalog must have one.
 */
export const FIELDS: Readonly<Record<string, string>> = {
  name: "The plugin's name (the stream is `plugin/<name>`).",
  "plugin.observed.spec": "The Plugin's `spec` exactly as given (image, manifest, config), not yet validated: the decision validates it.",
  "grant.observed.spec": "The PluginGrant's `spec` exactly as given: the capabilities, egress hosts, Secret names, data tiers and rules the owner approved.",
  "signature.verdict.digest": "The image's digest.",
  "signature.verdict.manifest": "The SHA-256 of the canonical manifest the signed label was compared with; absent when it was checked against none (such a verdict stands for the digest whatever the manifest).",
  "signature.verdict.image": "The image reference checked (`repository@sha256:…`).",
  "signature.verdict.outcome": "`verified` (a catalog entry pins the digest and its publisher signed it), `unverified` (another trusted signer signed it) or `refused` (it may not run).",
  "signature.verdict.reason": "Why it was refused, as a code (`unsigned`, `untrusted_signer`, `manifest_mismatch`, …).",
  "signature.verdict.signers": "The trusted signers whose signatures verified: name and kind (`openfief-ci`, `publisher`, `owner`).",
  "signature.verdict.identities": "The identities of every signature that verified (issuer and subject, or key), trusted or not.",
  "signature.verdict.trustRoot": "The SHA-256 of the Sigstore trusted root the signatures were verified against.",
  "signature.verdict.catalog": "The SHA-256 of the catalog the verdict was decided with.",
  "signature.verdict.module": "For a WebAssembly plugin, the SHA-256 of its module (the artifact's one layer).",
  "grant.verdict.grant": "The seq of the `grant.observed` the verdict is about.",
  "grant.verdict.ok": "Whether the grant mounts only this instance's own Secrets; a refused grant approves nothing.",
  "grant.verdict.errors": "Every Secret that is another instance's, each with its code (`foreign_secret`), the field that maps it (`spec.secretRoles[0].secret`) and a message naming the other instance.",
  "plugin.uninstall.requested.grant": "Whether the plugin had a grant, which goes with it.",
  "plugin.uninstall.requested.secrets": "The Secrets that go: those its grant maps that no other installed instance's grant maps.",
  "plugin.uninstall.requested.module": "The WebAssembly module that goes (no other instance runs it), or null.",
  "plugin.uninstalled.request": "The seq of the intent this purge carried out.",
  "plugin.uninstalled.grant": "Whether the grant went.",
  "plugin.uninstalled.secrets": "The Secrets deleted.",
  "plugin.uninstalled.absent": "The Secrets the intent named that were not found (never created, or removed before a crash).",
  "plugin.uninstalled.resources": "The Plugin and PluginGrant resources the operator deleted from the cluster (`removed`) or found gone (`absent`), so that nothing observes them back; empty where the log holds them (`up`, the CLI) and in version 1, recorded before the operator deleted them.",
  "plugin.uninstalled.module": "The module removed, or null.",
  "signature.verdict.catalogEvent": "The seq of the `catalog.observed` event recording the catalog the verdict was decided with; absent in verdicts recorded before catalogs were.",
  "catalog.observed.sha256": "The SHA-256 of the catalog file's bytes, as a verdict's `catalog` names it.",
  "catalog.observed.entries": "Every entry as the file writes it: the plugin's name, its image pinned by digest, and its publisher's exact identity (an issuer and subject, or one public key).",
  "config.verdict.image": "The image whose config schema the config was checked against.",
  "config.verdict.ok": "Whether the config matches.",
  "config.verdict.errors": "Every mismatch, each with its code, its path (`config.a[1].b`) and a message that names keys and constraints, never config values.",
  "rollout.decided.inputs": "What the decision was made from: the version asked for (`current`, null when the spec is invalid), whether it could run (`currentDeployable`: valid, config matching, signature verified), the version that ran before (`previous`) and the grant.",
  "signature.verdict.rules": "The version of the signature rules (their catalog step: which catalog publishers signed the image, whether an entry makes it verified) that made the verdict (1, 2, …; a verdict recorded before version 4 reads as 1, the first released rules). `check-decisions` re-decides the catalog part under these rules, and under today's when they are older.",
  "config.verdict.rules": "The version of the config rules that made the verdict (1, 2, …; a verdict recorded before version 2 reads as 1, the first released rules). `check-decisions` re-decides it from the spec last observed before it, under these rules and under today's when they are older.",
  "grant.verdict.rules": "The version of the grant rules that made the verdict (1, 2, …; a verdict recorded before version 2 reads as 1, the first released rules). `check-decisions` re-decides it from the grant and the instances the log held then, under these rules and under today's when they are older.",
  "rollout.decided.rules": "The version of the rollout rules that made the decision (1, 2, …; a decision recorded before version 3 reads as 1, the first released rules). `check-decisions` re-decides it under these rules, and under today's when they are older.",
  "rollout.decided.plan": "The decision: `outcome` (`current`, `previous` or `none`), what runs (`run`: image, manifest, effective permissions), what waits for approval (`pending`) and the reasons, as codes.",
  "workload.desired.running": "Whether anything runs. False when the decision runs nothing: the workload's objects are then removed.",
  "workload.desired.image": "The image that runs.",
  "workload.desired.runtime": "`container` (a Deployment and its objects) or `wasm` (a module in the plugin host).",
  "workload.desired.module": "For a WebAssembly plugin, the SHA-256 of the module the plugin host runs.",
  "workload.desired.objects": "The Kubernetes objects compiled from the effective permissions (ServiceAccount, ConfigMap, Service, NetworkPolicy, Deployment, and for a view its ClusterRole and binding), sorted.",
  "workload.desired.allowList": "The plugin's egress allow-list: its effective egress hosts as `host:port`.",
  "workload.applied.target": "Where it was applied: `directory:<folder>` or `kubernetes`.",
  "workload.applied.ok": "Whether every object was applied.",
  "workload.applied.error": "Why not, when it failed.",
  "previous.observed.deployed": "The version the Plugin's status says runs: image, manifest and config.",
  "reconcile.failed.error": "What failed, in one message (never a secret or a token).",
  "kube.applied.records": "One per object: the action (`apply` or `prune`), apiVersion, kind, name, field manager, the allow-list key where there is one, and whether it succeeded (with the error when not).",
  "egress.decision.plugin": "The plugin the token identified (the stream is `egress/<plugin>`).",
  "egress.decision.host": "The host the plugin asked to reach.",
  "egress.decision.port": "The port it asked for.",
  "egress.decision.allowed": "Whether the tunnel was opened.",
  "egress.decision.reason": "Why, as a code: `listed`, `not_listed`, `no_allow_list`, `forbidden_address`, `dns_no_addresses`, ….",
  "egress.decision.rules": "The version of the egress rules that made the decision (1, 2, …; a decision recorded before version 3 reads as 1, the first released rules). `check-decisions` re-decides it under these rules, and under today's when they are older.",
  "egress.decision.address": "The checked address that was dialed (allowed decisions).",
  "egress.decision.addresses": "Every address DNS gave for a listed host (empty when it gave none), so that `openfief check-decisions` can re-decide from the log.",
  "egress.decision.refusedAddress": "For a forbidden address, the one that was refused.",
  "egress.decision.addressRefusal": "Why that address was refused (the range it falls in), as a code.",
  "egress.refused.code": "Why, as a code: no token, a malformed header, a token the review refused, a malformed target, ….",
  "egress.refused.source": "The client's address (a pod's IP), never its token.",
  "egress.refused.host": "The host asked for, when the request named one.",
  "egress.refused.port": "The port asked for, when the request named one.",
  "egress.refused.dropped": "How many refusals from this source the rate limit left unrecorded since its last recorded one.",
  "module.installed.digest": "The module's lowercase hex SHA-256: how it is stored, run and named everywhere.",
  "module.installed.size": "The module's size in bytes.",
  "module.uninstalled.digest": "The removed module's SHA-256.",
  runtime: "Which tier ran the code: `wasm` (confined) or `unconfined` (a permitted executable).",
  "plugin.call.digest": "The code's SHA-256; absent when the call named none that is valid.",
  "plugin.call.method": "The ABI method called (`sync`, `import_file`, `manifest`, …).",
  "plugin.call.source": "Whose code the failure is: `host` (the host refused or stopped the call, codes `plugin_*`) or `plugin` (the plugin reported it).",
  "plugin.call.code": "The failure's stable code.",
  "plugin.call.message": "What happened, with every secret the call was given redacted.",
  "plugin.call.field": "The offending value's path, when the failure names one.",
  "plugin.calls.digest": "The code's SHA-256.",
  "plugin.calls.from": "The start of the window (inclusive).",
  "plugin.calls.to": "The end of the window (exclusive).",
  "plugin.calls.succeeded": "How many calls succeeded in it.",
  "sync.started.batchId": "The batch: generated by the core for its first attempt and reused on every retry; the connector echoes it in its delivery.",
  "sync.started.attempt": "1 for the first call of the batch, then 2, 3, …",
  "sync.started.slot": "The scheduled time the batch serves (the same on every attempt); the next batch's slot follows from it.",
  "sync.started.watermark": "Whether a watermark was passed; its value is the previous delivery's, kept in the deliveries store, never in the log.",
  "sync.delivered.batchId": "The batch whose delivery was recorded (`openfief deliveries get BATCH`).",
  "sync.delivered.attempt": "The attempt that delivered it.",
  "sync.delivered.digest": "The SHA-256 of the stored delivery.",
  "sync.delivered.counts": "How many transactions, postings, balance assertions, problems, prices, FX rates and index readings it holds.",
  "sync.delivered.fresh": "False when the batch was already stored by an attempt whose record was cut short (a crash between storing and recording): the stored delivery stands and nothing is counted twice.",
  "import.delivered.batchId": "The batch the core generated for the import (`openfief deliveries get BATCH`).",
  "import.delivered.fileName": "The file's name as given to the connector (a hint, never a path).",
  "import.delivered.size": "The file's size in bytes.",
  "import.delivered.digest": "The SHA-256 of the stored delivery.",
  "import.delivered.counts": "How many transactions, postings, balance assertions, problems, prices, FX rates and index readings it holds.",
  "sync.failed.batchId": "The batch of the failed attempt.",
  "sync.failed.attempt": "Which attempt failed.",
  "sync.failed.code": "The failure's stable code: the host's (`http_failed`, `plugin_timed_out`, …), the plugin's own, or the core's (`invalid_delivery` for an answer that is not a delivery of this batch).",
  "sync.failed.status": "The code's Connect status in snake case; only `unavailable` is retried.",
  "sync.failed.retryAt": "When the batch is retried (ISO 8601); absent when it was given up.",
  "executable.permitted.executable": "The executable's file name in the unconfined plugin folder.",
  "executable.permitted.digest": "Its SHA-256, which it must still have whenever it is started.",
  "executable.permitted.size": "Its size in bytes.",
  "gateway.decision.requestId": "The request's ID: the `Audit-ID` header of its answer and the `requestId` of the gateway's access line. Absent on version-1 events.",
  "gateway.decision.rules": "The version of the gateway's rules that made the decision (1, 2, …; a decision recorded before version 3 reads as 1, the first released rules). Gateway decisions are not re-decided (the user's access review is not in the log); `check-decisions` counts them by rules version.",
  "gateway.decision.served": "For an allowed list or watch, the selectors the upstream applied (a name in a watch's path is served as a `metadata.name` field selector).",
  "gateway.decision.digests": "For each field a caller controls that was cut to its cap (paths, selectors), the SHA-256 of the whole value.",
  "gateway.refusals.user": "The user whose requests were refused (the token's `sub`).",
  "gateway.refusals.installation": "The installation's ID the requests named.",
  "gateway.refusals.installationName": "The installation's name: the Plugin's name (the stream is `gateway/<installation name>`).",
  "gateway.refusals.route": "Where the requests went: `kube`, `runtime` or `controller`.",
  "gateway.refusals.gate": "The gate that refused them.",
  "gateway.refusals.status": "The HTTP status they were answered with.",
  "gateway.refusals.reason": "Why, as a stable code.",
  "gateway.refusals.count": "How many refusals this summary stands for (at least one).",
  "gateway.refusals.first": "When the first of them came (ISO 8601).",
  "gateway.refusals.last": "When the last of them came (ISO 8601).",
  "gateway.refusals.firstRequestId": "The first one's request ID, as its access line carries it.",
  "gateway.refusals.lastRequestId": "The last one's request ID.",
  "core.refused.code": "Why, as a stable code: `missing_token`, `malformed_token`, `wrong_audience`, `token_expired`, `wrong_issuer`, `token_refused`, `not_a_plugin`, `review_failed`, `review_timeout`, `rate_limited`, `unknown_instance`, `removed_instance`, `not_running` or `capability_not_held`.",
  "core.refused.call": "The call asked for: `whoami` or `connector.state`.",
  "core.refused.source": "The caller's address (a pod's IP, or 127.0.0.1 on `up`), never its token.",
  "core.refused.plugin": "The instance the token named, once the token was accepted (the stream is then `core/<plugin>`).",
  "core.refused.capability": "The capability the call needs and the instance does not hold, for `capability_not_held`.",
  "core.refusals.code": "The refusals' stable code, as in `core.refused`.",
  "core.refusals.call": "The call asked for.",
  "core.refusals.source": "The address of the first of them.",
  "core.refusals.plugin": "The instance, when the token named one.",
  "core.refusals.count": "How many refusals this summary stands for (at least one).",
  "core.refusals.first": "When the first of them came (ISO 8601).",
  "core.refusals.last": "When the last of them came (ISO 8601).",
  "egress.refusals.code": "The refusal's stable code (a bad head, no credentials, malformed credentials).",
  "egress.refusals.source": "The client's address.",
  "egress.refusals.count": "How many refusals this summary stands for (at least one).",
  "egress.refusals.first": "When the first of them came (ISO 8601).",
  "egress.refusals.last": "When the last of them came (ISO 8601).",
  "gateway.decision.route": "Where the request went: `kube` (the Kubernetes data path), `runtime` or `controller` (the installation's own routes).",
  "gateway.decision.user": "The acting user (the token's `sub`).",
  "gateway.decision.installation": "The installation's ID (the token's `installation_id`; the stream is `gateway/<installation name>`).",
  "gateway.decision.installationName": "The installation's name: the Plugin's name.",
  "gateway.decision.plugin": "The token's `plugin_name`: the image repository.",
  "gateway.decision.version": "The token's `plugin_version`: the image digest.",
  "gateway.decision.definitionHash": "The definition the user consented to when the token was minted (the token's `definition_hash`).",
  "gateway.decision.pinnedHash": "The definition pinned when the request came, whose rules capped it; null when none is. It differs from `definitionHash` only across an upgrade.",
  "gateway.decision.cluster": "The cluster the token is bound to.",
  "gateway.decision.method": "The HTTP method.",
  "gateway.decision.path": "The request's path, decoded, without its query.",
  "gateway.decision.attributes": "The Kubernetes attributes parsed from the request (verb, API group and version, namespace, resource, subresource, name, selectors; or a non-resource path); null for the installation routes and before the request was parsed.",
  "gateway.decision.decision": "`allow` or `deny`.",
  "gateway.decision.gate": "Which gate decided, in order: `origin`, `cluster`, `can_view`, `installation`, `request`, `user` (the user's access review), `plugin` (the plugin's effective rules); `upstream` for a request that passed them all and was forwarded.",
  "gateway.decision.status": "The HTTP status a refusal was answered with; null when the request was forwarded.",
  "gateway.decision.reason": "Why, as a stable code, for refusals.",
  "log.checkpoint.origin": "The checkpoint's origin line: the log's name, also the name of the key that signs it.",
  "log.checkpoint.size": "How many events the tree covered: seqs 1 to `size`. This event itself comes later, so the next checkpoint covers it.",
  "log.checkpoint.root": "The tree's root hash at `size` (SHA-256, base64).",
  "log.checkpoint.note": "The signed checkpoint exactly as `/tlog/checkpoint` served it: the origin, size and root lines, a blank line, and the log key's signature line.",
};

function meaning(type: string, field: string): string {
  const text = FIELDS[`${type}.${field}`] ?? FIELDS[field];
  if (text === undefined) throw new Error(`field ${field} of ${type} has no meaning in scripts/gen-events-doc.ts FIELDS`);
  return text;
}

/** A JSON Schema as a short phrase: `string`, `one of "a", "b"`, `list of string`, `object`. */
function typeText(s: Schema | undefined): string {
  if (s === undefined || Object.keys(s).length === 0) return "any JSON";
  if (Array.isArray(s["enum"])) return `one of ${(s["enum"] as unknown[]).map((v) => `\`${JSON.stringify(v)}\``).join(", ")}`;
  const types = Array.isArray(s["type"]) ? (s["type"] as string[]) : typeof s["type"] === "string" ? [s["type"] as string] : [];
  const shown = types.map((t) => {
    if (t === "array") return `list${s["items"] === undefined ? "" : ` of ${typeText(s["items"] as Schema)}`}`;
    if (t === "object" && s["properties"] !== undefined) return `object (${Object.keys(s["properties"] as object).map((k) => `\`${k}\``).join(", ")})`;
    if (t === "string" && typeof s["pattern"] === "string") return `string matching \`${s["pattern"] as string}\``;
    if (t === "integer" && typeof s["minimum"] === "number" && typeof s["maximum"] === "number") return `integer ${s["minimum"] as number}–${s["maximum"] as number}`;
    return t;
  });
  return shown.length === 0 ? "any JSON" : shown.join(" or ");
}

/** The stream an event goes to, found by asking its stream check with each string field marked. */
function streamText(def: EventDefinition): string {
  const props = Object.keys(((def.schema as Schema)["properties"] ?? {}) as object);
  const base = Object.fromEntries(props.map((p) => [p, "other"]));
  for (const p of props) {
    const said = def.stream("", { ...base, [p]: "marked" }) ?? "";
    const m = /must go to stream (\S+)/.exec(said);
    if (m === null) continue;
    const stream = m[1] as string;
    if (stream.includes("marked")) return `\`${stream.replace("marked", `<${p}>`)}\``;
    if (!stream.includes("other")) return `\`${stream}\``;
  }
  return "(any)";
}

function section(def: EventDefinition, type: EventType): string {
  const schema = def.schema as Schema;
  const required = new Set((schema["required"] as string[] | undefined) ?? []);
  const properties = (schema["properties"] ?? {}) as Record<string, Schema>;
  const cause = CAUSES[def.type];
  if (cause === undefined) throw new Error(`event type ${def.type} has no cause in scripts/gen-events-doc.ts CAUSES`);
  const older = (def.history ?? []).map((h) => h.version).sort((a, b) => a - b);
  const lines = [
    `### \`${def.type}\``,
    "",
    `Version ${type.version}${older.length === 0 ? "" : ` (rows stored as version ${older.join(", ")} are read as version ${type.version}, never rewritten)`}; stream ${streamText(def)}.`,
    "",
    `**What causes it.** ${cause}`,
    "",
    "| field | type | required | meaning |",
    "| --- | --- | --- | --- |",
    ...Object.entries(properties).map(([field, s]) => `| \`${field}\` | ${typeText(s).replace(/\|/g, "\\|")} | ${required.has(field) ? "yes" : "no"} | ${meaning(def.type, field).replace(/\|/g, "\\|")} |`),
    "",
  ];
  return lines.join("\n");
}

/** Every event type the catalog defines, in the page's order. */
export function catalogTypes(): string[] {
  const registry = new EventRegistry();
  const types: string[] = [];
  for (const area of AREAS) area.define(new (class extends EventRegistry {
    override define(def: EventDefinition): EventType {
      types.push(def.type);
      return registry.define(def);
    }
  })());
  return types;
}

/** The page's text. */
export function generate(): string {
  const parts = [
    "# Events",
    "",
    "<!-- Generated by scripts/gen-events-doc.ts from the event catalog (npm run docs:events); do not edit. -->",
    "",
    "Every input and every decision of the control plane is an event in its log (see",
    "[concepts/decision-log.md](concepts/decision-log.md)). This page lists every event type the log",
    "accepts: its version, the stream it goes to, what causes it, and each field of its data. Every",
    "event also carries the envelope the log gives it: its sequence number, stream and version in the",
    "stream, time, actor (`owner:cli`, `owner:web:<user>`, `cluster`, …), the event that caused it",
    "(`causedBy`, for decisions), and the hash that chains it to the one before. `openfief log` shows",
    "them (`--type`, `--plugin`, `--json`).",
    "",
    "An event's data is validated against its type's schema when it is appended; an event type changes",
    "shape only by a new version, and older rows are lifted to the current version as they are read.",
    "",
  ];
  for (const area of AREAS) {
    const recorded: { def: EventDefinition; type: EventType }[] = [];
    const registry = new (class extends EventRegistry {
      override define(def: EventDefinition): EventType {
        const type = super.define(def);
        recorded.push({ def, type });
        return type;
      }
    })();
    area.define(registry);
    parts.push(`## ${area.title}`, "", area.about, "", ...recorded.map(({ def, type }) => section(def, type)));
  }
  return `${parts.join("\n").trimEnd()}\n`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(OUTPUT, generate());
  console.log(`gen-events-doc: wrote ${OUTPUT}`);
}
