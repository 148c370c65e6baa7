/**
 * The plugin host (seed 003, `Host`; issue 13): runs installed plugin code by digest, confined
 * WebAssembly modules in sandboxed worker threads within their limits and, where the deployment
 * enables it, permitted unconfined executables. It records every failed or refused call as a
 * `plugin.call` event and counts successes into periodic `plugin.calls` events (ADR 0014).
 *
 * The app layer decides *whether* a plugin may run (its rollout plan, from its PluginGrant) and
 * with which origins (its effective egress hosts); the host enforces them: a call reaches only
 * those origins, through the egress proxy, with the plugin's own token.
 */
import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { EventLog, PluginRuntime } from "../events/index.js";
import { isPluginName } from "../events/index.js";
import { manifestEqual, parseManifestLabel, type JsonValue, type Manifest } from "../plugins/index.js";
import { CallLog } from "./call-log.js";
import { CallRecorder, type CallResult, type CallScope, type LastCall } from "./call-recorder.js";
import { Deadline } from "./deadline.js";
import { hostError, HostErrorCode, type CallError, type HostError, type HostResult } from "./errors.js";
import { serveHostCall, type HostCallRecord } from "./host-call.js";
import type { GrantedSecretValues } from "./secret-call.js";
import type { HttpCapability } from "./http.js";
import { resolveLimits, type Caps, type Limits } from "./limits.js";
import { checkModule, validDigest } from "./module-check.js";
import { PluginHostMetrics } from "./metrics.js";
import { ModulePool } from "./module-pool.js";
import type { ModuleTable, StoredModule } from "../events/index.js";
import { approvedOriginSet } from "./origins.js";
import { checkReportedManifest } from "./reported-manifest.js";
import { parseResponse, type ParsedResponse } from "./response.js";
import { redact, redactionList } from "./sandbox/log-lines.js";
import { permitsFromLog, UnconfinedTier, type PermittedExecutable } from "./unconfined/tier.js";
import type { ExecutableFile } from "./unconfined/executables.js";

/** What the host is built from. */
export interface PluginHostOptions {
  /** The event log; the `modules` table lives in the same database. */
  readonly store: EventLog;
  readonly logger: Logger;
  readonly limits?: Partial<Limits>;
  readonly caps?: Partial<Caps>;
  /** The HTTP capability (normally {@link proxyHttp}); without it no call is granted HTTP. */
  readonly http?: HttpCapability;
  /** The unconfined plugin directory; the tier is off without it. */
  readonly unconfinedDir?: string;
  /** Where sealed copies of unconfined executables are made; a private temp dir by default. */
  readonly sealedDir?: string;
  /** True when a plugin still runs the module, so it cannot be uninstalled (`plugin_pinned`). */
  readonly pinned?: (digest: string) => boolean | Promise<boolean>;
  /** How often success counts are written as `plugin.calls` events (ms; also at close). */
  readonly summaryIntervalMs?: number;
  /** How long a stopped instance may take before its sandbox process is killed (ms). */
  readonly hardStopMs?: number;
  /** The clock of the success-count windows. */
  readonly clock?: () => Date;
  /** The actor of the events the host records itself (`plugin.call`, `plugin.calls`). */
  readonly actor?: string;
  /** The registry the host's metrics join (queue depth, wait and run time, hard stops); none kept without it. */
  readonly registry?: Registry;
}

/** One call of plugin code. */
export interface CallRequest {
  /** An ABI method: `manifest`, `sync`, `import_file`, or another the plugin serves. */
  readonly method: string;
  readonly params?: JsonValue;
  /** Values redacted from everything the plugin logs and reports (and the host's events). */
  readonly secrets?: readonly string[];
  /**
   * The Secrets granted to the instance, role → key → value, which the guest reads with the
   * `secret` host call; every value is redacted as `secrets` are.
   */
  readonly secretValues?: GrantedSecretValues;
  /**
   * The origins the call may reach (`https://host[:port]`): the plugin's effective egress hosts
   * ({@link originsOf}). Empty or absent: the call is not granted HTTP.
   */
  readonly origins?: readonly string[];
  /** The plugin's own egress token, which the proxy identifies it by; required for HTTP. */
  readonly egressToken?: string;
  /** Ends the call early (as a timeout: the instance is discarded). */
  readonly signal?: AbortSignal;
}

