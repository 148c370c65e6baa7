/**
 * The core's syncs in a cluster (docs/adr/0198): the operator's leader plays the core for
 * connectors. It runs the scheduler of `openfief up` (src/app/sync.ts) over the cluster's one log,
 * keeping each delivery beside it (docs/adr/0199), and calls each running connector's `Sync`
 * over Connect at the plugin's Service, `plugin-<name>` on the plugin port: the plugin host for a
 * WebAssembly connector, the plugin's own pods for a container connector. Every call carries a
 * TokenRequest token of the core's ServiceAccount (the topology's `coreSubject`) whose one audience
 * is `openfief-plugin:<instance>` (D-59), which the plugin host's and the SDK's verifiers check.
 *
 * A standby calls nothing: the scheduler sees no connector while this replica does not lead. What
 * a leader began and did not finish is in the log, so its successor retries the same batch with
 * the same ID; a delivery it had stored is found, not stored again.
 */
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { EventLog } from "../events/index.js";
import { ConnectorService, DeliverySchema } from "../gen/openfief/connector/v1/connector_pb.js";
import { INSTANCE_AUDIENCE_PREFIX, NAMESPACE, SERVICE_ACCOUNT_PREFIX } from "../plugins/index.js";
import type { Backoff, Topology } from "../plugins/index.js";
import { hostedConnectors, logDeliveries, SyncScheduler } from "../app/index.js";
import type { SyncAnswer, SyncPorts } from "../app/index.js";
import { tokenRequestTokens } from "./egress-tokens.js";
import type { EgressTokens } from "./egress-tokens.js";

/** The environment variable that overrides where connectors are called (`{name}` is the instance). */
export const CONNECTOR_URL_ENV = "OPENFIEF_CONNECTOR_URL";
/** How long one `Sync` may take. */
export const SYNC_TIMEOUT_MS = 120_000;
/** What the plugin host's gate says of an instance it does not run (yet): a retry may find it. */
const NOT_RUNNING = /^the plugin host does not run /;

/** Settings of the leader's syncs; tests shorten them. */
export interface OperatorSyncSettings {
  /**
   * Where an instance is called: a URL with `{name}` replaced, or a function of the name (default
   * `$OPENFIEF_CONNECTOR_URL`, else `http://plugin-{name}.<namespace>.svc:<pluginPort>`).
   */
  readonly connectorUrl?: string | ((name: string) => string);
  readonly backoff?: Backoff;
  /** How often the scheduler looks for new connectors (default 30 s; every reconcile pass pokes it too). */
  readonly recheckMs?: number;
  readonly clock?: () => Date;
}

/** What {@link startOperatorSyncs} needs beside the log. */
export interface OperatorSyncContext {
  readonly kc: KubeConfig;
  readonly topology: Topology;
  readonly isLeader: () => boolean;
  readonly logger: Logger;
  readonly namespace?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The leader's running syncs. */
export interface OperatorSyncs {
  readonly scheduler: SyncScheduler;
  /** Looks again now (a reconcile pass may have started or stopped a connector). */
  poke(): void;
  stop(): Promise<void>;
}

/** The core's ServiceAccount, `system:serviceaccount:<namespace>:<name>`, as the TokenRequest names it. */
export function coreAccount(coreSubject: string): { readonly namespace: string; readonly name: string } {
  const parts = coreSubject.split(":");
  if (parts.length !== 4 || parts[0] !== "system" || parts[1] !== "serviceaccount" || parts[2] === "" || parts[3] === "") {
    throw new Error(`the core's subject ${JSON.stringify(coreSubject.slice(0, 100))} is no ServiceAccount`);
  }
  return { namespace: parts[2] ?? "", name: parts[3] ?? "" };
}

/** The snake-case name of a Connect code (`unavailable`, `invalid_argument`), as the scheduler's statuses are. */
export function statusName(code: Code): string {
  return (Code[code] ?? "Unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

/**
 * A failed call as the scheduler records it: the host's own code when its message starts with one
 * (`http_failed: …`), else the status; an instance the plugin host does not run yet (the ConfigMap
 * not followed yet) is unavailable, so it is retried, not given up.
 */
export function failureOf(err: unknown): Extract<SyncAnswer, { ok: false }> {
  const e = ConnectError.from(err);
  if (e.code === Code.PermissionDenied && NOT_RUNNING.test(e.rawMessage)) return { ok: false, code: "plugin_not_running", status: "unavailable" };
  const status = statusName(e.code);
  const host = /^([a-z][a-z_]{1,40}): /.exec(e.rawMessage)?.[1];
  return { ok: false, code: host ?? status, status };
}

/** `Sync` over Connect, with the core's token for the instance on every call. */
export function connectSync(urlOf: (name: string) => string, tokens: EgressTokens): SyncPorts["sync"] {
  const clients = new Map<string, Client<typeof ConnectorService>>();
  const clientOf = (name: string): Client<typeof ConnectorService> => {
    let c = clients.get(name);
    if (c === undefined) {
      // HTTP/1.1: `Sync` is unary, and no HTTP/2 session outlives a call (STACK.md, gotcha 5).
      c = createClient(ConnectorService, createConnectTransport({ baseUrl: urlOf(name), httpVersion: "1.1" }));
      clients.set(name, c);
    }
    return c;
  };
  return async (name, request) => {
    let token: string;
    try {
      token = await tokens.token(name);
    } catch {
      // The TokenRequest's own error names no token; the scheduler retries as for an unreachable plugin.
      return { ok: false, code: "no_core_token", status: "unavailable" };
    }
    try {
      const r = await clientOf(name).sync({ batchId: request.batchId, watermark: request.watermark }, { timeoutMs: SYNC_TIMEOUT_MS, headers: { authorization: `Bearer ${token}` } });
      return { ok: true, delivery: r.delivery === undefined ? {} : toJson(DeliverySchema, r.delivery) };
    } catch (err) {
      return failureOf(err);
    }
  };
}

/** Starts the scheduler over `store`; it calls connectors only while `ctx.isLeader()`. */
export async function startOperatorSyncs(store: EventLog, settings: OperatorSyncSettings, ctx: OperatorSyncContext): Promise<OperatorSyncs> {
  const core = coreAccount(ctx.topology.coreSubject);
  const namespace = ctx.namespace ?? NAMESPACE;
  const given = settings.connectorUrl ?? ctx.env?.[CONNECTOR_URL_ENV];
  const template = typeof given === "string" && given !== "" ? given : `http://${SERVICE_ACCOUNT_PREFIX}{name}.${namespace}.svc:${ctx.topology.pluginPort}`;
  const urlOf = typeof given === "function" ? given : (name: string) => template.replaceAll("{name}", name);
  const tokens = await tokenRequestTokens(ctx.kc, { namespace: core.namespace, account: () => core.name, audience: (name) => INSTANCE_AUDIENCE_PREFIX + name });
  const running = hostedConnectors(store, { containers: true });
  const logger = ctx.logger.child({ component: "syncs" });
  const scheduler = new SyncScheduler({
    store,
    deliveries: logDeliveries(store),
    clock: settings.clock ?? (() => new Date()),
    connectors: async () => (ctx.isLeader() ? running() : []),
    sync: connectSync(urlOf, tokens),
    ...(settings.backoff === undefined ? {} : { backoff: settings.backoff }),
    logger,
  });
  scheduler.start(settings.recheckMs);
  logger.info({ core: ctx.topology.coreSubject, at: typeof given === "function" ? "(set by the caller)" : template }, "the leader calls connectors' Sync on their schedules");
  return { scheduler, poke: () => scheduler.poke(), stop: () => scheduler.stop() };
}
