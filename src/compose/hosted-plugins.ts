/**
 * WebAssembly plugins run by the control plane itself (seed 003, issue 13): the plugin host,
 * given the modules of the versions the log says run, and calls to them under exactly their
 * effective permissions — the origins of their effective egress hosts, through the egress proxy
 * with the plugin's own egress token, so the proxy's allow-list, address checks and decision
 * events are the same as for a container.
 *
 * Whether a plugin may run is the rollout plan's (its PluginGrant, `why`, `approve`); the host is
 * told what runs after every reconcile pass (`sync`): it installs the module of every running
 * WebAssembly version from its verified image and prepares it, so no call compiles.
 */
import { join } from "node:path";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { mintEgressToken } from "../egress/index.js";
import type { EventLog } from "../events/index.js";
import { pluginStream } from "../events/index.js";
import { createPluginHost, hostError, HostErrorCode, originsOf, proxyHttp } from "../host/index.js";
import type { CallResult, HttpCapability, PluginHost } from "../host/index.js";
import { parseManifest } from "../plugins/index.js";
import type { EgressHost, JsonValue } from "../plugins/index.js";
import { Projector } from "../projections/index.js";
import type { WorkloadState } from "../projections/index.js";
import { AppError, containerCallRefusal, installModule, readGrantedSecrets } from "../app/index.js";
import type { GrantedSecretRef } from "../app/index.js";
import type { Runtime } from "./runtime.js";

/** Options of {@link startHostedPlugins}. */
export interface HostedPluginsOptions {
  readonly dataDir: string;
  readonly logger: Logger;
  /** The egress proxy plugins' HTTP goes through (`http://127.0.0.1:4750`); none: HTTP fails, recorded. */
  readonly egressUrl: string | null;
  /** The unconfined tier's folder (seed 003); off when absent. */
  readonly unconfinedDir?: string;
  /** The registry the host's metrics join (the control plane's `/metrics`); none kept without it. */
  readonly registry?: Registry;
  /** Where the instances' Secrets are (`<data>/cluster/secrets` by default; docs/adr/0184). */
  readonly secretsDir?: string;
}

/** The plugin host, fed what the log says runs. */
export interface HostedPlugins {
  readonly host: PluginHost;
  /** Installs and prepares the module of every running WebAssembly version (after a reconcile pass). */
  sync(): Promise<void>;
  /** Calls a running WebAssembly plugin once under its effective permissions. */
  call(name: string, method: string, params: JsonValue): Promise<CallResult>;
  close(): Promise<void>;
}

/** The HTTP capability when no egress proxy runs (`up --no-egress`, or `call` with no `up`). */
const NO_EGRESS: HttpCapability = {
  send: () => Promise.resolve({ ok: false, message: "no egress proxy runs for this data folder (start openfief up, without --no-egress)" }),
  close: () => Promise.resolve(),
};

/** The running WebAssembly workload of a plugin, or null. */
async function runningWasm(projector: Projector, name: string): Promise<WorkloadState | null> {
  await projector.catchUp();
  const w = (await projector.rows<WorkloadState>("desired_workloads")).get(name);
  return w !== undefined && w.running && w.runtime === "wasm" && w.module !== null ? w : null;
}

/** The effective egress hosts of what runs now (the latest decision's permissions). */
async function effectiveEgress(store: EventLog, name: string): Promise<EgressHost[]> {
  const d = await store.last(pluginStream(name), "rollout.decided");
  return d?.data.plan.run?.permissions.egress.map((h) => ({ host: h.host, port: h.port })) ?? [];
}

/** The Secrets of what runs now (the latest decision's permissions), by the role the manifest names. */
async function grantedSecrets(store: EventLog, name: string): Promise<GrantedSecretRef[]> {
  const d = await store.last(pluginStream(name), "rollout.decided");
  // Permissions recorded since Secret roles carry `role` when it differs from the Secret's name (docs/adr/0160).
  const secrets = (d?.data.plan.run?.permissions.secrets ?? []) as readonly { name: string; role?: string }[];
  return secrets.map((s) => (s.role === undefined ? { name: s.name } : { name: s.name, role: s.role }));
}

/** Starts the plugin host over a runtime's store. */
export function startHostedPlugins(rt: Runtime, o: HostedPluginsOptions): HostedPlugins {
  const projector = new Projector(rt.store);
  const running = async (): Promise<WorkloadState[]> => {
    await projector.catchUp();
    return [...(await projector.rows<WorkloadState>("desired_workloads")).values()].filter((w) => w.running && w.runtime === "wasm" && w.module !== null);
  };
  const host = createPluginHost({
    store: rt.store,
    logger: o.logger,
    // Without a proxy there is no way out: a request fails (and is recorded) rather than being "not granted".
    http: o.egressUrl === null ? NO_EGRESS : proxyHttp({ proxyUrl: o.egressUrl }),
    ...(o.unconfinedDir === undefined ? {} : { unconfinedDir: o.unconfinedDir }),
    ...(o.registry === undefined ? {} : { registry: o.registry }),
    pinned: async (digest) => (await running()).some((w) => w.module === digest),
  });

  /** Installs the module of a running version from its image, under the manifest the rollout decided on (the use case both hosts call). */
  const install = async (w: WorkloadState): Promise<void> => {
    if (w.image === null || w.module === null) return;
    const decision = await rt.store.last(pluginStream(w.name), "rollout.decided");
    const manifest = decision?.data.plan.run === null || decision === null ? null : parseManifest(decision.data.plan.run.manifest);
    await installModule(host, rt.sourceFor, { plugin: w.name, image: w.image, module: w.module, manifest: manifest !== null && manifest.ok ? manifest.value : null });
  };

  return {
    host,
    async sync() {
      const installed = new Set((await host.modules()).map((m) => m.digest));
      for (const w of await running()) {
        try {
          if (w.module !== null && !installed.has(w.module)) await install(w);
          if (w.module !== null) await host.prepare(w.module);
        } catch (err) {
          o.logger.error({ plugin: w.name, err: err instanceof Error ? err.message : String(err) }, "cannot install the plugin's module");
        }
      }
    },
    async call(name, method, params) {
      const w = await runningWasm(projector, name);
      if (w === null || w.module === null) {
        const last = (await projector.rows<WorkloadState>("desired_workloads")).get(name);
        if (last === undefined && (await rt.store.last(pluginStream(name))) === null) throw new AppError("not_found", `no plugin ${name}`);
        if (last?.running === true && last.runtime !== "wasm") throw new AppError("usage", containerCallRefusal(name, (await rt.store.last(pluginStream(name), "workload.applied"))?.data.target ?? null));
        return host.refuse(name, last?.module ?? "", method, hostError(HostErrorCode.NotApproved, `${name} has no approved version running (openfief why ${name})`));
      }
      if (!(await host.modules()).some((m) => m.digest === w.module)) await install(w);
      const origins = originsOf(await effectiveEgress(rt.store, name));
      const { token } = await mintEgressToken(o.dataDir, name);
      // Read on every call, so a rotated Secret is used at once; the host redacts every value.
      const secretValues = await readGrantedSecrets(o.secretsDir ?? join(o.dataDir, "cluster", "secrets"), await grantedSecrets(rt.store, name), o.logger, name);
      return host.call(name, w.module, { method, params, origins, egressToken: token, secretValues });
    },
    close: () => host.close(),
  };
}
