/**
 * The reconcile loop: observe → decide → apply, each step leaving events.
 *
 * For one plugin it (1) verifies the image the spec asks for and the image that runs now, and
 * records a `signature.verdict` when the verdict changed; (2) checks the config against its
 * schema and records a `config.verdict` when that changed; (3) runs the pure rollout decider over
 * the log and appends `rollout.decided` only when the plan differs from the last one, naming the
 * newest input as its cause; (4) compiles the desired workload of whatever runs and appends
 * `workload.desired` when it changed; (5) applies it through the target unless the log already
 * says it was applied, and appends `workload.applied`. Each step's choice is a pure function in
 * `steps.ts`; this file gathers their inputs and carries out their answers.
 *
 * Every step first reads what the log already holds, so a process killed at any point and started
 * again converges to the same state with no event duplicated and no decision lost. One plugin's
 * failure is recorded (`reconcile.failed`) and the pass goes on with the others.
 */
import { canonicalize } from "json-canonicalize";
import type { Logger } from "pino";
import type { EventDataMap, EventOf, EventLog, EventTypeName, RolloutDecided } from "../events/index.js";
import { isEventOf, manifestDigest, pluginStream, StoreError } from "../events/index.js";
import { parseGrant, parseImageRef, parseManifest, parsePlugin } from "../plugins/index.js";
import type { HostedSecret, ImageRef, InstanceSecrets, Manifest, Topology } from "../plugins/index.js";
import { allowListConfigData, deployedBy, pluginHostConfigData, loadDeciderState, moduleOfVersion, previousVersion, Projector } from "../projections/index.js";
import type { PluginState } from "../projections/index.js";
import type { ImageVerifier, VerdictRecorder } from "../trust/index.js";
import { appliedRecord, desiredChanged, desiredWorkload, needsApply, nextConfigVerdict, nextDecision, grantProblems, nextGrantVerdict } from "./steps.js";
import type { KubeObject, Target } from "./target.js";
import { completeUninstalls } from "./purge.js";

/** What the reconciler needs from the outside, passed in (ports). */
export interface ReconcilerDeps {
  readonly store: EventLog;
  readonly verifier: ImageVerifier;
  readonly recorder: VerdictRecorder;
  readonly target: Target;
  readonly topology: Topology;
  readonly logger: Logger;
  /** Who the events name as their actor. */
  readonly actor?: string;
}

/** What one plugin's reconcile did, for logs and the CLI. */
export interface PluginResult {
  readonly name: string;
  /** Seqs of the events this pass appended, in order. */
  readonly appended: number[];
  readonly decision: RolloutDecided | null;
  /** Set when the pass over this plugin failed (recorded as `reconcile.failed`); the others went on. */
  readonly error?: string;
}

/** Where the pass appends to a plugin's stream: the version it read before any fact, moved on by each append. */
interface Expected {
  readonly stream: string;
  version: number;
}

const CONFLICT_RETRIES = 5;

export class Reconciler {
  readonly #d: ReconcilerDeps;
  readonly #actor: string;
  readonly #projector: Projector;
  /** The allow-list data last published, so an unchanged set is not written again. */
  #publishedAllowLists: string | null = null;
  /** The plugin-host data last published, likewise. */
  #publishedPluginHost: string | null = null;

  constructor(deps: ReconcilerDeps) {
    this.#d = deps;
    this.#actor = deps.actor ?? "reconciler";
    this.#projector = new Projector(deps.store);
  }

