/**
 * The Kubernetes source: Plugin and PluginGrant resources in the `openfief` namespace, followed
 * with client-node informers and fed to callbacks.
 *
 * client-node 1.4's informer relists by itself only after a 410; any other error (an HTTP 500, a
 * reset connection) emits `error` and stops it for good, and a half-open watch goes silent with no
 * error at all (STACK.md). So this source:
 * - restarts a stopped informer with exponential backoff (timers injectable), resetting the
 *   backoff once an informer ran longer than the longest delay without failing;
 * - relists everything periodically (default every 5 minutes) and re-emits every object, plus a
 *   null for every object that vanished, so a silent watch costs at most one period;
 * - treats every event only as a hint: callbacks carry the whole current object (or null), never
 *   a delta, and the operator reconciles from them idempotently;
 * - records the time of the last successful list, for `/readyz` and metrics.
 */
import { CustomObjectsApi, makeInformer } from "@kubernetes/client-node";
import type { Informer, KubeConfig, KubernetesListObject, KubernetesObject } from "@kubernetes/client-node";
import { API_GROUP, API_VERSION, NAMESPACE } from "../plugins/index.js";

/** A Plugin or PluginGrant as read from the cluster (spec unvalidated). */
export interface CustomResource extends KubernetesObject {
  spec?: unknown;
  status?: unknown;
}

/** Where the source delivers what it reads. */
export interface SourceCallbacks {
  /** A Plugin as the cluster holds it now, or null when it is gone. */
  onPlugin(name: string, obj: CustomResource | null): void;
  /** A PluginGrant as the cluster holds it now, or null when it is gone. */
  onGrant(name: string, obj: CustomResource | null): void;
  /** After every successful full relist (of both kinds): a good moment to reconcile everything. */
  onRelist?(): void;
  /** An informer failed and will be restarted after `delayMs`. The message holds no token. */
  onError?(kind: "plugins" | "plugingrants", message: string, delayMs: number): void;
}

/** Timers, injectable so tests control backoff and relists. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Options of {@link KubernetesSource}. */
export interface SourceOptions {
  readonly namespace?: string;
  /** Period of the full relist; default five minutes. */
  readonly relistIntervalMs?: number;
  /** First restart delay after an informer stops; doubled per consecutive failure. Default 1 s. */
  readonly initialBackoffMs?: number;
  /** Longest restart delay; default 60 s. */
  readonly maxBackoffMs?: number;
  readonly timers?: Timers;
  readonly now?: () => Date;
}

const REAL_TIMERS: Timers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

type Plural = "plugins" | "plugingrants";

/** Follows one kind: an informer, its restarts, and the names it has reported as present. */
class Follower {
  readonly known = new Set<string>();
  informer: Informer<CustomResource> | undefined;
  attempts = 0;
  startedAt = 0;
  restartTimer: unknown = undefined;

  constructor(
    readonly plural: Plural,
    readonly emit: (name: string, obj: CustomResource | null) => void,
  ) {}
}

/** Plugin and PluginGrant informers with restart, relist and a last-list timestamp. */
export class KubernetesSource {
  readonly #kc: KubeConfig;
  readonly #api: CustomObjectsApi;
  readonly #callbacks: SourceCallbacks;
  readonly #namespace: string;
  readonly #relistMs: number;
  readonly #initialBackoff: number;
  readonly #maxBackoff: number;
  readonly #timers: Timers;
  readonly #now: () => Date;
  readonly #followers: Follower[];
  #lastList: Date | null = null;
  #relistTimer: unknown = undefined;
  #running = false;
  #synced = false;

