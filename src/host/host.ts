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
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import type { EventStore, PluginRuntime } from "../events/index.js";
import { isPluginName, pluginStream } from "../events/index.js";
import { manifestEqual, parseManifestLabel, type JsonValue, type Manifest } from "../plugins/index.js";
import { Deadline } from "./deadline.js";
import { hostError, HostErrorCode, type CallError, type HostError, type HostResult } from "./errors.js";
import { serveHostCall, type HostCallRecord } from "./host-call.js";
import type { HttpCapability } from "./http.js";
import { resolveLimits, type Caps, type Limits } from "./limits.js";
import { checkModule, validDigest } from "./module-check.js";
import { ModulePool } from "./module-pool.js";
import { ModuleStore, type StoredModule } from "./module-store.js";
import { approvedOriginSet } from "./origins.js";
import { parseResponse, type ParsedResponse } from "./response.js";
import { redact, redactionList, safeCut, REDACTED } from "./sandbox/log-lines.js";
import { permitsFromLog, UnconfinedTier, type PermittedExecutable } from "./unconfined/tier.js";
import type { ExecutableFile } from "./unconfined/executables.js";

/** What the host is built from. */
export interface PluginHostOptions {
  /** The event log; the `modules` table lives in the same database. */
  readonly store: EventStore;
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
  readonly pinned?: (digest: string) => boolean;
  /** How often success counts are written as `plugin.calls` events (ms; also at close). */
  readonly summaryIntervalMs?: number;
  /** How long a stopped instance may take before its sandbox process is killed (ms). */
  readonly hardStopMs?: number;
  /** The clock of the success-count windows. */
  readonly clock?: () => Date;
  /** The actor of the events the host records itself (`plugin.call`, `plugin.calls`). */
  readonly actor?: string;
}

