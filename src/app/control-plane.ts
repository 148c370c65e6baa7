/**
 * `openfief up`'s composition as one value: the data folder taken (locked), the log checked, the
 * runtime (store, verifier, target, reconciler), the embedded egress proxy fed the projected
 * allow-lists, and a reconcile loop — a pass whenever the log moved, a full pass every minute so a
 * retried registry or a changed verdict is picked up. `stop()` closes in order: the loop (waiting
 * for a pass under way, without polling), the proxy (draining its tunnels), the store, the lock.
 */
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { MemoryAllowListSource, startEmbeddedEgress } from "../egress/index.js";
import type { EgressProxy } from "../egress/index.js";
import type { PluginResult } from "../reconciler/index.js";
import { allowListConfigData, Projector } from "../projections/index.js";
import { lockDataDir } from "./data-dir.js";
import type { DataLock } from "./data-dir.js";
import { AppError } from "./errors.js";
import { resetDataDir } from "./demo.js";
import { assertLogHolds } from "./integrity.js";
import { openRuntime } from "./runtime.js";
import type { Runtime } from "./runtime.js";
import { loadSettings, mergeSettings, saveSettings } from "./settings.js";
import { checkEmbeddedKey } from "./tokens.js";
import { startHostedPlugins } from "./hosted-plugins.js";
import type { HostedPlugins } from "./hosted-plugins.js";
import type { Settings } from "./settings.js";

/** Options of {@link startControlPlane}. */
export interface ControlPlaneOptions {
  readonly dataDir: string;
  /** Settings given now, laid over the ones saved in the data folder. */
  readonly settings?: Settings;
  readonly logger: Logger;
  /** How often to look for new events (ms). */
  readonly intervalMs?: number;
  /** How often to run a full pass even when the log did not move (ms). */
  readonly fullPassMs?: number;
  /** The embedded egress proxy on 127.0.0.1, or none. */
  readonly egress?: { readonly port: number; readonly dnsServers?: readonly string[] } | null;
  readonly clock?: () => Date;
  /** Start over: remove the data folder's state (log, settings, keys, cluster objects) once it is locked. */
  readonly reset?: boolean;
  /** The plugin host running WebAssembly plugins in this process (on by default); null turns it off. */
  readonly host?: { readonly unconfinedDir?: string } | null;
}

/** A running control plane. */
export interface ControlPlane {
  readonly dataDir: string;
  readonly runtime: Runtime;
  /** Where the egress proxy listens, when it runs. */
  readonly egress: { readonly host: string; readonly port: number } | null;
  /** The WebAssembly plugins this process runs, when the host is on. */
  readonly hosted: HostedPlugins | null;
  /** The control plane's metrics (the egress proxy's among them), for `/metrics`. */
  readonly metrics: Registry;
  /** Runs a reconcile pass now (after the one under way, if any) and resolves with its results. */
  pass(): Promise<PluginResult[]>;
  /** Stops everything, in order. Idempotent. */
  stop(): Promise<void>;
}

const DEFAULT_INTERVAL_MS = 300;
const DEFAULT_FULL_PASS_MS = 60_000;

