/**
 * The reconcile loop: observe → decide → apply, each step leaving events.
 *
 * For one plugin it (1) verifies the image the spec asks for and the image that runs now, and
 * records a `signature.verdict` when the verdict changed; (2) checks the config against its
 * schema and records a `config.verdict` when that changed; (3) runs the pure rollout decider over
 * the log and appends `rollout.decided` only when the plan differs from the last one, naming the
 * newest input as its cause; (4) compiles the desired workload of whatever runs and appends
 * `workload.desired` when it changed; (5) applies it through the target unless the log already
 * says it was applied, and appends `workload.applied`.
 *
 * Every step first reads what the log already holds, so a process killed at any point and started
 * again converges to the same state with no event duplicated and no decision lost.
 */
import { canonicalize } from "json-canonicalize";
import type { Logger } from "pino";
import type { EventStore, RolloutDecided, StoredEvent, WorkloadDesired } from "../events/index.js";
import { pluginStream, StoreError } from "../events/index.js";
import { compile } from "../plugins/compile.js";
import type { Topology } from "../plugins/compile.js";
import { validateConfig } from "../plugins/config-schema.js";
import { effective } from "../plugins/effective.js";
import { formatHostPort } from "../plugins/egress-host.js";
import { formatErrors } from "../plugins/errors.js";
import { parseImageRef } from "../plugins/image-ref.js";
import type { ImageRef } from "../plugins/image-ref.js";
import { buildObjects, objectsToJSON } from "../plugins/objects.js";
import type { GrantSpec, JsonValue, Manifest } from "../plugins/types.js";
import { parseGrant, parseManifest, parsePlugin } from "../plugins/validate.js";
import { allowListConfigData } from "../projections/allowlists.js";
import { decideRollout, deployedBy, loadDeciderState } from "../projections/index.js";
import type { DeciderSources } from "../projections/index.js";
import { Projector } from "../projections/projector.js";
import { previousVersion } from "../projections/queries.js";
import type { PluginState } from "../projections/folds.js";
import type { ImageVerifier } from "../trust/verifier.js";
import type { VerdictRecorder } from "../trust/verdict-recorder.js";
import type { KubeObject, Target } from "./target.js";

/** What the reconciler needs from the outside, passed in (ports). */
export interface ReconcilerDeps {
  readonly store: EventStore;
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
}

const CONFLICT_RETRIES = 5;

export class Reconciler {
  readonly #d: ReconcilerDeps;
  readonly #actor: string;
  readonly #projector: Projector;
  /** The allow-list data last published, so an unchanged set is not written again. */
  #publishedAllowLists: string | null = null;

  constructor(deps: ReconcilerDeps) {
    this.#d = deps;
    this.#actor = deps.actor ?? "reconciler";
    this.#projector = new Projector(deps.store);
  }

