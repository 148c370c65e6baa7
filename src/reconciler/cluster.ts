/**
 * The reconciler in cluster mode (`openfief operator`): Plugin and PluginGrant resources seen by
 * the Kubernetes source become observations in the log (only when their content changed), the
 * leader reconciles through the Kubernetes target, and each Plugin's status is written from the
 * projections: `deployed`, `pendingApproval`, `ApprovalRequired` and `SignatureVerified`.
 */
import type { GrantSpec, JsonValue, PluginSpec } from "../plugins/types.js";
import { pluginStream } from "../events/streams.js";
import type { EventStore } from "../events/store.js";
import type { ReconcilerFactory } from "../kube/operator.js";
import type { PluginMeta } from "../kube/ports.js";
import { pluginStatus } from "../kube/status.js";
import type { SignatureState } from "../kube/status.js";
import type { Topology } from "../plugins/compile.js";
import { validateTopology } from "../plugins/compile.js";
import { EMPTY_PENDING } from "../plugins/effective.js";
import type { Pending } from "../plugins/effective.js";
import { formatErrors } from "../plugins/errors.js";
import { parseImageRef } from "../plugins/image-ref.js";
import type { PluginState, VerdictState } from "../projections/folds.js";
import { Projector } from "../projections/projector.js";
import { EMBEDDED_TOPOLOGY, openRuntime } from "./runtime.js";

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
export function observe(store: EventStore, kind: "plugin" | "grant", name: string, spec: JsonValue | null): void {
  const stream = pluginStream(name);
  if (spec !== null) {
    store.observe({ stream, type: `${kind}.observed`, data: { name, spec }, actor: CLUSTER_ACTOR, causedBy: null });
    return;
  }
  const last = store.read({ stream, type: [`${kind}.observed`, `${kind}.deleted`] }).at(-1);
  if (last !== undefined && last.type === `${kind}.observed`) {
    store.append([{ stream, type: `${kind}.deleted`, data: { name }, actor: CLUSTER_ACTOR, causedBy: null }], { expected: { [stream]: store.version(stream) } });
  }
}

/** The signature state of the image a Plugin asks for, from the latest verdict. */
export function signatureState(askedImage: string | null, verdicts: ReadonlyMap<string, VerdictState>): SignatureState {
  if (askedImage === null) return { kind: "unknown", reason: "no valid spec" };
  const ref = parseImageRef(askedImage);
  const v = ref.ok ? verdicts.get(ref.value.digest) : undefined;
  if (v === undefined) return { kind: "unknown", reason: "not checked yet" };
  if (v.outcome === "verified") return { kind: "verified" };
  if (v.outcome === "unverified") return { kind: "signed" };
  return { kind: "refused", code: v.reason ?? "refused" };
}

/** The factory `openfief operator` is registered with. */
export const clusterReconcilerFactory: ReconcilerFactory = async (ctx) => {
  const rt = await openRuntime({
    dataDir: ctx.dataDir,
    logger: ctx.log,
    target: ctx.target,
    ownerSigners: ctx.ownerSigners,
    topology: topologyFromEnv(process.env),
    ...listFromEnv("OPENFIEF_OCI_LAYOUTS", (v) => ({ ociLayouts: v })),
    ...listFromEnv("OPENFIEF_INSECURE_REGISTRIES", (v) => ({ insecureRegistries: v })),
  });
  const projector = new Projector(rt.store);
  const meta = new Map<string, PluginMeta>();
  return {
    observePlugin(name: string, spec: PluginSpec | null, m: PluginMeta | null): void {
      if (m !== null) meta.set(name, m);
      else meta.delete(name);
      observe(rt.store, "plugin", name, spec as unknown as JsonValue | null);
    },
    observeGrant(name: string, spec: GrantSpec | null): void {
      observe(rt.store, "grant", name, spec as unknown as JsonValue | null);
    },
    async reconcileAll(): Promise<void> {
      if (!ctx.isLeader()) return;
      await rt.reconciler.reconcileAll();
      projector.catchUp();
      const verdicts = projector.rows<VerdictState>("signature_verdicts");
      for (const p of projector.rows<PluginState>("plugins").values()) {
        const m = meta.get(p.name);
        if (m === undefined || p.deleted || !ctx.isLeader()) continue;
        const status = pluginStatus({
          generation: m.generation,
          deployed: p.runningImage === null ? null : { image: p.runningImage },
          pending: (p.pending as Pending | null) ?? EMPTY_PENDING,
          signature: signatureState(p.askedImage, verdicts),
          now: new Date().toISOString(),
        });
        try {
          await ctx.status.write(p.name, status);
        } catch (err) {
          ctx.log.warn({ plugin: p.name, err: err instanceof Error ? err.message : String(err) }, "writing the Plugin's status failed; retrying on the next pass");
        }
      }
    },
    close: () => rt.close(),
  };
};
