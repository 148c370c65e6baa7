/**
 * The operator's run loop (cluster mode): credentials, the trusted signers read at start, the
 * reconciler, the Kubernetes source, leader election, health endpoints and graceful shutdown.
 *
 * Only the leader forwards observations to the reconciler and reconciles: a standby follows the
 * cluster (so it is ready to take over and `/readyz` reflects it) but neither appends events nor
 * applies. On becoming leader it relists, which re-emits everything, then reconciles all.
 * Reconciles are single-flight and coalesced: watch events are hints, and any number of them while
 * one reconcile runs cause exactly one more. Observations wait for a running reconcile to finish,
 * so a reconcile (and the status it writes) sees a consistent set of inputs.
 */
import { mkdir } from "node:fs/promises";
import { hostname } from "node:os";
import type { Server } from "node:http";
import { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { GrantSpec, JsonValue, PluginSpec, Signer } from "../plugins/index.js";
import { NAMESPACE } from "../plugins/index.js";
import { KubeError, KubeErrorCode } from "./errors.js";
import { startHealthServer } from "./health.js";
import { LeaderElector } from "./leader.js";
import type { ClusterReconciler, DeployedStatus, PluginMeta } from "./ports.js";
import { KubernetesSource } from "./source.js";
import type { CustomResource, SourceOptions } from "./source.js";
import { PluginStatusWriter } from "./status.js";
import { KubernetesTarget } from "./target.js";
import type { ApplyRecord } from "./target.js";
import { readTrustedSigners } from "./trusted-signers.js";

/**
 * When the leader signs checkpoints of the log's Merkle tree, with which key, and which witnesses
 * it asks (`--checkpoint-every`, `--checkpoint-interval`, `--log-key`, `--witness`; docs/adr/0144).
 */
export interface OperatorCheckpointSettings {
  /** Every this many events this replica appends. */
  readonly every: number;
  /** And every this many ms while the log has new events (whoever appended them). */
  readonly intervalMs: number;
  /** `--log-key FILE`; else the file `$OPENFIEF_LOG_KEY_FILE` names. */
  readonly keyFile?: string;
  /** `--witness` texts, `<url>[ <verifier key>]`. */
  readonly witnesses: readonly string[];
}

/** What the reconciler factory gets to build the cluster reconciler with. */
export interface OperatorContext {
  readonly kc: KubeConfig;
  readonly target: KubernetesTarget;
  readonly status: PluginStatusWriter;
  /** The owner's trusted signers, from `openfief-trusted-signers` (empty when absent). */
  readonly ownerSigners: readonly Signer[];
  /** The folder of the event store (on the operator's volume). */
  readonly dataDir: string;
  readonly log: Logger;
  /** The checkpoints the leader signs; null with `--no-checkpoints`. */
  readonly checkpoints: OperatorCheckpointSettings | null;
  /** Whether this replica leads now; check before every apply. */
  isLeader(): boolean;
  /** Subscribes to every apply/prune record, to append as events. Set by the reconciler. */
  onApplyRecord(listener: (record: ApplyRecord) => void): void;
}

/** Builds the reconciler; may return one with `close()` for shutdown. */
export type ReconcilerFactory = (ctx: OperatorContext) => Promise<ClusterReconciler & { close?(): Promise<void> | void }>;

/** Options of {@link runOperator}. */
export interface OperatorOptions {
  /** A kubeconfig file; in-cluster credentials when absent. */
  readonly kubeconfig?: string;
  /** A KubeConfig object, instead of `kubeconfig` (tests). */
  readonly kubeConfigObject?: KubeConfig;
  readonly dataDir: string;
  /** 0 picks a free port. */
  readonly healthPort: number;
  readonly healthHost?: string;
  /** This replica's identity for the Lease; default `POD_NAME`, then the host name. */
  readonly identity?: string;
  readonly log: Logger;
  /** Ends the operator gracefully when aborted (the command wires SIGTERM and SIGINT to it). */
  readonly signal: AbortSignal;
  readonly sourceOptions?: SourceOptions;
  /** Seconds between leader-election rounds; default 2. */
  readonly retryPeriodSeconds?: number;
  /** How long the Lease lasts without renewal, in seconds; default 15 (a standby takes over this long after a leader dies). */
  readonly leaseDurationSeconds?: number;
  /** How long a leader that cannot renew keeps leading, in seconds; default 10 (below the lease duration). */
  readonly renewDeadlineSeconds?: number;
  /** Coalescing delay before a reconcile; default 100 ms. */
  readonly reconcileDelayMs?: number;
  /** The checkpoints the leader signs (default: every 10,000 events and every second, no witness); null signs none. */
  readonly checkpoints?: OperatorCheckpointSettings | null;
  /** Called once the health server listens, with its port. */
  readonly onListening?: (port: number) => void;
}

/** Runs until `signal` aborts; rejects before starting when credentials or trusted signers are bad. */
export async function runOperator(options: OperatorOptions, factory: ReconcilerFactory): Promise<void> {
  const log = options.log;
  const kc = options.kubeConfigObject ?? loadKubeConfig(options.kubeconfig);
  // Refuse to start on an invalid signers file: a half-read list of who is trusted is worse than none.
  const ownerSigners = await readTrustedSigners(kc);
  log.info({ ownerSigners: ownerSigners.length }, "trusted signers read");
  await mkdir(options.dataDir, { recursive: true });

  const recordListeners: Array<(r: ApplyRecord) => void> = [];
  const target = new KubernetesTarget(kc, {
    onRecord: (r) => {
      log.info({ record: r }, "kubernetes change");
      for (const l of recordListeners) l(r);
    },
  });
  // Each Plugin's status as the cluster holds it (from the source, leading or not), so the writer
  // skips a status the cluster already has instead of echoing every watch event with a write.
  const clusterStatus = new Map<string, unknown>();
  const status = new PluginStatusWriter(kc, NAMESPACE, { current: (name) => clusterStatus.get(name) });
  const identity = options.identity ?? process.env["POD_NAME"] ?? hostname();
  const elector = new LeaderElector(kc, {
    identity,
    retryPeriodSeconds: options.retryPeriodSeconds ?? 2,
    ...(options.leaseDurationSeconds === undefined ? {} : { leaseDurationSeconds: options.leaseDurationSeconds }),
    ...(options.renewDeadlineSeconds === undefined ? {} : { renewDeadlineSeconds: options.renewDeadlineSeconds }),
  });
  let leading = false;
  let electionStarted = false;
  const reconciler = await factory({
    kc,
    target,
    status,
    ownerSigners,
    dataDir: options.dataDir,
    log,
    checkpoints: options.checkpoints === undefined ? { every: 10_000, intervalMs: 1_000, witnesses: [] } : options.checkpoints,
    isLeader: () => leading && elector.isLeader(),
    onApplyRecord: (l) => recordListeners.push(l),
  });

  // Observations and reconciles take turns. An observation recorded while a reconcile runs would
  // reach that reconcile's status pass undecided: the status would claim the new generation as
  // observed while still describing what was decided for the previous one (ApprovalRequired
  // False for an upgrade that asks for more). Queued behind the reconcile, it causes the next one.
  let turn: Promise<void> = Promise.resolve();
  const serially = (fn: () => void | Promise<void>): Promise<void> => {
    const next = turn.then(fn);
    turn = next.catch(() => undefined);
    return next;
  };

  // Single-flight, coalesced reconciles.
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const schedule = (): void => {
    if (!leading || options.signal.aborted) return;
    if (running !== undefined) {
      again = true;
      return;
    }
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      running = serially(() => reconciler.reconcileAll())
        .catch((err: unknown) => log.error({ err: errorMessage(err) }, "reconcile failed; retrying on the next hint or relist"))
        .finally(() => {
          running = undefined;
          if (again) {
            again = false;
            schedule();
          }
        });
    }, options.reconcileDelayMs ?? 100);
  };

  // While the relist that follows winning the lease runs, observations only queue up: the first
  // reconcile then sees every Plugin with its PluginGrant, not a Plugin whose grant is still
  // being listed (which would decide "nothing granted" and record a spurious hold-back).
  let leadershipRelist = false;
  const observe = (what: () => void | Promise<void>): void => {
    if (!leading) return;
    serially(what)
      .then(() => {
        if (!leadershipRelist) schedule();
      })
      .catch((err: unknown) => log.error({ err: errorMessage(err) }, "observation failed"));
  };
  const source = new KubernetesSource(
    kc,
    {
      onPlugin: (name, obj) => {
        if (obj === null || obj.status === undefined) clusterStatus.delete(name);
        else clusterStatus.set(name, obj.status);
        observe(() => reconciler.observePlugin(name, obj === null ? null : (obj.spec as PluginSpec), obj === null ? null : pluginMeta(obj)));
      },
      onGrant: (name, obj) => observe(() => reconciler.observeGrant(name, obj === null ? null : (obj.spec as GrantSpec))),
      onRelist: () => schedule(),
      onError: (kind, message, delayMs) => log.warn({ kind, delayMs, err: message }, "informer stopped; restarting"),
    },
    options.sourceOptions ?? {},
  );

  const health: Server = await startHealthServer(options.healthPort, {
    synced: () => source.synced(),
    lastSuccessfulList: () => source.lastSuccessfulList(),
    electionStarted: () => electionStarted,
    isLeader: () => leading,
  }, {}, options.healthHost ?? "0.0.0.0");
  const address = health.address();
  options.onListening?.(typeof address === "object" && address !== null ? address.port : options.healthPort);

  try {
    await source.start();
    log.info({ identity }, "source synced; starting leader election");
    elector.run({
      onStarted: () => {
        leading = true;
        log.info({ identity }, "became leader");
        leadershipRelist = true;
        source
          .relist()
          .catch((err: unknown) => log.error({ err: errorMessage(err) }, "relist on leadership failed"))
          .finally(() => {
            leadershipRelist = false;
            schedule();
          });
      },
      onStopped: () => {
        leading = false;
        log.warn({ identity }, "lost leadership; stopped applying");
      },
      // A standby is informed once it has seen the Lease.
      onRound: () => (electionStarted = true),
    });
    await new Promise<void>((resolve) => {
      if (options.signal.aborted) resolve();
      else options.signal.addEventListener("abort", () => resolve(), { once: true });
    });
  } finally {
    log.info("shutting down");
    leading = false;
    if (timer !== undefined) clearTimeout(timer);
    elector.stop();
    await source.stop();
    await running;
    // Observations already queued finish before the reconciler (and its store) closes.
    await turn;
    await elector.release();
    await new Promise<void>((resolve) => health.close(() => resolve()));
    await reconciler.close?.();
    log.info("stopped");
  }
}