  /** Reconciles every plugin the log knows, prunes what the target holds for unknown ones, publishes allow-lists. */
  async reconcileAll(): Promise<PluginResult[]> {
    this.#projector.catchUp();
    const names = new Set(this.#projector.rows<PluginState>("plugins").keys());
    const results: PluginResult[] = [];
    for (const name of [...names].sort()) results.push(await this.reconcile(name));
    for (const held of await this.#d.target.listPlugins()) {
      if (!names.has(held)) {
        await this.#d.target.removePlugin(held);
        this.#d.logger.info({ plugin: held }, "removed objects of a plugin the log does not know");
      }
    }
    await this.publishAllowLists();
    return results;
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
    this.#projector.catchUp();
    const data = allowListConfigData(this.#projector);
    const text = canonicalize(data);
    if (text === this.#publishedAllowLists) return;
    await this.#d.target.applyAllowLists(data);
    this.#publishedAllowLists = text;
  }

  async #reconcileOnce(name: string): Promise<PluginResult> {
    const { store } = this.#d;
    const stream = pluginStream(name);
    const appended: number[] = [];
    // Optimistic concurrency: every append to the plugin's stream expects the version read here,
    // before any fact, so a concurrent write (an apply, an approval) makes this pass start over
    // on the new facts instead of deciding on stale ones.
    const expected = { stream, version: store.version(stream) };
    const { state: before, sources: seen } = loadDeciderState(store, name);
    const observed = seen.plugin?.type === "plugin.observed" ? seen.plugin : null;
    const spec = before.spec;

    // 1–2. Facts the decider needs: verdicts for the asked-for and the running image, the config verdict.
    if (spec !== null) {
      const parsed = parsePlugin({ name, spec });
      if (parsed.ok) {
        const image = parseImageRef(parsed.value.spec.image);
        if (image.ok) {
          const v = await this.#verdict(image.value, parsed.value.spec.manifest, observed?.seq);
          if (v !== undefined) appended.push(v);
          const c = this.#configVerdict(expected, seen.config, name, parsed.value.spec, observed?.seq ?? null);
          if (c !== undefined) appended.push(c);
        }
      }
    }
    const lastDecision = store.last(stream, "rollout.decided") as StoredEvent<RolloutDecided> | null;
    // Previous: what the last decision ran or, before any, what the cluster's status said runs.
    const previous = previousVersion(store, name);
    const deployed = previous?.version ?? null;
    if (deployed !== null) {
      // Before the previous version may keep running, its own signature is checked again.
      const image = parseImageRef(deployed.image);
      const manifest = parseManifest(deployed.manifest);
      if (image.ok && manifest.ok) {
        const v = await this.#verdict(image.value, manifest.value, previous?.source.seq);
        if (v !== undefined) appended.push(v);
      }
    }

    // 3. Decide, from the log alone.
    const { state, sources } = loadDeciderState(store, name);
    let decision: StoredEvent<RolloutDecided> | null = lastDecision;
    const decided = spec === null && lastDecision === null ? null : decideRollout(state);
    // Appended only when the plan changes: re-deciding after our own decision sees it as the
    // previous version (new inputs, same plan), and that is not a new decision.
    if (decided !== null && (lastDecision === null || canonicalize(lastDecision.data.plan) !== canonicalize(decided.plan))) {
      const e = this.#append(expected, "rollout.decided", decided, newestCause(sources));
      decision = e as StoredEvent<RolloutDecided>;
      appended.push(e.seq);
      this.#d.logger.info({ plugin: name, seq: e.seq, outcome: (decided.plan as { outcome?: string }).outcome }, "rollout decided");
    }

    // 4. The desired workload of whatever runs.
    const desired = decision === null ? null : this.#desired(name, decision.data);
    let desiredEvent = store.last(stream, "workload.desired") as StoredEvent<WorkloadDesired> | null;
    if (desired !== null && (desiredEvent === null || canonicalize(desiredEvent.data) !== canonicalize(desired))) {
      desiredEvent = this.#append(expected, "workload.desired", desired, decision?.seq ?? null) as StoredEvent<WorkloadDesired>;
      appended.push(desiredEvent.seq);
    }

    // 5. Apply, unless the log says this desired state was already applied by this target.
    if (desiredEvent !== null) {
      const applied = store.last(stream, "workload.applied");
      const done = applied !== null && applied.seq > desiredEvent.seq && (applied.data as { ok: boolean; target: string }).ok
        && (applied.data as { target: string }).target === this.#d.target.name;
      if (!done) {
        const seq = await this.#apply(expected, name, desiredEvent);
        appended.push(seq);
      }
    }
    return { name, appended, decision: decision?.data ?? null };
  }

  async #verdict(image: ImageRef, declared: Manifest, causedBy: number | undefined): Promise<number | undefined> {
    const cached = await this.#d.verifier.verify(image, declared);
    // An unreachable registry changes nothing we know about the image: the last verdict the log
    // holds stands (also across restarts, when this process has none cached) until a check
    // reaches the registry again. Only an image never verified is refused for it.
    if (cached.stale && this.#d.recorder.log.last(image.digest) !== undefined) return undefined;
    return this.#d.recorder.record(cached.verdict, causedBy);
  }

  /** Appends one event to the plugin's stream at the expected version, and moves the expectation on. */
  #append(expected: { stream: string; version: number }, type: string, data: unknown, causedBy: number | null): StoredEvent {
    const [e] = this.#d.store.append([{ stream: expected.stream, type, data, actor: this.#actor, causedBy }], { expected: { [expected.stream]: expected.version } });
    if (e === undefined) throw new Error("the store appended nothing");
    expected.version = e.version;
    return e;
  }

  /** Records whether the config matches its schema, unless the last verdict for this image says the same. */
  #configVerdict(
    expected: { stream: string; version: number },
    last: StoredEvent | null,
    name: string,
    spec: { image: string; manifest: Manifest; config?: JsonValue },
    causedBy: number | null,
  ): number | undefined {
    const { image, manifest, config } = spec;
    const errors = manifest.configSchema === undefined ? [] : validateConfig(manifest.configSchema, config, "spec.config");
    const data = { name, image, ok: errors.length === 0, errors: errors.map((e) => ({ code: e.code, path: e.path, message: e.message })) };
    if (last !== null && canonicalize(last.data) === canonicalize(data)) return undefined;
    return this.#append(expected, "config.verdict", data, causedBy).seq;
  }