  /** Reconciles every plugin the log knows, prunes what the target holds for unknown ones, publishes allow-lists. */
  async reconcileAll(): Promise<PluginResult[]> {
    await this.completeUninstalls();
    await this.#projector.catchUp();
    const names = new Set((await this.#projector.rows<PluginState>("plugins")).keys());
    const results: PluginResult[] = [];
    for (const name of [...names].sort()) results.push(await this.#isolated(name));
    for (const held of await this.#d.target.listPlugins()) {
      if (!names.has(held)) {
        await this.#d.target.removePlugin(held);
        this.#d.logger.info({ plugin: held }, "removed objects of a plugin the log does not know");
      }
    }
    await this.publishAllowLists();
    await this.publishPluginHost();
    return results;
  }

  /**
   * Finishes every uninstall the log holds as an open intent (docs/adr/0162): a purge that a
   * crash interrupted converges at the next pass. A failure is logged and tried again next pass.
   */
  async completeUninstalls(): Promise<void> {
    try {
      const done = await completeUninstalls(this.#d.store, this.#d.target, this.#actor);
      for (const u of done) this.#d.logger.info({ plugin: u.name, seq: u.seq, secrets: u.secrets.length }, "plugin uninstalled");
    } catch (err) {
      this.#d.logger.error({ err: err instanceof Error ? err.message : String(err) }, "completing an uninstall failed; trying again next pass");
    }
  }

  /** Reconciles one plugin; a failure is recorded and returned, never thrown, so the pass goes on. */
  async #isolated(name: string): Promise<PluginResult> {
    try {
      return await this.reconcile(name);
    } catch (err) {
      const error = (err instanceof Error ? err.message : String(err)).slice(0, 2000) || "unknown error";
      this.#d.logger.error({ plugin: name, err: error }, "reconciling the plugin failed; going on with the others");
      try {
        await this.#d.store.observe({ stream: pluginStream(name), type: "reconcile.failed", data: { name, error }, actor: this.#actor, causedBy: null });
      } catch (recordErr) {
        this.#d.logger.error({ plugin: name, err: recordErr instanceof Error ? recordErr.message : String(recordErr) }, "cannot record the failure");
      }
      return { name, appended: [], decision: null, error };
    }
  }

  /** Reconciles one plugin, retrying when another writer appended to its stream meanwhile. */
  async reconcile(name: string): Promise<PluginResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#reconcileOnce(name);
      } catch (err) {
        if (err instanceof StoreError && err.code === "conflict" && attempt < CONFLICT_RETRIES) continue;
        throw err;
      }
    }
  }

