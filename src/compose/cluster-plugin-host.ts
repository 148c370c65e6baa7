/**
 * `openfief plugin-host`, the use case (issue 13, "In a cluster"; ADRs 0080, 0081): the plugin
 * host as the `openfief-plugin-host` Deployment. It follows the `openfief-plugin-host` ConfigMap;
 * for each plugin listed it installs the module from its image (by digest: the image's one layer,
 * whose digest must be the published module's), checked against the image's signed manifest
 * label, and prepares it; it serves `ConnectorService` for all of them on one port, to the core
 * only, calling only a plugin the ConfigMap lists; each call's HTTP goes through the egress proxy
 * with a TokenRequest token of the plugin's own ServiceAccount. Failed and refused calls are
 * `plugin.call` events in the host's store: the cluster's one PostgreSQL log (modules kept there by
 * digest, so the host restarts on any node), or its own SQLite file on its volume. `/healthz`, `/readyz` (the
 * ConfigMap read and its modules prepared) and `/metrics` on the health port.
 */
import type { Server } from "node:http";
import { createListener } from "../http/index.js";
import type { AddressInfo } from "node:net";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import type { EventLog } from "../events/index.js";
import { createPluginHost, hostError, HostErrorCode, proxyHttp } from "../host/index.js";
import type { HttpCapability, Limits, PluginHost } from "../host/index.js";
import type { HostedPlugin, JsonValue } from "../plugins/index.js";
import { serveConnectors, type ConnectorServer } from "../connector/index.js";
import { CoreTokenVerifier, installModule, openDataStore, openLogAt } from "../app/index.js";
import type { StoreLocation } from "../app/index.js";
import { tokenRequestTokens, type EgressTokens } from "./egress-tokens.js";
import { apiSecretReader } from "./cluster-secrets.js";
import { watchHostedPlugins, type HostedPluginsSource } from "./hosted-config.js";
import { imageSources, type ImageSourceFor } from "./runtime.js";

/** Who the host's own events name. */
export const PLUGIN_HOST_ACTOR = "plugin-host";

/** Options of {@link startClusterPluginHost}. */
export interface ClusterPluginHostOptions {
  readonly kc: KubeConfig;
  /** The folder of the host's own event store and modules (its volume), when `store` names no log. */
  readonly dataDir: string;
  /**
   * The log the host appends to and keeps its modules in, by digest: the cluster's one PostgreSQL
   * log (so the host can restart on any node: a module missing there is read again from its
   * image), or a SQLite file; the data folder's own file when absent.
   */
  readonly store?: StoreLocation | null;
  readonly listen: { readonly host: string; readonly port: number };
  readonly health: { readonly host: string; readonly port: number };
  /** The egress proxy's URL, `http://<ClusterIP>:4750`. */
  readonly egressProxy: string;
  /** The mounted `openfief-sa-jwks` directory. */
  readonly jwksDir: string;
  /** The core's ServiceAccount username. */
  readonly coreSubject: string;
  readonly logger: Logger;
  readonly namespace?: string;
  readonly ociLayouts?: readonly string[];
  readonly insecureRegistries?: readonly string[];
  readonly limits?: Partial<Limits>;
  /** Delay before restarting a failed ConfigMap watch. */
  readonly restartDelayMs?: number;
  /** The HTTP capability instead of the proxy at `egressProxy` (tests: one trusting a test CA). */
  readonly http?: HttpCapability;
  readonly clock?: () => Date;
}

/** A running plugin host. */
export interface ClusterPluginHost {
  readonly port: number;
  readonly healthPort: number;
  readonly host: PluginHost;
  /** The host's own event store (module events, failed and refused calls). */
  readonly store: EventLog;
  /** The ConfigMap was read and every module it lists was installed or refused (recorded). */
  ready(): boolean;
  /** The plugins the ConfigMap lists now, sorted. */
  plugins(): string[];
  close(): Promise<void>;
}