export type { CallResult, LastCall } from "./call-recorder.js";

/** Every value a call redacts: its `secrets` and the values of its granted Secrets. */
function redactedValues(req: CallRequest): readonly string[] {
  if (req.secretValues === undefined) return req.secrets ?? [];
  const out = [...(req.secrets ?? [])];
  for (const keys of req.secretValues.values()) for (const v of keys.values()) if (v.length > 0) out.push(v);
  return out;
}

/** An installed module. */
export interface InstalledModule {
  readonly digest: string;
  readonly size: number;
  readonly manifest: Manifest;
}

/** The unconfined tier as the app layer sees it. */
export interface UnconfinedApi {
  /** The directory's executables, by name, with their digests; runs none of them. */
  list(): Promise<ExecutableFile[]>;
  /** Permits `name` if it has `digest` now, recording `executable.permitted`. */
  permit(name: string, digest: string, actor: string): Promise<HostResult<ExecutableFile>>;
  permitted(): Promise<PermittedExecutable[]>;
}

/** The host. */
export interface PluginHost {
  readonly limits: Limits;
  readonly caps: Caps;
  /**
   * Checks, compiles and instantiates a module, asks it for its manifest (which must be valid,
   * declare only what WebAssembly can serve, and equal `manifest` when given: the signed label),
   * then stores it and records `module.installed`. Installing an installed module changes nothing.
   */
  install(bytes: Uint8Array, opts?: { readonly actor?: string; readonly manifest?: Manifest }): Promise<HostResult<InstalledModule>>;
  /** Removes a module no plugin pins, records `module.uninstalled`, and evicts its code. */
  uninstall(digest: string, opts?: { readonly actor?: string }): Promise<HostResult<void>>;
  /** The installed modules. */
  modules(): Promise<StoredModule[]>;
  /** Compiles the module and readies an instance, so no call waits for either. */
  prepare(digest: string): Promise<HostResult<void>>;
  /** Prepares each module, one at a time, as many as the host keeps (call at start). */
  preparePinned(digests: readonly string[]): Promise<HostResult<void>[]>;
  /** Runs one call of plugin `plugin`'s code `digest` (a module, or a permitted executable). */
  call(plugin: string, digest: string, request: CallRequest): Promise<CallResult>;
  /**
   * Records a call the app layer refused before it reached the host (`plugin_not_approved`:
   * the plugin has no approved version) and returns it as a result, so every refusal is on the log
   * the same way.
   */
  refuse(plugin: string, digest: string, method: string, error: HostError): Promise<CallResult>;
  /** Drops the compiled code and instances of `digest` (its calls under way finish first). */
  evict(digest: string): void;
  /** The unconfined tier, or null where the deployment does not enable it. */
  readonly unconfined: UnconfinedApi | null;
  /** The last call of each plugin. */
  lastCalls(): ReadonlyMap<string, LastCall>;
  /** The sandbox process of a module while it runs (diagnostics, tests). */
  sandboxPid(digest: string): number | undefined;
  /** Writes the success counts, stops every sandbox and process (the HTTP capability is the caller's to close). */
  close(): Promise<void>;
}

const ENCODER = new TextEncoder();

function failed(error: CallError): CallResult {
  return { ok: false, error };
}