  /** Publishes every running plugin's allow-list through the target when it changed. */
  async publishAllowLists(): Promise<void> {
    await this.#projector.catchUp();
    const data = await allowListConfigData(this.#projector);
    const text = canonicalize(data);
    if (text === this.#publishedAllowLists) return;
    await this.#d.target.applyAllowLists(data);
    this.#publishedAllowLists = text;
  }

  /** Publishes the running WebAssembly plugins to the plugin host through the target when they changed (ADR 0080). */
  async publishPluginHost(): Promise<void> {
    await this.#projector.catchUp();
    const data = await pluginHostConfigData(this.#projector, (name) => grantedSecretsOf(this.#d.store, name));
    const text = canonicalize(data);
    if (text === this.#publishedPluginHost) return;
    await this.#d.target.applyPluginHost(data);
    this.#publishedPluginHost = text;
  }

  async #reconcileOnce(name: string): Promise<PluginResult> {
    const { store } = this.#d;
    const stream = pluginStream(name);
    // Optimistic concurrency: every append to the plugin's stream expects the version read here,
    // before any fact, so a concurrent write (an apply, an approval) makes this pass start over
    // on the new facts instead of deciding on stale ones.
    const expected: Expected = { stream, version: await store.version(stream) };
    const appended = await this.#recordFacts(name, expected);

    // 3. Decide, from the log alone.
    const last = await store.last(stream, "rollout.decided");
    const { state, sources } = await loadDeciderState(store, name);
    let decision = last;
    const next = nextDecision(state, sources, last);
    if (next !== null) {
      decision = await this.#append(expected, "rollout.decided", next.data, next.causedBy);
      appended.push(decision.seq);
      this.#d.logger.info({ plugin: name, seq: decision.seq, outcome: next.data.plan.outcome }, "rollout decided");
    }

    // 4. The desired workload of whatever runs.
    let desiredEvent = await store.last(stream, "workload.desired");
    if (decision !== null) {
      const run = deployedBy(decision.data.plan);
      const module = run === null ? null : await moduleOfVersion(store, run);
      const { desired, problem } = desiredWorkload(name, decision.data, this.#d.topology, module);
      if (problem !== null) this.#d.logger.error({ plugin: name, problem }, "the decided version cannot be compiled; running nothing");
      if (desiredChanged(desired, desiredEvent)) {
        desiredEvent = await this.#append(expected, "workload.desired", desired, decision.seq);
        appended.push(desiredEvent.seq);
      }
    }

    // 5. Apply, unless the log says this desired state was already applied by this target.
    if (desiredEvent !== null && needsApply(desiredEvent, await store.last(stream, "workload.applied"), this.#d.target.name)) {
      appended.push(await this.#apply(expected, name, desiredEvent));
    }
    return { name, appended, decision: decision?.data ?? null };
  }

  /**
   * Steps 1–2, the facts the decider needs: verdicts for the asked-for image and for the one that
   * runs now (its signature is checked again before it may keep running), and the config verdict.
   */
  async #recordFacts(name: string, expected: Expected): Promise<number[]> {
    return [...(await this.#currentFacts(name, expected)), ...(await this.#previousFacts(name)), ...(await this.#grantFacts(name, expected))];
  }

  /**
   * Step 2b: the verdict on the plugin's grant, refused when it maps a Secret that is another
   * installed instance's (docs/adr/0161), recorded when it changed.
   */
  async #grantFacts(name: string, expected: Expected): Promise<number[]> {
    const { store } = this.#d;
    const stream = pluginStream(name);
    const grant = await store.lookups.lastOf(stream, ["grant.observed", "grant.deleted"], Number.MAX_SAFE_INTEGER);
    if (grant?.type !== "grant.observed") return [];
    const self = await this.#instance(name);
    const others: InstanceSecrets[] = [];
    if (self !== null) {
      for (const other of [...(await this.#projector.rows<PluginState>("plugins")).values()]) {
        if (other.name === name || other.spec === null) continue;
        const o = await this.#instance(other.name);
        if (o !== null) others.push(o);
      }
    }
    const problems = self === null ? [] : grantProblems(self, others);
    const last = await store.lookups.lastOf(stream, ["grant.verdict"], Number.MAX_SAFE_INTEGER);
    const v = nextGrantVerdict(name, grant.seq, problems, last);
    if (v === null) return [];
    if (!v.ok) this.#d.logger.warn({ plugin: name, problems: v.errors.map((e) => `${e.path}: ${e.code}`) }, "grant refused: it maps another instance's Secret");
    return [(await this.#append(expected, "grant.verdict", v, grant.seq)).seq];
  }

  /** An installed plugin's Secret roles and grant, and when it was installed; null when it is not installed. */
  async #instance(name: string): Promise<InstanceSecrets | null> {
    const q = this.#d.store.lookups;
    const stream = pluginStream(name);
    const plugin = await q.lastOf(stream, ["plugin.observed", "plugin.deleted"], Number.MAX_SAFE_INTEGER);
    if (plugin?.type !== "plugin.observed") return null;
    const deleted = await q.lastOf(stream, ["plugin.deleted"], Number.MAX_SAFE_INTEGER);
    const [installed] = await this.#d.store.read({ stream, type: "plugin.observed", afterSeq: deleted?.seq ?? 0, limit: 1 });
    const parsed = parsePlugin({ name, spec: plugin.data.spec });
    const roles = parsed.ok ? parsed.value.spec.manifest.secrets.map((s) => s.name) : [];
    const g = await q.lastOf(stream, ["grant.observed", "grant.deleted"], Number.MAX_SAFE_INTEGER);
    const grant = g?.type === "grant.observed" ? parseGrant({ name, spec: g.data.spec }) : null;
    return { name, installedSeq: installed?.seq ?? plugin.seq, roles, grant: grant?.ok === true ? grant.value.spec : null };
  }

  /** The asked-for version's signature verdict and config verdict. */
  async #currentFacts(name: string, expected: Expected): Promise<number[]> {
    const appended: number[] = [];
    const { state: before, sources: seen } = await loadDeciderState(this.#d.store, name);
    if (before.spec === null) return appended;
    const observed = seen.plugin?.type === "plugin.observed" ? seen.plugin : null;
    const parsed = parsePlugin({ name, spec: before.spec });
    const image = parsed.ok ? parseImageRef(parsed.value.spec.image) : null;
    if (!parsed.ok || image === null || !image.ok) return appended;
    const v = await this.#verdict(image.value, parsed.value.spec.manifest, observed?.seq);
    if (v !== undefined) appended.push(v);
    const c = nextConfigVerdict(name, parsed.value.spec, seen.config);
    if (c !== null) appended.push((await this.#append(expected, "config.verdict", c, observed?.seq ?? null)).seq);
    return appended;
  }

  /** The running version's signature, checked again before it may keep running. */
  async #previousFacts(name: string): Promise<number[]> {
    const appended: number[] = [];
    const store = this.#d.store;
    // Previous: what the last decision ran or, before any, what the cluster's status said runs.
    const previous = await previousVersion(store, name);
    const deployed = previous?.version ?? null;
    if (deployed !== null) {
      const image = parseImageRef(deployed.image);
      const manifest = parseManifest(deployed.manifest);
      if (image.ok && manifest.ok) {
        const v = await this.#verdict(image.value, manifest.value, previous?.source.seq);
        if (v !== undefined) appended.push(v);
      }
    }
    return appended;
  }

  async #verdict(image: ImageRef, declared: Manifest, causedBy: number | undefined): Promise<number | undefined> {
    const cached = await this.#d.verifier.verify(image, declared);
    // An unreachable registry changes nothing we know about the image: the last verdict the log
    // holds stands (also across restarts, when this process has none cached) until a check
    // reaches the registry again. Only an image never verified is refused for it.
    if (cached.stale && (await this.#d.recorder.log.last(image.digest, manifestDigest(declared))) !== undefined) return undefined;
    return this.#d.recorder.record(cached.verdict, causedBy, declared);
  }

  /** Appends one event to the plugin's stream at the expected version, and moves the expectation on. */
  async #append<T extends EventTypeName>(expected: Expected, type: T, data: EventDataMap[T], causedBy: number | null): Promise<EventOf<T>> {
    const [e] = await this.#d.store.append([{ stream: expected.stream, type, data, actor: this.#actor, causedBy }], { expected: { [expected.stream]: expected.version } });
    if (e === undefined || !isEventOf(e, [type])) throw new Error("the store appended nothing");
    expected.version = e.version;
    return e;
  }

  async #apply(expected: Expected, name: string, desired: EventOf<"workload.desired">): Promise<number> {
    const { target } = this.#d;
    let error: string | undefined;
    try {
      // The recorded objects are the pure model's Kubernetes objects (step 4 compiled them); a
      // WebAssembly plugin's are only its ServiceAccount and its Service selecting the plugin host.
      if (desired.data.running) await target.applyPlugin(name, desired.data.objects as unknown as KubeObject[]);
      else await target.removePlugin(name);
      await this.#projector.catchUp();
      await this.publishAllowLists();
      await this.publishPluginHost();
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      this.#d.logger.error({ plugin: name, err: error }, "applying the desired workload failed");
    }
    return (await this.#append(expected, "workload.applied", appliedRecord(name, target.name, error), desired.seq)).seq;
  }
}

/** The instance Secrets of what runs now (the latest decision's permissions), by the role the manifest names (docs/adr/0198). */
async function grantedSecretsOf(store: EventLog, name: string): Promise<HostedSecret[]> {
  const d = await store.last(pluginStream(name), "rollout.decided");
  const secrets = (d?.data.plan.run?.permissions.secrets ?? []) as readonly { name: string; role?: string }[];
  return secrets.map((s) => (s.role === undefined ? { name: s.name } : { name: s.name, role: s.role }));
}
