/**
 * `openfief up`'s composition as one value: the data folder taken (locked), the log checked, the
 * runtime (store, verifier, target, reconciler), the embedded egress proxy fed the projected
 * allow-lists, a reconcile loop — a pass whenever the log moved, a full pass every minute so a
 * retried registry or a changed verdict is picked up — and, when asked, the owner's HTTP face (the
 * API and the console of `src/server`), the plugin host running WebAssembly plugins, and, when asked, the views
 * part (the mint, the gateway and the plugin proxy on their own origins). `stop()` closes in
 * order: the loop (waiting for a pass under way, without polling), the HTTP face and the views'
 * listeners (so no request acts on a store being closed; open watches are cut), the plugin host,
 * the proxy (draining its tunnels), the store, the lock.
 */
import type { Logger } from "pino";
import { ANONYMOUS_LIMITS, MemoryAllowListSource, startEmbeddedEgress } from "../egress/index.js";
import type { ConnectFn, EgressProxy } from "../egress/index.js";
import { CheckpointSchedule, refusalBudgetProblem } from "../events/index.js";
import type { EventLog } from "../events/index.js";
import type { PluginResult } from "../reconciler/index.js";
import { allowListConfigData, Projector } from "../projections/index.js";
import { AppError, assertLogHolds, checkEmbeddedKey, checkLimitsSettings, ControlPlaneMetrics, loadLogKey, loadSettings, lockDataDir, mergeSettings, resetDataDir, saveSettings, Sessions, VIEW_DEFAULTS, Witnesses } from "../app/index.js";
import type { DataLock, Face, LogKey, Readiness, Settings, StoreLocation, ViewsFace, WitnessTarget , SyncScheduler } from "../app/index.js";
import type { ServerOptions } from "../server/index.js";
import { isListenError, listenRefused } from "./listeners.js";
import { keepProjections } from "./kept-projections.js";
import { openRuntime } from "./runtime.js";
import type { Runtime } from "./runtime.js";
import { startHostedPlugins } from "./hosted-plugins.js";
import type { HostedPlugins } from "./hosted-plugins.js";
import type { RunningViews, ViewsOptions } from "./views.js";
import { startSyncs } from "../app/index.js";
import type { CoreApi } from "../app/index.js";
import { embeddedCoreApi } from "./core-api.js";

/** Options of {@link startControlPlane}. */
export interface ControlPlaneOptions {
  readonly dataDir: string;
  /**
   * The log, when not the data folder's own file: a SQLite file elsewhere, or a PostgreSQL
   * database that the reconciler, the egress proxy's writer thread, the plugin host and the
   * console all use (the data folder keeps the settings, keys and sessions).
   */
  readonly store?: StoreLocation | null;
  /** Settings given now, laid over the ones saved in the data folder. */
  readonly settings?: Settings;
  readonly logger: Logger;
  /** How often to look for new events (ms). */
  readonly intervalMs?: number;
  /** How often to run a full pass even when the log did not move (ms). */
  readonly fullPassMs?: number;
  /**
   * The embedded egress proxy on 127.0.0.1, or none. `connect` replaces its dialer (the benchmark
   * maps the checked public address to a local server: nothing leaves the machine).
   */
  readonly egress?: { readonly port: number; readonly dnsServers?: readonly string[]; readonly connect?: ConnectFn } | null;
  readonly clock?: () => Date;
  /** Start over: remove the data folder's state (log, settings, keys, cluster objects) once it is locked. */
  readonly reset?: boolean;
  /** Where the owner's HTTP face (API and console) listens, started once the log is checked; none without it. */
  readonly server?: ServerOptions;
  /** The metrics to count into (a fresh registry when absent). */
  readonly metrics?: ControlPlaneMetrics;
  /** The connectors' sync scheduler (docs/adr/0179), with the plugin host; off unless given. */
  readonly syncs?: { readonly recheckMs?: number } | null;
  /** The plugin host running WebAssembly plugins in this process (on by default); null turns it off. */
  readonly host?: { readonly unconfinedDir?: string } | null;
  /**
   * The views part (off unless given): where its listeners bind, who may mint, a shorter token
   * lifetime for tests. The origins and the cluster ID are settings.
   */
  readonly views?: Partial<Pick<ViewsOptions, "host" | "sessions" | "roles" | "ttlSeconds" | "upstream">> | null;
  /** Witnesses each signed checkpoint is submitted to, their cosignatures kept beside the log (docs/adr/0155). */
  readonly witnesses?: readonly WitnessTarget[];
  /**
   * Signed checkpoints of the tree over the log (on by default; null turns them off): every
   * `every` events and every `intervalMs` ms, signed with the key of `keyFile`, else of
   * `OPENFIEF_LOG_KEY_FILE`, else the data folder's `log-key` (made on first use; docs/adr/0141, 0142).
   */
  readonly checkpoints?: { readonly every?: number; readonly intervalMs?: number; readonly keyFile?: string } | null;
}