  /** The desired workload for a recorded decision: the objects of what runs, or nothing. */
  #desired(name: string, decision: RolloutDecided): WorkloadDesired {
    const run = deployedBy(decision.plan);
    const stopped: WorkloadDesired = { name, running: false, objects: [], allowList: [] };
    if (run === null) return stopped;
    const image = parseImageRef(run.image);
    const manifest = parseManifest(run.manifest);
    const grant = parseGrant({ name, spec: decision.inputs.grant });
    if (!image.ok || !manifest.ok || !grant.ok) {
      this.#d.logger.error({ plugin: name }, "a recorded decision runs a version that no longer parses; running nothing");
      return stopped;
    }
    const perms = effective(manifest.value, grant.value.spec as GrantSpec);
    if (!perms.ok) return stopped;
    const workload = compile({ name, image: image.value, ...(run.config === undefined ? {} : { config: run.config }) }, perms.value, this.#d.topology);
    if (!workload.ok) {
      this.#d.logger.error({ plugin: name, problems: formatErrors(workload.errors) }, "cannot compile the workload; running nothing");
      return stopped;
    }
    return {
      name,
      running: true,
      image: image.value.toString(),
      objects: objectsToJSON(buildObjects(workload.value)) as JsonValue[],
      allowList: workload.value.allowList.map(formatHostPort),
    };
  }

  async #apply(expected: { stream: string; version: number }, name: string, desired: StoredEvent<WorkloadDesired>): Promise<number> {
    const { target } = this.#d;
    let error: string | undefined;
    try {
      if (desired.data.running) await target.applyPlugin(name, desired.data.objects as unknown as KubeObject[]);
      else await target.removePlugin(name);
      this.#projector.catchUp();
      await this.publishAllowLists();
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      this.#d.logger.error({ plugin: name, err: error }, "applying the desired workload failed");
    }
    const data = { name, target: target.name, ok: error === undefined, ...(error === undefined ? {} : { error }) };
    return this.#append(expected, "workload.applied", data, desired.seq).seq;
  }
}

/** The newest event among the decider's inputs: the cause a decision names. */
function newestCause(s: DeciderSources): number | null {
  const seqs = [s.plugin, s.grant, s.config, s.currentVerdict, s.previousVerdict].flatMap((e) => (e === null ? [] : [e.seq]));
  return seqs.length === 0 ? null : Math.max(...seqs);
}
