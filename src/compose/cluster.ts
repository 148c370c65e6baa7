/**
 * The reconciler in cluster mode (`openfief operator`): Plugin and PluginGrant resources seen by
 * the Kubernetes source become observations in the log (only when their content changed), the
 * leader reconciles through the Kubernetes target, and each Plugin's status is written from the
 * projections: `deployed`, `pendingApproval`, `ApprovalRequired` and `SignatureVerified`.
 *
 * `status.deployed` (image, manifest, config) is also where the running version survives the
 * event store: an operator starting on an empty store (a new volume, a standby without the old
 * one) records it as `previous.observed`, the decider's Previous until the log holds a decision of
 * its own (seed 000: "Previous from status.deployed"). Every object the target applies or prunes
 * is recorded per plugin and pass as `kube.applied`.
 */
import type { Logger } from "pino";
import type { GrantSpec, JsonValue, Pending, PluginSpec, Topology } from "../plugins/index.js";
import type { EventLog, KubeChange, PreviousObserved, StoredEvent } from "../events/index.js";
import { isPluginName, pluginStream } from "../events/index.js";
import type { ApplyRecord, DeployedStatus, OperatorContext, PluginMeta, ReconcilerFactory, SignatureState } from "../kube/index.js";
import { EMPTY_PENDING, formatErrors, parseImageRef, validateTopology } from "../plugins/index.js";
import type { PluginState, VerdictState } from "../projections/index.js";
import { previousVersion, Projector, specManifestDigest, standingVerdict } from "../projections/index.js";
import { openIntent } from "../reconciler/index.js";
import { startOperatorCheckpoints } from "./operator-checkpoints.js";
import { startOperatorSyncs } from "./operator-syncs.js";
import { startClusterCoreApi, type ClusterCoreApi } from "./core-api.js";
import type { OperatorSyncSettings } from "./operator-syncs.js";
import { logVerifierPublisher } from "./cluster-log-key.js";
import { EMBEDDED_TOPOLOGY, openRuntime } from "./runtime.js";
import { deliveriesOf, storeLocationOf } from "../app/index.js";

/** `off` turns the operator's syncs off (tests of other things; a cluster without connectors). */
export const SYNCS_ENV = "OPENFIEF_SYNCS";

/**
 * `HOST:PORT` where this operator serves the core's API to plugins (their `openfief-core` tokens
 * checked by TokenReview; docs/adr/0196, 0198); unset: not served (tests of other things).
 */
export const CORE_LISTEN_ENV = "OPENFIEF_CORE_LISTEN";

/** The address `$OPENFIEF_CORE_LISTEN` names, or null when unset; refuses to start when it is not `HOST:PORT`. */
export function coreListenFromEnv(env: Readonly<Record<string, string | undefined>>): { readonly host: string; readonly port: number } | null {
  const raw = env[CORE_LISTEN_ENV];
  if (raw === undefined || raw === "") return null;
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):([0-9]{1,5})$/.exec(raw);
  const port = m === null ? NaN : Number(m[2]);
  if (m === null || !(port >= 1 && port <= 65535)) throw new Error(`${CORE_LISTEN_ENV} must be HOST:PORT (such as 0.0.0.0:8443), not ${JSON.stringify(raw.slice(0, 64))}`);
  const host = m[1]!.startsWith("[") ? m[1]!.slice(1, -1) : m[1]!;
  return { host, port };
}

/** Who cluster observations are recorded as. */
export const CLUSTER_ACTOR = "cluster";

/** The topology from `OPENFIEF_TOPOLOGY` (JSON), validated; refuses to start when it is invalid. */
export function topologyFromEnv(env: Readonly<Record<string, string | undefined>>): Topology {
  const raw = env["OPENFIEF_TOPOLOGY"];
  if (raw === undefined) return EMBEDDED_TOPOLOGY;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new Error("OPENFIEF_TOPOLOGY is not JSON");
  }
  const problems = validateTopology(value as Topology, "OPENFIEF_TOPOLOGY");
  if (problems.length > 0) throw new Error(`invalid OPENFIEF_TOPOLOGY: ${formatErrors(problems)}`);
  return value as Topology;
}

/** A comma-separated list from the environment (image layouts, plain-HTTP registries), when set. */
function listFromEnv<T>(name: string, wrap: (v: string[]) => T): T | Record<string, never> {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return {};
  return wrap(raw.split(",").map((s) => s.trim()).filter((s) => s !== ""));
}