/** In-cluster credentials, or a kubeconfig file. */
export function loadKubeConfig(file: string | undefined, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const kc = new KubeConfig();
  if (file === undefined) {
    // client-node reads in-cluster settings from these; outside a pod it would fail later, with only "Invalid URL".
    if (env["KUBERNETES_SERVICE_HOST"] === undefined || env["KUBERNETES_SERVICE_PORT"] === undefined) {
      throw new KubeError(KubeErrorCode.NotInCluster, "not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST is not set): pass --kubeconfig FILE");
    }
    kc.loadFromCluster();
  } else {
    try {
      kc.loadFromFile(file);
    } catch (err) {
      throw new KubeError(KubeErrorCode.NotInCluster, `cannot read the kubeconfig ${file}: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`);
    }
  }
  return kc;
}

function pluginMeta(obj: CustomResource): PluginMeta {
  return {
    uid: obj.metadata?.uid ?? "",
    generation: obj.metadata?.generation ?? 0,
    resourceVersion: obj.metadata?.resourceVersion ?? "",
    deployed: deployedFromStatus(obj.status),
  };
}

/** `status.deployed` when it names an image and a manifest (a status written by this operator); else null. */
export function deployedFromStatus(status: unknown): DeployedStatus | null {
  const d = isRecord(status) ? status["deployed"] : undefined;
  if (!isRecord(d)) return null;
  const { image, manifest, config } = d;
  if (typeof image !== "string" || image === "" || !isRecord(manifest)) return null;
  return config === undefined ? { image, manifest: manifest as JsonValue } : { image, manifest: manifest as JsonValue, config: config as JsonValue };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