/** A running control plane. */
export interface ControlPlane {
  readonly dataDir: string;
  readonly runtime: Runtime;
  /** Where the egress proxy listens, when it runs. */
  readonly egress: { readonly host: string; readonly port: number } | null;
  /** Where the API and console listen (`url`), and where a browser opens them (`origin`), when they run. */
  readonly server: { readonly url: string; readonly origin: string } | null;
  /** The WebAssembly plugins this process runs, when the host is on. */
  readonly hosted: HostedPlugins | null;
  /** The console's sign-in links and sessions (the data folder's session key). */
  readonly sessions: Sessions;
  /** The control plane's metrics (the egress proxy's and the views' among them, in `metrics.registry`), for `/metrics`. */
  readonly metrics: ControlPlaneMetrics;
  /** The views part, when it runs: its origins and the mint the faces mount. */
  readonly views: RunningViews | null;
  /** The checkpoints' schedule, when the log signs them. */
  readonly checkpoints: CheckpointSchedule | null;
  /** The log's public key and origin, when it signs checkpoints. */
  readonly logKey: { readonly origin: string; readonly verifierKey: string } | null;
  readiness(): Readiness;
  /** Runs a reconcile pass now (after the one under way, if any) and resolves with its results. */
  pass(): Promise<PluginResult[]>;
  /** Stops everything, in order. Idempotent. */
  stop(): Promise<void>;
}

const DEFAULT_INTERVAL_MS = 300;
const DEFAULT_FULL_PASS_MS = 60_000;

/** Starts a control plane on a data folder; refuses (`conflict`) a folder another `up` holds and (`log_broken`) a log that does not hold. */
export async function startControlPlane(o: ControlPlaneOptions): Promise<ControlPlane> {
  if (o.server !== undefined) {
    // A listener beyond this machine without TLS is refused before the data folder is taken.
    const { checkListen } = await import("../server/index.js");
    checkListen(o.server);
  }
  const lock = lockDataDir(o.dataDir, o.clock);
  const opened: Opened = { rt: null, stopProjections: null, proxy: null, hosted: null, face: null, core: null, views: null, checkpoints: null, witnesses: null };
  try {
    return await compose(o, lock, o.metrics ?? new ControlPlaneMetrics(), opened);
  } catch (err) {
    await opened.witnesses?.stop();
    await opened.face?.close();
    await opened.core?.close();
    await opened.views?.close();
    await opened.hosted?.close();
    await opened.proxy?.close();
    opened.stopProjections?.();
    await opened.checkpoints?.stop();
    await opened.rt?.close();
    lock.release();
    if (err instanceof AppError) throw err;
    throw new AppError("bad_setting", err instanceof Error ? err.message : String(err));
  }
}

/** What {@link compose} opened so far, for closing it when a later part fails. */
interface Opened {
  rt: Runtime | null;
  stopProjections: (() => void) | null;
  proxy: EgressProxy | null;
  hosted: HostedPlugins | null;
  face: Face | null;
  core: CoreApi | null;
  views: RunningViews | null;
  witnesses: Witnesses | null;
  checkpoints: CheckpointSchedule | null;
}

/**
 * The witnesses each recorded checkpoint is submitted to, when any: never in the append path, each
 * asked on its own with a deadline (docs/adr/0155). Kept in `opened` so a later failure stops them.
 */