/** Records a resource as seen: a spec when it changed, a deletion once. */
export async function observe(store: EventLog, kind: "plugin" | "grant", name: string, spec: JsonValue | null): Promise<void> {
  const stream = pluginStream(name);
  if (spec !== null) {
    // A purge under way deletes the resource (docs/adr/0152): still seeing it is no new installation.
    if ((await openIntent(store, name)) !== null) return;
    await store.observe({ stream, type: `${kind}.observed`, data: { name, spec }, actor: CLUSTER_ACTOR, causedBy: null });
    return;
  }
  const last = (await store.read({ stream, type: [`${kind}.observed`, `${kind}.deleted`] })).at(-1);
  if (last !== undefined && last.type === `${kind}.observed`) {
    await store.append([{ stream, type: `${kind}.deleted`, data: { name }, actor: CLUSTER_ACTOR, causedBy: null }], { expected: { [stream]: await store.version(stream) } });
  }
}

/**
 * Records a Plugin's `status.deployed` as `previous.observed` while the log holds no
 * `rollout.decided` for it: the version that runs, as a fact the decider reads (DESIGN rule 2).
 * Idempotent (`store.observe`); ignored once the log has a decision of its own.
 */
export async function observePrevious(store: EventLog, name: string, deployed: DeployedStatus): Promise<StoredEvent | null> {
  const stream = pluginStream(name);
  if ((await store.last(stream, "rollout.decided")) !== null) return null;
  const data: PreviousObserved = { name, deployed: { image: deployed.image, manifest: deployed.manifest } };
  if (deployed.config !== undefined) data.deployed.config = deployed.config;
  return store.observe({ stream, type: "previous.observed", data, actor: CLUSTER_ACTOR, causedBy: null });
}

/** One target record as the `kube.applied` event carries it. */
export function kubeChange(r: ApplyRecord): KubeChange {
  const prune = r.action === "pruned" || r.action === "allowlist-key-removed" || r.action === "plugin-host-key-removed";
  return {
    action: prune ? "prune" : "apply",
    apiVersion: r.apiVersion,
    kind: r.kind,
    name: r.name,
    fieldManager: r.fieldManager,
    ...(r.key === undefined ? {} : { key: r.key }),
    ok: true,
  };
}

/**
 * Appends the changes the target made for each plugin during one pass as `kube.applied`, caused
 * by the plugin's latest `workload.desired` (null for leftovers of a plugin the log does not
 * know), and empties `changes`.
 */
export async function recordKubeChanges(store: EventLog, changes: Map<string, KubeChange[]>, actor = "reconciler"): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for (const [name, records] of [...changes].sort(([a], [b]) => a.localeCompare(b))) {
    if (records.length === 0 || !isPluginName(name)) continue;
    const stream = pluginStream(name);
    const cause = await store.last(stream, "workload.desired");
    out.push(...await store.append([{ stream, type: "kube.applied", data: { name, records }, actor, causedBy: cause?.seq ?? null }]));
  }
  changes.clear();
  return out;
}

/** The signature state of the image a Plugin asks for, from the latest verdict. */
export function signatureState(askedImage: string | null, verdicts: ReadonlyMap<string, VerdictState>, manifest: string | null = null): SignatureState {
  if (askedImage === null) return { kind: "unknown", reason: "no valid spec" };
  const ref = parseImageRef(askedImage);
  const v = ref.ok ? standingVerdict(verdicts, ref.value.digest, manifest) : undefined;
  if (v === undefined) return { kind: "unknown", reason: "not checked yet" };
  if (v.outcome === "verified") return { kind: "verified" };
  if (v.outcome === "unverified") return { kind: "signed" };
  return { kind: "refused", code: v.reason ?? "refused" };
}

/** {@link observePrevious}, logging instead of failing: the Plugin's own observation must still be recorded. */
async function recordPrevious(store: EventLog, name: string, deployed: DeployedStatus, log: Logger): Promise<void> {
  try {
    await observePrevious(store, name, deployed);
  } catch (err) {
    log.warn({ plugin: name, err: err instanceof Error ? err.message : String(err) }, "cannot record the Plugin's status.deployed; it is not taken as the previous version");
  }
}

/** The factory `openfief operator` is registered with: the leader's syncs on unless `OPENFIEF_SYNCS=off` (docs/adr/0198). */
export const clusterReconcilerFactory: ReconcilerFactory = (ctx) => clusterReconciler(ctx, process.env[SYNCS_ENV] === "off" ? null : {});

/** The factory with the leader's syncs set (null: none). */
export function clusterReconcilerFactoryWith(syncs: OperatorSyncSettings | null): ReconcilerFactory {
  return (ctx) => clusterReconciler(ctx, syncs);
}