/** One call of plugin code. */
export interface CallRequest {
  /** An ABI method: `manifest`, `sync`, `import_file`, or another the plugin serves. */
  readonly method: string;
  readonly params?: JsonValue;
  /** Values redacted from everything the plugin logs and reports (and the host's events). */
  readonly secrets?: readonly string[];
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

/** A call's result: the plugin's `result`, or why there is none. */
export type CallResult = { readonly ok: true; readonly result: JsonValue } | { readonly ok: false; readonly error: CallError };

/** An installed module. */
export interface InstalledModule {
  readonly digest: string;
  readonly size: number;
  readonly manifest: Manifest;
}

/** The last call of a plugin, for `get plugins`. */
export interface LastCall {
  readonly at: string;
  readonly runtime: PluginRuntime;
  readonly digest: string;
  readonly method: string;
  readonly ms: number;
  /** Absent when the call succeeded. */
  readonly error?: { readonly source: "host" | "plugin"; readonly code: string };
}

/** The unconfined tier as the app layer sees it. */
export interface UnconfinedApi {
  /** The directory's executables, by name, with their digests; runs none of them. */
  list(): Promise<ExecutableFile[]>;
  /** Permits `name` if it has `digest` now, recording `executable.permitted`. */
  permit(name: string, digest: string, actor: string): Promise<HostResult<ExecutableFile>>;
  permitted(): PermittedExecutable[];
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
  uninstall(digest: string, opts?: { readonly actor?: string }): HostResult<void>;
  /** The installed modules. */
  modules(): StoredModule[];
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
  refuse(plugin: string, digest: string, method: string, error: HostError): CallResult;
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
const MAX_EVENT_MESSAGE = 1000;

function failed(error: CallError): CallResult {
  return { ok: false, error };
}

/** Builds the host. Throws {@link HostConfigError} when a limit or cap is invalid. */
export function createPluginHost(o: PluginHostOptions): PluginHost {
  const { limits, caps } = resolveLimits(o.limits, o.caps);
  const logger = o.logger.child({ component: "plugin-host" });
  const modules = new ModuleStore(o.store.database);
  const clock = o.clock ?? (() => new Date());
  const actor = o.actor ?? "plugin-host";
  const hardStopMs = o.hardStopMs ?? 1000;
  // Preparing is not a call: a cold start (a process, a compile) gets at least 30 s ahead of calls.
  const prepareMs = Math.max(limits.time, 30_000);
  const pools = new Map<string, ModulePool>();
  const manifests = new Map<string, Manifest>();
  const last = new Map<string, LastCall>();
  const counts = new Map<string, { name: string; runtime: PluginRuntime; digest: string; from: string; succeeded: number }>();
  let closed = false;

  const tier = o.unconfinedDir === undefined ? null : new UnconfinedTier({
    dir: o.unconfinedDir,
    sealedDir: o.sealedDir ?? mkdtempSync(join(tmpdir(), "openfief-sealed-")),
    caps, store: o.store, startMs: prepareMs,
    // One process serves every call of its executable, so its log is the executable's, not a call's.
    log: (executable, digest, line) => logger.info({ executable, digest, stream: "stderr" }, line),
  });

  const summaryTimer = setInterval(() => flushCounts(), o.summaryIntervalMs ?? 300_000);
  summaryTimer.unref();

  function flushCounts(): void {
    if (counts.size === 0) return;
    const to = clock().toISOString();
    const batch = [...counts.values()].map((c) => ({
      stream: pluginStream(c.name), type: "plugin.calls", actor,
      data: { name: c.name, runtime: c.runtime, digest: c.digest, from: c.from, to, succeeded: c.succeeded },
    }));
    counts.clear();
    try {
      o.store.append(batch);
    } catch (err) {
      logger.error({ err: err instanceof Error ? err.message : String(err) }, "could not record plugin call counts");
    }
  }

  function cut(text: string, max: number): string {
    return text.length <= max ? text : text.slice(0, safeCut(text, max - 1, [REDACTED])) + "…";
  }

  /** Records a finished call: a success counted, a failure as a `plugin.call` event. */
  function finish(plugin: string, runtime: PluginRuntime, digest: string, method: string, started: number, result: CallResult, list: readonly string[]): CallResult {
    const ms = Math.round(performance.now() - started);
    const at = clock().toISOString();
    if (result.ok) {
      const key = `${plugin}\u0000${runtime}\u0000${digest}`;
      const c = counts.get(key);
      if (c === undefined) counts.set(key, { name: plugin, runtime, digest, from: at, succeeded: 1 });
      else c.succeeded++;
      last.set(plugin, { at, runtime, digest, method, ms });
      return result;
    }
    const e = result.error;
    const message = cut(redact(e.message, list), MAX_EVENT_MESSAGE);
    const error: CallError = e.source === "host"
      ? { source: "host", code: e.code, message, ...(e.field === undefined ? {} : { field: e.field }) }
      : { source: "plugin", code: e.code, message };
    last.set(plugin, { at, runtime, digest, method, ms, error: { source: e.source, code: e.code } });
    logger.warn({ plugin, digest, method, source: e.source, code: e.code, ms }, `plugin call failed: ${message}`);
    if (isPluginName(plugin)) {
      try {
        o.store.append([{
          stream: pluginStream(plugin), type: "plugin.call", actor,
          data: {
            name: plugin, runtime, ...(validDigest(digest) ? { digest } : {}), method: cut(method, 128) || "?", source: e.source, code: e.code, message,
            ...(e.source === "host" && e.field !== undefined ? { field: cut(e.field, 200) } : {}),
          },
        }]);
      } catch (err) {
        logger.error({ plugin, err: err instanceof Error ? err.message : String(err) }, "could not record a failed plugin call");
      }
    }
    return failed(error);
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
  function isExecutable(digest: string): boolean {
    if (modules.get(digest) !== undefined) return false;
    if (tier !== null) return tier.byDigest(digest) !== undefined;
    return [...permitsFromLog(o.store).values()].some((p) => p.digest === digest);
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
  function poolFor(digest: string): HostResult<ModulePool> {
    const found = pools.get(digest);
    if (found !== undefined) {
      touch(digest, found);
      return { ok: true, value: found };
    }
    const bytes = modules.bytes(digest);
    if (bytes === undefined) return { ok: false, error: hostError(HostErrorCode.NotInstalled, `no module with digest ${digest} is installed`, "digest") };
    const checked = checkModule(bytes, limits, caps);
    if (!checked.ok) return checked;
    const pool = new ModulePool({ digest, bytes: checked.value.bytes, limits, caps, hardStopMs, logger });
    touch(digest, pool);
    return { ok: true, value: pool };
  }

  async function runOnPool(plugin: string, digest: string, pool: ModulePool, req: CallRequest, deadline: Deadline, list: readonly string[]): Promise<ParsedResponse> {
    const request = ENCODER.encode(JSON.stringify({ method: req.method, params: req.params ?? {} }));
    if (request.length > caps.messageBytes) return { ok: false, error: hostError(HostErrorCode.Failed, `the request is larger than the message cap of ${caps.messageBytes} bytes`, "params") };
    const origins = approvedOriginSet(req.origins ?? []);
    const outcome = await pool.run(request, req.secrets ?? [], deadline, {
      log: (fd, line) => logger.info({ plugin, digest, stream: fd === 1 ? "stdout" : "stderr" }, redact(line, list)),
      hostCall: (bytes) => serveHostCall(bytes, {
        origins, egressToken: req.egressToken, http: o.http, signal: deadline.signal,
        messageBytes: caps.messageBytes, requestBodyBytes: caps.httpRequestBytes, responseBodyBytes: caps.httpResponseBytes,
      }, (r: HostCallRecord) => logger.info({ plugin, digest, ...r }, r.code === undefined ? "plugin http request" : "plugin http request refused")),
    });
    if (outcome.dropped > 0) logger.warn({ plugin, digest, dropped: outcome.dropped }, "plugin log over the per-call cap was dropped");
    if (!outcome.ok) return { ok: false, error: outcome.error };
    return parseResponse(outcome.response);
  }

  async function callModule(plugin: string, digest: string, stored: StoredModule, req: CallRequest, deadline: Deadline, list: readonly string[]): Promise<CallResult> {
    const manifest = manifestOf(digest, stored);
    if (manifest === undefined) return failed(hostError(HostErrorCode.ManifestInvalid, "the module's stored manifest is not valid", "manifest"));
    const pool = poolFor(digest);
    if (!pool.ok) return failed(pool.error);
    const r = await runOnPool(plugin, digest, pool.value, req, deadline, list);
    return r.ok ? { ok: true, result: r.result } : failed(r.error);
  }

  async function install(bytes: Uint8Array, opts: { readonly actor?: string; readonly manifest?: Manifest } = {}): Promise<HostResult<InstalledModule>> {
    const checked = checkModule(bytes, limits, caps);
    if (!checked.ok) return checked;
    const digest = checked.value.digest;
    const existing = modules.get(digest);
    if (existing !== undefined) {
      const m = manifestOf(digest, existing);
      if (m !== undefined && (opts.manifest === undefined || manifestEqual(opts.manifest, m))) return { ok: true, value: { digest, size: existing.size, manifest: m } };
    }
    const pool = new ModulePool({ digest, bytes: checked.value.bytes, limits, caps, hardStopMs, logger });
    const preparing = new Deadline(prepareMs);
    let deadline: Deadline | undefined;
    try {
      const ready = await Promise.race([pool.prepare(), preparing.reached]);
      if (ready === "timeout") return { ok: false, error: hostError(HostErrorCode.TimedOut, `compiling and instantiating the module took more than ${prepareMs} ms`) };
      if (!ready.ok) return ready;
      // Asking for the manifest is a call like any other, within the call time limit.
      deadline = new Deadline(limits.time);
      const answer = await runOnPool("-", digest, pool, { method: "manifest", params: {} }, deadline, []);
      if (!answer.ok) {
        const e = answer.error;
        return { ok: false, error: e.source === "host" ? e : hostError(HostErrorCode.ManifestInvalid, `the module answered manifest with ${e.code}: ${e.message}`, "manifest") };
      }
      const text = JSON.stringify(answer.result);
      const parsed = parseManifestLabel(text, "manifest");
      if (!parsed.ok) {
        const first = parsed.errors[0];
        return { ok: false, error: hostError(HostErrorCode.ManifestInvalid, `the module reported an invalid manifest: ${parsed.errors.map((x) => `${x.path}: ${x.message}`).join("; ")}`, first?.path ?? "manifest") };
      }
      const manifest = parsed.value;
      const view = manifest.capabilities.findIndex((c) => c !== "connector");
      if (view >= 0) {
        return { ok: false, error: hostError(HostErrorCode.DialectUnknown, `a WebAssembly plugin serves the connector contract only; it cannot serve capability ${manifest.capabilities[view] ?? "?"}`, `manifest.capabilities[${view}]`) };
      }
      if (opts.manifest !== undefined && !manifestEqual(opts.manifest, manifest)) {
        return { ok: false, error: hostError(HostErrorCode.ManifestInvalid, "the module's manifest differs from the signed manifest label", "manifest") };
      }
      const at = clock().toISOString();
      modules.transaction(() => {
        if (modules.get(digest) !== undefined) return;
        modules.insert(digest, bytes, at, text);
        o.store.append([{ stream: "system", type: "module.installed", actor: opts.actor ?? actor, data: { digest, size: bytes.length } }]);
      });
      manifests.set(digest, manifest);
      // Installed means about to be used: keep it compiled, with its ready instance.
      const before = pools.get(digest);
      if (before === undefined) touch(digest, pool);
      else pool.close();
      return { ok: true, value: { digest, size: bytes.length, manifest } };
    } finally {
      preparing.dispose();
      deadline?.dispose();
      if (pools.get(digest) !== pool) pool.kill("the install did not complete");
    }
  }

  const host: PluginHost = {
    limits,
    caps,
    install,

    uninstall(digest, opts = {}) {
      if (!validDigest(digest) || modules.get(digest) === undefined) return { ok: false, error: hostError(HostErrorCode.NotInstalled, `no module with digest ${digest} is installed`, "digest") };
      if (o.pinned?.(digest) === true) return { ok: false, error: hostError(HostErrorCode.Pinned, "a plugin still runs this module, so it stays installed", "digest") };
      modules.transaction(() => {
        modules.delete(digest);
        o.store.append([{ stream: "system", type: "module.uninstalled", actor: opts.actor ?? actor, data: { digest } }]);
      });
      manifests.delete(digest);
      host.evict(digest);
      return { ok: true, value: undefined };
    },

    modules: () => modules.list(),

    async prepare(digest) {
      if (!validDigest(digest)) return { ok: false, error: hostError(HostErrorCode.NotInstalled, "not a module digest", "digest") };
      const pool = poolFor(digest);
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
      const started = performance.now();
      const list = redactionList(req.secrets ?? []);
      const deadline = new Deadline(limits.time, req.signal);
      try {
        if (closed) return failed(hostError(HostErrorCode.NotInstalled, "the host is closed"));
        if (!isPluginName(plugin)) return failed(hostError(HostErrorCode.NotInstalled, "not a plugin name", "plugin"));
        if (!validDigest(digest)) return finish(plugin, "wasm", digest, req.method, started, failed(hostError(HostErrorCode.NotInstalled, "not a code digest (lowercase hex SHA-256)", "digest")), list);
        const stored = modules.get(digest);
        if (stored !== undefined) return finish(plugin, "wasm", digest, req.method, started, await callModule(plugin, digest, stored, req, deadline, list), list);
        if (tier === null) {
          const permitted = isExecutable(digest);
          const error = permitted
            ? hostError(HostErrorCode.UnconfinedDisabled, "the plugin is an unconfined executable and this deployment does not enable the unconfined tier", "digest")
            : hostError(HostErrorCode.NotInstalled, `no module or permitted executable has digest ${digest}`, "digest");
          return finish(plugin, permitted ? "unconfined" : "wasm", digest, req.method, started, failed(error), list);
        }
        if (tier.byDigest(digest) === undefined) {
          return finish(plugin, "wasm", digest, req.method, started, failed(hostError(HostErrorCode.NotInstalled, `no module or permitted executable has digest ${digest}`, "digest")), list);
        }
        const answer = await tier.call(digest, req.method, req.params ?? {}, req.secrets ?? [], deadline);
        return finish(plugin, "unconfined", digest, req.method, started, answer.ok ? { ok: true, result: answer.result } : failed(answer.error), list);
      } finally {
        deadline.dispose();
      }
    },

    refuse(plugin, digest, method, error) {
      return finish(plugin, isExecutable(digest) ? "unconfined" : "wasm", digest, method, performance.now(), failed(error), []);
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

    lastCalls: () => last,

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
      flushCounts();
    },
  };
  return host;
}