async function startWitnesses(o: ControlPlaneOptions, store: EventLog, metrics: ControlPlaneMetrics, opened: Opened): Promise<Witnesses | null> {
  const targets = o.witnesses ?? [];
  if (targets.length === 0) return null;
  const witnesses = await Witnesses.start(store, targets, { logger: o.logger, registry: metrics.registry, ...(o.clock === undefined ? {} : { clock: o.clock }) });
  opened.witnesses = witnesses;
  witnesses.follow();
  return witnesses;
}

/** The log's key and the schedule that signs its checkpoints, unless turned off. */
function startCheckpoints(o: ControlPlaneOptions, store: EventLog): { key: LogKey; schedule: CheckpointSchedule } | null {
  if (o.checkpoints === null) return null;
  const c = o.checkpoints ?? {};
  const key = loadLogKey({ ...(c.keyFile === undefined ? {} : { file: c.keyFile }), env: process.env, dataDir: o.dataDir });
  if (key.created) o.logger.info({ path: key.path, key: key.verifierKey }, "made the log's signing key");
  const log = o.logger.child({ component: "checkpoints" });
  const schedule = new CheckpointSchedule(store, key.signer, {
    ...(c.every === undefined ? {} : { every: c.every }),
    ...(c.intervalMs === undefined ? {} : { intervalMs: c.intervalMs }),
    onCheckpoint: (cp) => { log.debug({ size: cp.size, seq: cp.seq }, "signed a checkpoint"); },
    onError: (err) => { log.error({ err: err instanceof Error ? err.message : String(err) }, "signing a checkpoint failed; trying again"); },
  });
  schedule.trigger();
  return { key, schedule };
}

async function compose(o: ControlPlaneOptions, lock: DataLock, metrics: ControlPlaneMetrics, opened: Opened): Promise<ControlPlane> {
  if (o.reset === true) resetDataDir(o.dataDir);
  const settings = mergeSettings(loadSettings(o.dataDir), o.settings ?? {});
  checkLimitsSettings(settings);
  const rt = await openRuntime({ dataDir: o.dataDir, logger: o.logger, ...settings, ...(o.store === undefined ? {} : { store: o.store }), ...(o.clock === undefined ? {} : { clock: o.clock }), instrument: (s) => metrics.timed(s) });
  opened.rt = rt;
  // The whole chain once at start; each pass then walks what was appended since.
  await assertLogHolds(rt.store, { full: true });
  saveSettings(o.dataDir, settings);
  const signing = startCheckpoints(o, rt.store);
  opened.checkpoints = signing?.schedule ?? null;
  const logKey = signing === null ? null : { origin: signing.key.origin, verifierKey: signing.key.verifierKey };
  const projector = new Projector(rt.store);
  const allowLists = new MemoryAllowListSource(null, o.logger);
  const feedAllowLists = async (): Promise<void> => {
    await projector.catchUp();
    allowLists.setData(await allowListConfigData(projector));
  };
  await feedAllowLists();
  const stopProjections = keepProjections(rt.store, o.logger);
  opened.stopProjections = stopProjections;
  const started = o.egress === null || o.egress === undefined ? null : await startEgress(o, o.egress, { store: rt.store, allowLists, metrics, anonymousLimits: settings.egressRefusals });
  opened.proxy = started?.proxy ?? null;
  const egress = started === null ? null : { host: started.host, port: started.port };
  const serving = egress === null ? [] : [`egress http://${egress.host}:${egress.port}`];
  lock.update(serving);
  opened.hosted = startHost(o, rt, settings, egress, metrics);
  const sessions = await Sessions.open(o.dataDir, o.clock);
  // The views' listeners first (their origins go into the console's pages), serving once the console's origin is known.
  const views = await openViews(o, settings, rt, metrics, sessions);
  opened.views = views;
  const state: LoopState = { firstPass: false, failure: null, stopping: false };
  const face = o.server === undefined ? null : await startFace(o, o.server, { store: rt.store, sessions, metrics, state, views, consoleOrigin: consoleOriginOf(settings), logKey, opened });
  opened.face = face;
  lock.update([...serving, ...serveViews(views, settings, face), ...(face === null ? [] : [`console ${face.origin}`])]);
  return new Loop(o, {
    lock, runtime: rt, proxy: opened.proxy, egress, hosted: opened.hosted, face, core: opened.core, views, sessions, metrics, state, feedAllowLists, stopProjections,
    witnesses: await startWitnesses(o, rt.store, metrics, opened), checkpoints: opened.checkpoints, logKey,
  });
}