async function clusterReconciler(ctx: OperatorContext, syncSettings: OperatorSyncSettings | null): ReturnType<ReconcilerFactory> {
  // Loaded here, not at the top: the Kubernetes client is heavy and only cluster mode needs it.
  const { pluginStatus } = await import("../kube/index.js");
  // The cluster's one log when a Secret gives its URL ($OPENFIEF_STORE, or the file
  // $OPENFIEF_STORE_FILE names); else the SQLite file in the operator's data folder.
  const store = storeLocationOf({}, process.env);
  const topology = topologyFromEnv(process.env);
  const rt = await openRuntime({
    dataDir: ctx.dataDir,
    ...(store === null ? {} : { store }),
    logger: ctx.log,
    target: ctx.target,
    ownerSigners: ctx.ownerSigners,
    topology,
    ...listFromEnv("OPENFIEF_OCI_LAYOUTS", (v) => ({ ociLayouts: v })),
    ...listFromEnv("OPENFIEF_INSECURE_REGISTRIES", (v) => ({ insecureRegistries: v })),
  });
  // The leader's signed checkpoints and witnesses (docs/adr/0144).
  const checkpoints = await startOperatorCheckpoints(rt.store, ctx.checkpoints, { isLeader: ctx.isLeader, logger: ctx.log, env: process.env }).catch(async (err: unknown) => {
    await rt.close();
    throw err;
  });
  // The leader plays the core for connectors: their syncs, each delivery kept beside the log.
  const syncs = syncSettings === null ? null : await startOperatorSyncs(rt.store, syncSettings, { kc: ctx.kc, topology, isLeader: ctx.isLeader, logger: ctx.log, env: process.env }).catch(async (err: unknown) => {
    await checkpoints?.stop();
    await rt.close();
    throw err;
  });
  // Every replica serves the core's API to plugins (the core's Service selects them all); it reads
  // the one log, so a standby answers as the leader would.
  let core: ClusterCoreApi | null = null;
  try {
    const listen = coreListenFromEnv(process.env);
    if (listen !== null) core = await startClusterCoreApi({ kc: ctx.kc, store: rt.store, deliveries: deliveriesOf(rt.store, ctx.dataDir), logger: ctx.log, ...listen });
  } catch (err) {
    await syncs?.stop();
    await checkpoints?.stop();
    await rt.close();
    throw err;
  }
  // The key's public half for the console, published by the leader (docs/adr/0192).
  const verifier = checkpoints === null ? null : logVerifierPublisher(ctx.kc, checkpoints.key, ctx.log);
  const projector = new Projector(rt.store);
  const meta = new Map<string, PluginMeta>();
  // What the target changed during the running pass, by plugin; recorded when the pass ends.
  const changes = new Map<string, KubeChange[]>();
  ctx.onApplyRecord((r) => {
    const list = changes.get(r.plugin) ?? [];
    list.push(kubeChange(r));
    changes.set(r.plugin, list);
  });
  return {
    async observePlugin(name: string, spec: PluginSpec | null, m: PluginMeta | null): Promise<void> {
      if (m !== null) meta.set(name, m);
      else meta.delete(name);
      if (spec !== null && m?.deployed != null) await recordPrevious(rt.store, name, m.deployed, ctx.log);
      await observe(rt.store, "plugin", name, spec as unknown as JsonValue | null);
    },
    async observeGrant(name: string, spec: GrantSpec | null): Promise<void> {
      await observe(rt.store, "grant", name, spec as unknown as JsonValue | null);
    },
    async reconcileAll(): Promise<void> {
      if (!ctx.isLeader()) return;
      await verifier?.ensure();
      try {
        await rt.reconciler.reconcileAll();
      } finally {
        try {
          await recordKubeChanges(rt.store, changes);
        } catch (err) {
          changes.clear();
          ctx.log.error({ err: err instanceof Error ? err.message : String(err) }, "recording the applied objects failed");
        }
      }
      await projector.catchUp();
      const verdicts = await projector.rows<VerdictState>("signature_verdicts");
      for (const p of (await projector.rows<PluginState>("plugins")).values()) {
        const m = meta.get(p.name);
        if (m === undefined || p.deleted || !ctx.isLeader()) continue;
        const status = pluginStatus({
          generation: m.generation,
          // The whole version, so a successor without this store can keep running it.
          deployed: (await previousVersion(rt.store, p.name))?.version ?? null,
          pending: (p.pending as Pending | null) ?? EMPTY_PENDING,
          signature: signatureState(p.askedImage, verdicts, specManifestDigest(p.name, p.spec)),
          now: new Date().toISOString(),
        });
        try {
          await ctx.status.write(p.name, status);
        } catch (err) {
          ctx.log.warn({ plugin: p.name, err: err instanceof Error ? err.message : String(err) }, "writing the Plugin's status failed; retrying on the next pass");
        }
      }
      syncs?.poke();
    },
    close: async () => {
      await core?.close();
      await syncs?.stop();
      await checkpoints?.stop();
      await rt.close();
    },
  };
}