/** Starts a control plane on a data folder; refuses (`conflict`) a folder another `up` holds and (`log_broken`) a log that does not hold. */
export async function startControlPlane(o: ControlPlaneOptions): Promise<ControlPlane> {
  const lock = lockDataDir(o.dataDir, o.clock);
  const metrics = new Registry();
  let rt: Runtime | null = null;
  let proxy: EgressProxy | null = null;
  try {
    if (o.reset === true) resetDataDir(o.dataDir);
    const settings = mergeSettings(loadSettings(o.dataDir), o.settings ?? {});
    rt = await openRuntime({ dataDir: o.dataDir, logger: o.logger, ...settings, ...(o.clock === undefined ? {} : { clock: o.clock }) });
    // The whole chain once at start; each pass then walks what was appended since.
    assertLogHolds(rt.store, { full: true });
    saveSettings(o.dataDir, settings);
    const projector = new Projector(rt.store);
    const allowLists = new MemoryAllowListSource(null, o.logger);
    const feedAllowLists = () => {
      projector.catchUp();
      allowLists.setData(allowListConfigData(projector));
    };
    feedAllowLists();
    let egress: { host: string; port: number } | null = null;
    if (o.egress !== null && o.egress !== undefined) {
      checkEmbeddedKey(o.dataDir);
      const started = await startEmbeddedEgress({
        dataDir: o.dataDir,
        store: rt.store,
        allowLists,
        logger: o.logger.child({ component: "egress" }),
        registry: metrics,
        ...(o.egress.dnsServers !== undefined ? { dnsServers: o.egress.dnsServers } : {}),
        options: { host: "127.0.0.1", port: o.egress.port },
      });
      proxy = started.proxy;
      egress = { host: started.host, port: started.port };
      lock.update([`egress http://${started.host}:${started.port}`]);
    }
    const unconfinedDir = o.host?.unconfinedDir ?? settings.unconfinedDir;
    const hosted = o.host === null ? null : startHostedPlugins(rt, {
      dataDir: o.dataDir,
      logger: o.logger,
      egressUrl: egress === null ? null : `http://${egress.host}:${egress.port}`,
      ...(unconfinedDir === undefined ? {} : { unconfinedDir }),
    });
    return new Loop(o, { lock, runtime: rt, proxy, egress, hosted, feedAllowLists, metrics });
  } catch (err) {
    await proxy?.close();
    await rt?.close();
    lock.release();
    if (err instanceof AppError) throw err;
    throw new AppError("bad_setting", err instanceof Error ? err.message : String(err));
  }
}

/** What the loop runs over, once started. */
interface Parts {
  readonly lock: DataLock;
  readonly runtime: Runtime;
  readonly proxy: EgressProxy | null;
  readonly egress: { readonly host: string; readonly port: number } | null;
  readonly hosted: HostedPlugins | null;
  readonly feedAllowLists: () => void;
  readonly metrics: Registry;
}

class Loop implements ControlPlane {
  readonly dataDir: string;
  readonly runtime: Runtime;
  readonly egress: { readonly host: string; readonly port: number } | null;
  readonly hosted: HostedPlugins | null;
  readonly metrics: Registry;
  #chain: Promise<PluginResult[]> = Promise.resolve([]);
  #seen = -1;
  #timer: NodeJS.Timeout | null = null;
  #full: NodeJS.Timeout | null = null;
  #stopped: Promise<void> | null = null;

  constructor(
    private readonly o: ControlPlaneOptions,
    private readonly parts: Parts,
  ) {
    this.dataDir = o.dataDir;
    this.runtime = parts.runtime;
    this.egress = parts.egress;
    this.hosted = parts.hosted;
    this.metrics = parts.metrics;
    const interval = o.intervalMs ?? DEFAULT_INTERVAL_MS;
    const tick = () => {
      this.#timer = null;
      void this.#whenMoved().finally(() => {
        if (this.#stopped === null) this.#timer = setTimeout(tick, interval);
      });
    };
    this.#timer = setTimeout(tick, interval);
    this.#full = setInterval(() => { this.#seen = -1; }, o.fullPassMs ?? DEFAULT_FULL_PASS_MS);
  }

  pass(): Promise<PluginResult[]> {
    const next = this.#chain.then(() => this.#pass(), () => this.#pass());
    this.#chain = next.catch(() => []);
    return next;
  }

  async #whenMoved(): Promise<void> {
    this.runtime.verifier.retryDue().catch(() => undefined);
    if (this.runtime.store.head() === this.#seen) return;
    await this.pass().catch(() => undefined);
  }

  async #pass(): Promise<PluginResult[]> {
    const { store, reconciler } = this.runtime;
    try {
      // Nothing acts on a log that does not hold: every pass checks what was appended since the last.
      assertLogHolds(store);
      const results = await reconciler.reconcileAll();
      this.parts.feedAllowLists();
      await this.hosted?.sync();
      this.#seen = store.head();
      return results;
    } catch (err) {
      this.o.logger.error({ err: err instanceof Error ? err.message : String(err) }, "reconcile pass failed; retrying");
      throw err;
    }
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #stop(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    if (this.#full !== null) clearInterval(this.#full);
    await this.#chain.catch(() => undefined);
    try {
      await this.hosted?.close();
      await this.parts.proxy?.close();
    } finally {
      await this.runtime.close();
      this.parts.lock.release();
    }
  }
}