/**
 * Lets the views serve, framed only by the console: at the console's canonical origin (the
 * configured one, else the console's own URL, else the default), minted for only from the origins
 * the console answers at — none of which may share a site with the views. Returns what the lock
 * should say they serve.
 */
function serveViews(views: RunningViews | null, settings: Settings, face: Face | null): string[] {
  if (views === null) return [];
  const origin = settings.consoleOrigin ?? face?.origin ?? VIEW_DEFAULTS.consoleOrigin;
  views.serve({ origin, origins: face?.origins ?? [origin], tls: face?.tls ?? false });
  return [`plugin-proxy ${views.pluginProxyOrigin}`, `gateway ${views.gatewayOrigin}`];
}

/** The configured console origin, checked to be an origin (it becomes the console's canonical address). */
function consoleOriginOf(settings: Settings): string | undefined {
  const c = settings.consoleOrigin;
  if (c === undefined) return undefined;
  let origin: string;
  try {
    origin = new URL(c).origin;
  } catch {
    origin = "null";
  }
  if (origin !== c) throw new AppError("bad_setting", `the console origin must be written as an origin, such as http://127.0.0.1:4780, not ${JSON.stringify(c.slice(0, 100))}`, "consoleOrigin");
  return c;
}

/** The views part over the runtime, when asked for, with the settings' origins (or the defaults) and the console's sessions. */
async function openViews(o: ControlPlaneOptions, settings: Settings, rt: Runtime, metrics: ControlPlaneMetrics, sessions: Sessions): Promise<RunningViews | null> {
  if (o.views === null || o.views === undefined) return null;
  // Loaded here: the views part brings the Connect stack, which other commands do without.
  const { sessionVerifier, startViews } = await import("./views.js");
  return startViews({
    ...o.views, sessions: o.views.sessions ?? sessionVerifier(sessions),
    dataDir: o.dataDir, store: rt.store, sourceFor: rt.sourceFor, logger: o.logger, registry: metrics.registry, ...(o.clock === undefined ? {} : { clock: o.clock }),
    settings: {
      clusterId: settings.clusterId ?? VIEW_DEFAULTS.clusterId,
      ...(settings.consoleOrigin === undefined ? {} : { consoleOrigin: settings.consoleOrigin }),
      pluginProxyOrigin: settings.pluginProxyOrigin ?? VIEW_DEFAULTS.pluginProxyOrigin,
      gatewayOrigin: settings.gatewayOrigin ?? VIEW_DEFAULTS.gatewayOrigin,
    },
    ...(settings.gatewayLimits === undefined ? {} : { limits: settings.gatewayLimits }),
  });
}

/** The embedded egress proxy on 127.0.0.1, fed the projected allow-lists, counting into the control plane's registry. */
async function startEgress(o: ControlPlaneOptions, e: NonNullable<ControlPlaneOptions["egress"]>, p: { store: EventLog; allowLists: MemoryAllowListSource; metrics: ControlPlaneMetrics; anonymousLimits: Settings["egressRefusals"] }) {
  checkEmbeddedKey(o.dataDir);
  const budget = refusalBudgetProblem({ ...ANONYMOUS_LIMITS, ...p.anonymousLimits });
  if (budget !== null) throw new AppError("bad_setting", `egressRefusals: ${budget}`, "egressRefusals");
  try {
    return await startEmbeddedEgressOn(o, e, p);
  } catch (err) {
    if (isListenError(err)) throw listenRefused("egress", `127.0.0.1:${e.port}`, err.code);
    throw err;
  }
}