export class HostMetrics {
  readonly registry = new Registry();
  readonly calls: Counter<"method" | "outcome">;
  readonly refused: Counter<"reason">;
  readonly plugins: Gauge;

  constructor() {
    const registers = [this.registry];
    this.calls = new Counter({ name: "openfief_plugin_host_calls_total", help: "calls of plugin code, by method (sync, import_file) and outcome (ok, failed)", labelNames: ["method", "outcome"], registers });
    this.refused = new Counter({ name: "openfief_plugin_host_refused_total", help: "requests refused before any plugin code ran, by reason", labelNames: ["reason"], registers });
    this.plugins = new Gauge({ name: "openfief_plugin_host_plugins", help: "plugins the openfief-plugin-host ConfigMap lists", registers });
    collectDefaultMetrics({ register: this.registry, prefix: "openfief_plugin_host_" });
  }
}

/** Installs a listed plugin's module from its image, under the image's signed label (the use case both hosts call). */
async function install(host: PluginHost, sourceFor: ImageSourceFor, name: string, p: HostedPlugin): Promise<void> {
  await installModule(host, sourceFor, { plugin: name, image: p.image, module: p.module, actor: PLUGIN_HOST_ACTOR });
}

/** Installs and prepares what `plugins` lists, and uninstalls modules nothing lists any more. */
async function follow(host: PluginHost, sourceFor: ImageSourceFor, plugins: ReadonlyMap<string, HostedPlugin>, log: Logger): Promise<void> {
  const installed = new Set((await host.modules()).map((m) => m.digest));
  for (const [name, p] of plugins) {
    try {
      if (!installed.has(p.module)) await install(host, sourceFor, name, p);
      if ((await host.modules()).some((m) => m.digest === p.module)) await host.prepare(p.module);
    } catch (err) {
      log.error({ plugin: name, err: err instanceof Error ? err.message : String(err) }, "cannot install the plugin's module; retrying on the next change");
    }
  }
  const listed = new Set([...plugins.values()].map((p) => p.module));
  for (const m of await host.modules()) if (!listed.has(m.digest)) await host.uninstall(m.digest, { actor: PLUGIN_HOST_ACTOR });
}

export function healthServer(metrics: HostMetrics, ready: () => boolean): Server {
  // The limits every listener has (src/http).
  return createListener((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET") return void res.writeHead(405).end();
    if (path === "/healthz") return void res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    if (path === "/readyz") return void res.writeHead(ready() ? 200 : 503, { "content-type": "text/plain" }).end(ready() ? "ready\n" : "not ready: the plugins are not read yet\n");
    if (path === "/metrics") {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
      return;
    }
    res.writeHead(404).end();
  });
}