  constructor(kc: KubeConfig, callbacks: SourceCallbacks, options: SourceOptions = {}) {
    this.#kc = kc;
    this.#api = kc.makeApiClient(CustomObjectsApi);
    this.#callbacks = callbacks;
    this.#namespace = options.namespace ?? NAMESPACE;
    this.#relistMs = options.relistIntervalMs ?? 5 * 60_000;
    this.#initialBackoff = options.initialBackoffMs ?? 1_000;
    this.#maxBackoff = options.maxBackoffMs ?? 60_000;
    this.#timers = options.timers ?? REAL_TIMERS;
    this.#now = options.now ?? (() => new Date());
    this.#followers = [
      new Follower("plugins", (n, o) => this.#callbacks.onPlugin(n, o)),
      new Follower("plugingrants", (n, o) => this.#callbacks.onGrant(n, o)),
    ];
  }

  /**
   * Lists both kinds (emitting every object), then starts the informers and the relist timer.
   * Rejects when the first list fails: the caller decides whether to retry or exit.
   */
  async start(): Promise<void> {
    this.#running = true;
    await this.relist();
    this.#synced = true;
    for (const f of this.#followers) this.#startInformer(f);
    this.#scheduleRelist();
  }

  /** Stops informers and timers. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#timers.clearTimeout(this.#relistTimer);
    for (const f of this.#followers) {
      this.#timers.clearTimeout(f.restartTimer);
      const informer = f.informer;
      f.informer = undefined;
      if (informer !== undefined) await informer.stop();
    }
  }

  /** When a full list of either kind last succeeded, or null before the first. */
  lastSuccessfulList(): Date | null {
    return this.#lastList;
  }

  /** Whether the first full list of both kinds has completed. */
  synced(): boolean {
    return this.#synced;
  }

  /**
   * Lists both kinds now and emits every object, plus null for every name previously reported
   * that is gone. Called by the periodic timer; callable directly (for example on leadership).
   */
  async relist(): Promise<void> {
    for (const f of this.#followers) {
      const list = await this.#list(f.plural);
      const seen = new Set<string>();
      for (const item of list.items) {
        const name = item.metadata?.name;
        if (name === undefined) continue;
        seen.add(name);
        f.known.add(name);
        f.emit(name, item);
      }
      for (const name of [...f.known]) {
        if (seen.has(name)) continue;
        f.known.delete(name);
        f.emit(name, null);
      }
    }
    this.#callbacks.onRelist?.();
  }

  async #list(plural: Plural): Promise<KubernetesListObject<CustomResource>> {
    const list = (await this.#api.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: this.#namespace, plural })) as KubernetesListObject<CustomResource>;
    this.#lastList = this.#now();
    return list;
  }

  #startInformer(f: Follower): void {
    if (!this.#running) return;
    const path = `/apis/${API_GROUP}/${API_VERSION}/namespaces/${encodeURIComponent(this.#namespace)}/${f.plural}`;
    // The informer lists on start and after a 410; its fresh cache cannot know what vanished
    // while it was down, so report those names as gone here.
    const listFn = async (): Promise<KubernetesListObject<CustomResource>> => {
      const list = await this.#list(f.plural);
      const present = new Set(list.items.map((i) => i.metadata?.name));
      for (const name of [...f.known]) {
        if (present.has(name)) continue;
        f.known.delete(name);
        f.emit(name, null);
      }
      return list;
    };
    const informer = makeInformer<CustomResource>(this.#kc, path, listFn);
    const upsert = (obj: CustomResource): void => {
      const name = obj.metadata?.name;
      if (name === undefined || f.informer !== informer) return;
      f.known.add(name);
      f.emit(name, obj);
    };
    informer.on("add", upsert);
    informer.on("update", upsert);
    informer.on("delete", (obj: CustomResource) => {
      const name = obj.metadata?.name;
      if (name === undefined || f.informer !== informer) return;
      f.known.delete(name);
      f.emit(name, null);
    });
    informer.on("error", (err: unknown) => {
      if (f.informer !== informer) return;
      this.#restartLater(f, err);
    });
    f.informer = informer;
    f.startedAt = this.#now().getTime();
    informer.start().catch((err: unknown) => {
      if (f.informer === informer) this.#restartLater(f, err);
    });
  }

  #restartLater(f: Follower, err: unknown): void {
    if (!this.#running) return;
    const old = f.informer;
    f.informer = undefined;
    void old?.stop();
    // A run that outlived the longest delay was healthy: start the backoff over.
    if (this.#now().getTime() - f.startedAt > this.#maxBackoff) f.attempts = 0;
    const delay = Math.min(this.#maxBackoff, this.#initialBackoff * 2 ** f.attempts);
    f.attempts += 1;
    this.#callbacks.onError?.(f.plural, describe(err), delay);
    this.#timers.clearTimeout(f.restartTimer);
    f.restartTimer = this.#timers.setTimeout(() => {
      f.restartTimer = undefined;
      this.#startInformer(f);
    }, delay);
  }

  #scheduleRelist(): void {
    if (!this.#running) return;
    this.#relistTimer = this.#timers.setTimeout(() => {
      this.relist()
        .catch((err: unknown) => this.#callbacks.onError?.("plugins", `relist failed: ${describe(err)}`, this.#relistMs))
        .finally(() => this.#scheduleRelist());
    }, this.#relistMs);
  }
}

function describe(err: unknown): string {
  if (typeof err === "object" && err !== null) {
    const e = err as { statusCode?: unknown; code?: unknown; message?: unknown };
    const status = typeof e.statusCode === "number" ? e.statusCode : typeof e.code === "number" ? e.code : undefined;
    const msg = typeof e.message === "string" ? e.message : "error";
    return status === undefined ? msg : `HTTP ${status}: ${msg}`;
  }
  return String(err);
}