function startEmbeddedEgressOn(o: ControlPlaneOptions, e: NonNullable<ControlPlaneOptions["egress"]>, p: { store: EventLog; allowLists: MemoryAllowListSource; metrics: ControlPlaneMetrics; anonymousLimits: Settings["egressRefusals"] }) {
  return startEmbeddedEgress({
    dataDir: o.dataDir,
    store: p.store,
    // The writer thread's own connections to the same PostgreSQL log.
    ...(o.store?.kind === "postgres" ? { storeUrl: o.store.url } : {}),
    allowLists: p.allowLists,
    logger: o.logger.child({ component: "egress" }),
    registry: p.metrics.registry,
    ...(e.dnsServers !== undefined ? { dnsServers: e.dnsServers } : {}),
    ...(p.anonymousLimits !== undefined ? { anonymousLimits: p.anonymousLimits } : {}),
    ...(e.connect !== undefined ? { connect: e.connect } : {}),
    options: { host: "127.0.0.1", port: e.port },
  });
}

/** The plugin host, unless turned off; its plugins' HTTP goes through the egress proxy when one runs; its metrics join the control plane's. */
function startHost(o: ControlPlaneOptions, rt: Runtime, settings: Settings, egress: { host: string; port: number } | null, metrics: ControlPlaneMetrics): HostedPlugins | null {
  if (o.host === null) return null;
  const unconfinedDir = o.host?.unconfinedDir ?? settings.unconfinedDir;
  return startHostedPlugins(rt, {
    dataDir: o.dataDir,
    logger: o.logger,
    // The host's metrics on the control plane's /metrics, as on the cluster's plugin host's health port.
    registry: metrics.registry,
    egressUrl: egress === null ? null : `http://${egress.host}:${egress.port}`,
    ...(unconfinedDir === undefined ? {} : { unconfinedDir }),
  });
}

/** The HTTP face, handed what it serves. The server is loaded only when asked for. */
async function startFace(o: ControlPlaneOptions, server: ServerOptions, p: { store: EventLog; sessions: Sessions; metrics: ControlPlaneMetrics; state: LoopState; views: ViewsFace | null; consoleOrigin: string | undefined; logKey: { readonly origin: string; readonly verifierKey: string } | null; opened: Opened }): Promise<Face> {
  const { CORE_PREFIX, coreHandler, startServer } = await import("../server/index.js");
  // The core API for plugins (docs/adr/0196), on the console's listener under /core/.
  const core = embeddedCoreApi({ dataDir: o.dataDir, store: p.store, logger: o.logger, clock: o.clock, registry: p.metrics.registry });
  p.opened.core = core;
  return startServer({
    core: { prefix: CORE_PREFIX, handle: coreHandler(core, { logger: o.logger.child({ component: "core-api" }) }) },
    logKey: p.logKey,
    dataDir: o.dataDir, store: p.store, sessions: p.sessions, views: p.views, ...(p.consoleOrigin === undefined ? {} : { consoleOrigin: p.consoleOrigin }), metrics: p.metrics, logger: o.logger.child({ component: "server" }),
    clock: o.clock ?? (() => new Date()), readiness: () => readinessOf(p.state),
  }, server);
}

interface LoopState {
  firstPass: boolean;
  failure: string | null;
  stopping: boolean;
}

function readinessOf(s: LoopState): Readiness {
  const reasons = [
    ...(s.stopping ? ["stopping"] : []),
    ...(s.firstPass ? [] : ["the first reconcile pass has not finished"]),
    ...(s.failure === null ? [] : [`the last reconcile pass failed: ${s.failure}`]),
  ];
  return { ready: reasons.length === 0, reasons };
}

interface Parts {
  readonly lock: DataLock;
  readonly runtime: Runtime;
  readonly proxy: EgressProxy | null;
  readonly egress: { readonly host: string; readonly port: number } | null;
  readonly hosted: HostedPlugins | null;
  readonly face: Face | null;
  /** The core API for plugins, when the face runs (its summaries recorded once the face is closed). */
  readonly core: CoreApi | null;
  readonly views: RunningViews | null;
  readonly sessions: Sessions;
  readonly metrics: ControlPlaneMetrics;
  readonly state: LoopState;
  readonly feedAllowLists: () => Promise<void>;
  /** Stops keeping the console's projections current (before the store closes). */
  readonly stopProjections: () => void;
  /** The witnesses checkpoints are submitted to, when any (stopped before the store closes). */
  readonly witnesses: Witnesses | null;
  readonly checkpoints: CheckpointSchedule | null;
  readonly logKey: { readonly origin: string; readonly verifierKey: string } | null;
}