/** Builds the host. Throws {@link HostConfigError} when a limit or cap is invalid. */
export function createPluginHost(o: PluginHostOptions): PluginHost {
  const { limits, caps } = resolveLimits(o.limits, o.caps);
  const logger = o.logger.child({ component: "plugin-host" });
  // The log's module table (its calls refuse once the log is closed).
  const modulesOf = (): ModuleTable => o.store.tables.modules;
  const clock = o.clock ?? (() => new Date());
  const actor = o.actor ?? "plugin-host";
  const hardStopMs = o.hardStopMs ?? 1000;
  // Preparing is not a call: a cold start (a process, a compile) gets at least 30 s ahead of calls.
  const prepareMs = Math.max(limits.time, 30_000);
  const pools = new Map<string, ModulePool>();
  const manifests = new Map<string, Manifest>();
  const recorder = new CallRecorder({ store: o.store, logger, clock, actor });
  const metrics = o.registry === undefined ? undefined : new PluginHostMetrics(o.registry, () => {
    let n = 0;
    for (const p of pools.values()) n += p.waiting;
    return n;
  });
  const newPool = (digest: string, bytes: Uint8Array): ModulePool =>
    new ModulePool({ digest, bytes, limits, caps, hardStopMs, logger, ...(metrics === undefined ? {} : { metrics }) });
  let closed = false;

  // A sealed directory the host made itself is removed at close.
  const ownSealedDir = o.unconfinedDir !== undefined && o.sealedDir === undefined ? mkdtempSync(join(tmpdir(), "openfief-sealed-")) : undefined;
  const tier = o.unconfinedDir === undefined ? null : new UnconfinedTier({
    dir: o.unconfinedDir,
    sealedDir: o.sealedDir ?? ownSealedDir ?? "",
    caps, store: o.store, startMs: prepareMs,
    // One process serves every call of its executable, so its log is the executable's, not a call's.
    log: (executable, digest, line) => logger.info({ executable, digest, stream: "stderr" }, line),
  });

  const summaryTimer = setInterval(() => void recorder.flush(), o.summaryIntervalMs ?? 300_000);
  summaryTimer.unref();

  /** The scope of a call arriving now. */
  function scope(plugin: string, runtime: PluginRuntime, digest: string, method: string, secrets: readonly string[]): CallScope {
    return { plugin, runtime, digest, method, started: performance.now(), list: redactionList(secrets) };
  }

  function touch(digest: string, pool: ModulePool): void {
    pools.delete(digest);
    pools.set(digest, pool);
    if (pools.size <= caps.modules) return;
    // The least recently used module with no call under way goes; its sandbox process stops.
    for (const [d, p] of pools) {
      if (pools.size <= caps.modules) break;
      if (d === digest || p.active > 0) continue;
      pools.delete(d);
      p.close();
    }
  }

  /** True when `digest` is a permitted executable's (known to the tier, or on the log when it is off). */
  async function isExecutable(digest: string): Promise<boolean> {
    if ((await modulesOf().get(digest)) !== undefined) return false;
    if (tier !== null) return (await tier.byDigest(digest)) !== undefined;
    return [...(await permitsFromLog(o.store)).values()].some((p) => p.digest === digest);
  }

  function manifestOf(digest: string, stored: StoredModule): Manifest | undefined {
    const known = manifests.get(digest);
    if (known !== undefined) return known;
    const parsed = parseManifestLabel(stored.manifest, "manifest");
    if (!parsed.ok) return undefined;
    manifests.set(digest, parsed.value);
    return parsed.value;
  }

  /** The pool of an installed module (loaded and checked on first use). */
  async function poolFor(digest: string): Promise<HostResult<ModulePool>> {
    const found = pools.get(digest);
    if (found !== undefined) {
      touch(digest, found);
      return { ok: true, value: found };
    }
    const bytes = await modulesOf().bytes(digest);
    if (bytes === undefined) return { ok: false, error: hostError(HostErrorCode.NotInstalled, `no module with digest ${digest} is installed`, "digest") };
    const checked = checkModule(bytes, limits, caps);
    if (!checked.ok) return checked;
    const pool = newPool(digest, checked.value.bytes);
    touch(digest, pool);
    return { ok: true, value: pool };
  }

  async function runOnPool(call: CallScope, pool: ModulePool, req: CallRequest, deadline: Deadline): Promise<ParsedResponse> {
    const { plugin, digest, list } = call;
    const request = ENCODER.encode(JSON.stringify({ method: req.method, params: req.params ?? {} }));
    if (request.length > caps.messageBytes) return { ok: false, error: hostError(HostErrorCode.Failed, `the request is larger than the message cap of ${caps.messageBytes} bytes`, "params") };
    const origins = approvedOriginSet(req.origins ?? []);
    const callLog = new CallLog(logger, { plugin, digest }, { bytes: caps.logCallBytes, lines: caps.logCallLines });
    const outcome = await pool.run(request, redactedValues(req), deadline, {
      log: (fd, line) => callLog.write(fd === 1 ? "stdout" : "stderr", redact(line, list)),
      hostCall: (bytes) => serveHostCall(bytes, {
        origins, egressToken: req.egressToken, http: o.http, signal: deadline.signal,
        ...(req.secretValues === undefined ? {} : { secrets: req.secretValues }), remainingMs: () => deadline.remaining(),
        messageBytes: caps.messageBytes, requestBodyBytes: caps.httpRequestBytes, responseBodyBytes: caps.httpResponseBytes,
      }, (r: HostCallRecord) => logger.info({ plugin, digest, ...r }, r.code === undefined ? "plugin http request" : "plugin http request refused")),
    });
    const dropped = outcome.dropped + callLog.dropped;
    if (dropped > 0) logger.warn({ plugin, digest, dropped }, "plugin log over the per-call cap was dropped");
    if (!outcome.ok) return { ok: false, error: outcome.error };
    return parseResponse(outcome.response);
  }

  async function callModule(call: CallScope, stored: StoredModule, req: CallRequest, deadline: Deadline): Promise<CallResult> {
    if (manifestOf(call.digest, stored) === undefined) return failed(hostError(HostErrorCode.ManifestInvalid, "the module's stored manifest is not valid", "manifest"));
    const pool = await poolFor(call.digest);
    if (!pool.ok) return failed(pool.error);
    const r = await runOnPool(call, pool.value, req, deadline);
    return r.ok ? { ok: true, result: r.result } : failed(r.error);
  }

  /** Runs a call on the code its digest names: a module, or a permitted executable. */
  async function dispatch(call: CallScope, req: CallRequest, deadline: Deadline): Promise<CallResult> {
    const { digest } = call;
    if (!validDigest(digest)) return failed(hostError(HostErrorCode.NotInstalled, "not a code digest (lowercase hex SHA-256)", "digest"));
    const stored = await modulesOf().get(digest);
    if (stored !== undefined) return callModule(call, stored, req, deadline);
    if (call.runtime !== "unconfined") return failed(hostError(HostErrorCode.NotInstalled, `no module or permitted executable has digest ${digest}`, "digest"));
    if (tier === null) {
      return failed(hostError(HostErrorCode.UnconfinedDisabled, "the plugin is an unconfined executable and this deployment does not enable the unconfined tier", "digest"));
    }
    const answer = await tier.call(digest, req.method, req.params ?? {}, redactedValues(req), deadline);
    return answer.ok ? { ok: true, result: answer.result } : failed(answer.error);
  }

  /** Compiles and instantiates a fresh pool within the prepare budget, then asks its manifest. */
  async function readyAndAsk(pool: ModulePool, digest: string, expected: Manifest | undefined): Promise<HostResult<{ manifest: Manifest; text: string }>> {
    const preparing = new Deadline(prepareMs);
    const ready = await Promise.race([pool.prepare(), preparing.reached]);
    preparing.dispose();
    if (ready === "timeout") return { ok: false, error: hostError(HostErrorCode.TimedOut, `compiling and instantiating the module took more than ${prepareMs} ms`) };
    if (!ready.ok) return ready;
    // Asking for the manifest is a call like any other, within the call time limit.
    const deadline = new Deadline(limits.time);
    try {
      return checkReportedManifest(await runOnPool(scope("-", "wasm", digest, "manifest", []), pool, { method: "manifest", params: {} }, deadline), expected);
    } finally {
      deadline.dispose();
    }
  }

  async function install(bytes: Uint8Array, opts: { readonly actor?: string; readonly manifest?: Manifest } = {}): Promise<HostResult<InstalledModule>> {
    const checked = checkModule(bytes, limits, caps);
    if (!checked.ok) return checked;
    const digest = checked.value.digest;
    const existing = await modulesOf().get(digest);
    const known = existing === undefined ? undefined : manifestOf(digest, existing);
    if (existing !== undefined && known !== undefined && (opts.manifest === undefined || manifestEqual(opts.manifest, known))) {
      return { ok: true, value: { digest, size: existing.size, manifest: known } };
    }
    const pool = newPool(digest, checked.value.bytes);
    try {
      const reported = await readyAndAsk(pool, digest, opts.manifest);
      if (!reported.ok) return reported;
      const { manifest, text } = reported.value;
      const at = clock().toISOString();
      // Installed by another caller meanwhile: the row and its event are there already.
      await modulesOf().install(
        { digest, bytes, size: bytes.length, installedAt: at, manifest: text },
        { stream: "system", type: "module.installed", actor: opts.actor ?? actor, data: { digest, size: bytes.length } },
      );
      manifests.set(digest, manifest);
      // Installed means about to be used: keep it compiled, with its ready instance.
      if (pools.get(digest) === undefined) touch(digest, pool);
      return { ok: true, value: { digest, size: bytes.length, manifest } };
    } finally {
      if (pools.get(digest) !== pool) pool.kill("the install did not complete");
    }
  }

  const host: PluginHost = {
    limits,
    caps,
    install,

    async uninstall(digest, opts = {}) {
      if (!validDigest(digest) || (await modulesOf().get(digest)) === undefined) return { ok: false, error: hostError(HostErrorCode.NotInstalled, `no module with digest ${digest} is installed`, "digest") };
      if ((await o.pinned?.(digest)) === true) return { ok: false, error: hostError(HostErrorCode.Pinned, "a plugin still runs this module, so it stays installed", "digest") };
      await modulesOf().uninstall(digest, { stream: "system", type: "module.uninstalled", actor: opts.actor ?? actor, data: { digest } });
      manifests.delete(digest);
      host.evict(digest);
      return { ok: true, value: undefined };
    },

    modules: async () => modulesOf().list(),

    async prepare(digest) {
      if (!validDigest(digest)) return { ok: false, error: hostError(HostErrorCode.NotInstalled, "not a module digest", "digest") };
      const pool = await poolFor(digest);
      if (!pool.ok) return pool;
      const deadline = new Deadline(prepareMs);
      try {
        const r = await Promise.race([pool.value.prepare(), deadline.reached]);
        return r === "timeout" ? { ok: false, error: hostError(HostErrorCode.TimedOut, `compiling and instantiating the module took more than ${prepareMs} ms`) } : r;
      } finally {
        deadline.dispose();
      }
    },

    async preparePinned(digests) {
      const out: HostResult<void>[] = [];
      for (const d of digests.slice(0, caps.modules)) out.push(await host.prepare(d));
      return out;
    },

    async call(plugin, digest, req) {
      if (closed) return failed(hostError(HostErrorCode.NotInstalled, "the host is closed"));
      if (!isPluginName(plugin)) return failed(hostError(HostErrorCode.NotInstalled, "not a plugin name", "plugin"));
      const call = scope(plugin, validDigest(digest) && (await isExecutable(digest)) ? "unconfined" : "wasm", digest, req.method, redactedValues(req));
      const deadline = new Deadline(limits.time, req.signal);
      try {
        return recorder.finish(call, await dispatch(call, req, deadline));
      } finally {
        deadline.dispose();
      }
    },

    async refuse(plugin, digest, method, error) {
      return recorder.finish(scope(plugin, (await isExecutable(digest)) ? "unconfined" : "wasm", digest, method, []), failed(error));
    },

    evict(digest) {
      const pool = pools.get(digest);
      pools.delete(digest);
      pool?.close();
      void tier?.stop(digest);
    },

    unconfined: tier === null ? null : {
      list: () => tier.list(),
      permit: (name, digest, a) => tier.permit(name, digest, a),
      permitted: () => tier.permitted(),
    },

    lastCalls: () => recorder.last,

    sandboxPid: (digest) => pools.get(digest)?.pid,

    async close() {
      if (closed) return;
      closed = true;
      clearInterval(summaryTimer);
      for (const p of pools.values()) p.kill("the host is closing");
      pools.clear();
      await tier?.close();
      // The calls the kills ended settle first, so their outcomes are counted or recorded.
      await new Promise((resolve) => setImmediate(resolve));
      await recorder.flush();
      if (ownSealedDir !== undefined) await rm(ownSealedDir, { recursive: true, force: true });
    },
  };
  return host;
}