async function listen(server: Server, at: { readonly host: string; readonly port: number }): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(at.port, at.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Starts the plugin host; see the module comment. */
export async function startClusterPluginHost(o: ClusterPluginHostOptions): Promise<ClusterPluginHost> {
  const store = o.store === undefined || o.store === null ? await openDataStore(o.dataDir, o.clock) : await openLogAt(o.store, o.clock === undefined ? {} : { clock: o.clock });
  const metrics = new HostMetrics();
  let current: ReadonlyMap<string, HostedPlugin> = new Map();
  const http = o.http ?? proxyHttp({ proxyUrl: o.egressProxy });
  const host = createPluginHost({
    store,
    logger: o.logger,
    http,
    actor: PLUGIN_HOST_ACTOR,
    registry: metrics.registry,
    ...(o.limits === undefined ? {} : { limits: o.limits }),
    ...(o.clock === undefined ? {} : { clock: o.clock }),
    pinned: (digest) => [...current.values()].some((p) => p.module === digest),
  });
  const sourceFor = imageSources(o.ociLayouts ?? [], o.insecureRegistries ?? []);
  const tokens: EgressTokens = await tokenRequestTokens(o.kc, { ...(o.namespace === undefined ? {} : { namespace: o.namespace }) });
  const readSecrets = await apiSecretReader(o.kc, { logger: o.logger, ...(o.namespace === undefined ? {} : { namespace: o.namespace }) });
  const verifier = new CoreTokenVerifier({ jwksDir: o.jwksDir, coreSubject: o.coreSubject, ...(o.clock === undefined ? {} : { now: o.clock }) });

  // Changes are followed one at a time, each on the newest set.
  let following: Promise<void> = Promise.resolve();
  let followed = false;
  const onChange = (plugins: ReadonlyMap<string, HostedPlugin>): void => {
    for (const name of current.keys()) if (!plugins.has(name)) tokens.forget(name);
    current = plugins;
    metrics.plugins.set(plugins.size);
    // A pass that fails (the store refusing an uninstall's event) is logged and the next change
    // still runs: a rejected chain would skip every later change and keep /readyz at 503.
    following = following.then(async () => {
      await follow(host, sourceFor, current, o.logger);
      followed = true;
    }).catch((err: unknown) => {
      o.logger.error({ err: err instanceof Error ? err.message : String(err) }, "plugin host: following the ConfigMap failed; the next change tries again");
    });
  };
  const source: HostedPluginsSource = await watchHostedPlugins(o.kc, {
    logger: o.logger,
    onChange,
    ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
    ...(o.restartDelayMs === undefined ? {} : { restartDelayMs: o.restartDelayMs }),
  });
  const ready = (): boolean => source.synced() && followed;

  const call = async (instance: string, method: string, params: JsonValue, signal: AbortSignal) => {
    const p = current.get(instance);
    if (p === undefined) return host.refuse(instance, "", method, hostError(HostErrorCode.NotApproved, `the plugin host does not run ${instance}`));
    let egressToken: string | undefined;
    if (p.origins.length > 0) {
      try {
        egressToken = await tokens.token(instance);
      } catch (err) {
        // Without its token the plugin's HTTP fails, and that failure is recorded with the call.
        o.logger.warn({ plugin: instance, err: err instanceof Error ? err.message : String(err) }, "no egress token for the plugin");
      }
    }
    // The instance's Secrets, read on every call (docs/adr/0198); the host redacts every value.
    const secretValues = p.secrets === undefined ? undefined : await readSecrets(instance, p.secrets);
    const r = await host.call(instance, p.module, { method, params, origins: p.origins, ...(egressToken === undefined ? {} : { egressToken }), ...(secretValues === undefined ? {} : { secretValues }), signal });
    metrics.calls.inc({ method, outcome: r.ok ? "ok" : "failed" });
    return r;
  };
  const connectors: ConnectorServer = await serveConnectors(
    {
      verify: (token) => verifier.verify(token),
      runs: (instance) => current.has(instance),
      notRunning: (instance, method) => void host.refuse(instance, "", method, hostError(HostErrorCode.NotApproved, `the plugin host does not run ${instance}`)),
      call,
      onRefused: (reason) => metrics.refused.inc({ reason }),
      logger: o.logger.child({ component: "connectors" }),
    },
    o.listen,
  );
  const health = healthServer(metrics, ready);
  const healthPort = await listen(health, o.health);
  o.logger.info({ port: connectors.port, healthPort }, "plugin host serving");

  return {
    port: connectors.port,
    healthPort,
    host,
    store,
    ready,
    plugins: () => [...current.keys()].sort(),
    close: async () => {
      const step = (what: string): void => o.logger.debug({ step: what }, "plugin host closing");
      await source.stop();
      step("watch stopped");
      await connectors.close();
      step("connector server closed");
      health.closeAllConnections();
      await new Promise<void>((resolve) => health.close(() => resolve()));
      step("health server closed");
      await following.catch(() => undefined);
      await host.close();
      step("host closed");
      await http.close();
      await store.close();
      step("store closed");
    },
  };
}