class Loop implements ControlPlane {
  readonly dataDir: string;
  readonly runtime: Runtime;
  readonly egress: { readonly host: string; readonly port: number } | null;
  readonly server: { readonly url: string; readonly origin: string } | null;
  readonly hosted: HostedPlugins | null;
  readonly views: RunningViews | null;
  readonly sessions: Sessions;
  readonly metrics: ControlPlaneMetrics;
  readonly checkpoints: CheckpointSchedule | null;
  readonly logKey: { readonly origin: string; readonly verifierKey: string } | null;
  readonly #p: Parts;
  readonly #unwatch: () => void;
  /** The connectors' sync scheduler, when it runs (stopped before the plugin host). */
  readonly #syncs: SyncScheduler | null;
  #chain: Promise<PluginResult[]> = Promise.resolve([]);
  #seen = -1;
  #timer: NodeJS.Timeout | null = null;
  #full: NodeJS.Timeout | null = null;
  #stopped: Promise<void> | null = null;

  constructor(
    private readonly o: ControlPlaneOptions,
    parts: Parts,
  ) {
    this.#p = parts;
    this.dataDir = o.dataDir;
    this.runtime = parts.runtime;
    this.egress = parts.egress;
    this.server = parts.face === null ? null : { url: parts.face.url, origin: parts.face.origin };
    this.hosted = parts.hosted;
    this.views = parts.views;
    this.sessions = parts.sessions;
    this.metrics = parts.metrics;
    this.checkpoints = parts.checkpoints;
    this.logKey = parts.logKey;
    this.#unwatch = parts.metrics.watch(parts.runtime.store);
    this.#syncs = startSyncs(o.syncs, { store: parts.runtime.store, hosted: parts.hosted, dataDir: o.dataDir, logger: o.logger, clock: o.clock });
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

  readiness(): Readiness {
    return readinessOf(this.#p.state);
  }

  pass(): Promise<PluginResult[]> {
    const next = this.#chain.then(() => this.#pass(), () => this.#pass());
    this.#chain = next.catch(() => []);
    return next;
  }

  async #whenMoved(): Promise<void> {
    this.runtime.verifier.retryDue().catch(() => undefined);
    if ((await this.runtime.store.head()) === this.#seen) return;
    await this.pass().catch(() => undefined);
  }

  async #pass(): Promise<PluginResult[]> {
    const { store, reconciler } = this.runtime;
    const state = this.#p.state;
    try {
      const results = await this.metrics.timePass(async () => {
        // Nothing acts on a log that does not hold: every pass checks what was appended since the last.
        await assertLogHolds(store);
        const r = await reconciler.reconcileAll();
        await this.#p.feedAllowLists();
        await this.hosted?.sync();
        this.#syncs?.poke();
        return r;
      });
      this.#seen = await store.head();
      state.firstPass = true;
      state.failure = null;
      return results;
    } catch (err) {
      state.failure = err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err);
      this.o.logger.error({ err: err instanceof Error ? err.message : String(err) }, "reconcile pass failed; retrying");
      throw err;
    }
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #stop(): Promise<void> {
    this.#p.state.stopping = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    if (this.#full !== null) clearInterval(this.#full);
    await this.#chain.catch(() => undefined);
    try {
      await this.#p.witnesses?.stop();
      await this.#p.face?.close();
      await this.#p.core?.close();
      await this.views?.close();
      await this.#syncs?.stop();
      await this.hosted?.close();
    } finally {
      try {
        await this.#p.proxy?.close();
      } finally {
        this.#unwatch();
        this.#p.stopProjections();
        await this.checkpoints?.stop();
        await this.runtime.close();
        this.#p.lock.release();
      }
    }
  }
}
