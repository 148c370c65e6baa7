/**
 * Leader election with a coordination.k8s.io/v1 Lease (`openfief-operator` in `openfief`), so two
 * operator replicas never apply at once.
 *
 * Like client-go's leaderelection: every write carries the resourceVersion it read, so of two
 * replicas racing for the Lease exactly one wins (the other gets 409 Conflict). A holder's lease
 * counts as expired when this replica has seen the same record, unchanged, for longer than the
 * lease duration on ITS OWN clock: remote timestamps are never compared with the local clock, so
 * clock skew between nodes cannot hand out the lease early. A leader that cannot renew within
 * the renew deadline stops considering itself leader before any other replica may take over.
 */
import { CoordinationV1Api, V1MicroTime } from "@kubernetes/client-node";
import type { KubeConfig, V1Lease } from "@kubernetes/client-node";
import { NAMESPACE } from "../plugins/index.js";
import { httpStatus, KubeError, KubeErrorCode } from "./errors.js";
import type { Timers } from "./source.js";

/** The Lease's name. */
export const LEASE_NAME = "openfief-operator";

/** Options of {@link LeaderElector}. */
export interface LeaderElectorOptions {
  /** This replica's identity, unique per pod (the pod name). */
  readonly identity: string;
  readonly namespace?: string;
  readonly leaseName?: string;
  /** How long a lease lasts without renewal; default 15 s. */
  readonly leaseDurationSeconds?: number;
  /** A leader that has not renewed for this long steps down; default 10 s (below the duration). */
  readonly renewDeadlineSeconds?: number;
  /** How often {@link LeaderElector.run} tries to acquire or renew; default 2 s. */
  readonly retryPeriodSeconds?: number;
  readonly now?: () => Date;
  readonly timers?: Timers;
}

/** Acquires, renews and releases the operator's Lease. */
export class LeaderElector {
  readonly identity: string;
  readonly #api: CoordinationV1Api;
  readonly #namespace: string;
  readonly #name: string;
  readonly #durationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryMs: number;
  readonly #now: () => Date;
  readonly #timers: Timers;
  /** The last record seen and when (local clock) it was first seen unchanged. */
  #observed: { key: string; at: number } | undefined;
  #lastRenew: number | undefined;
  #timer: unknown;
  #stopped = false;
  /** The acquire-or-renew round under way, if any. */
  #round: Promise<unknown> | undefined;
  #leading = false;

  constructor(kc: KubeConfig, options: LeaderElectorOptions) {
    if (options.identity === "") throw new KubeError(KubeErrorCode.LeaseError, "leader election needs a non-empty identity");
    this.identity = options.identity;
    this.#api = kc.makeApiClient(CoordinationV1Api);
    this.#namespace = options.namespace ?? NAMESPACE;
    this.#name = options.leaseName ?? LEASE_NAME;
    this.#durationMs = (options.leaseDurationSeconds ?? 15) * 1000;
    this.#renewDeadlineMs = (options.renewDeadlineSeconds ?? 10) * 1000;
    this.#retryMs = (options.retryPeriodSeconds ?? 2) * 1000;
    if (this.#renewDeadlineMs >= this.#durationMs) throw new KubeError(KubeErrorCode.LeaseError, "the renew deadline must be shorter than the lease duration");
    this.#now = options.now ?? (() => new Date());
    this.#timers = options.timers ?? {
      setTimeout: (fn, ms) => {
        const t = setTimeout(fn, ms);
        t.unref();
        return t;
      },
      clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
    };
  }

  /** Whether this replica holds the lease now: it renewed within the renew deadline. */
  isLeader(): boolean {
    return this.#lastRenew !== undefined && this.#now().getTime() - this.#lastRenew < this.#renewDeadlineMs;
  }

  /**
   * One round: create the Lease if none exists, renew it if this replica holds it, take it over if
   * the holder let it expire or released it. Resolves to whether this replica now leads. A lost
   * race (409) or a read failure resolves to false; the caller tries again next period.
   */
  async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.#now();
    let lease: V1Lease;
    try {
      lease = await this.#api.readNamespacedLease({ name: this.#name, namespace: this.#namespace });
    } catch (err) {
      if (httpStatus(err) !== 404) return this.#failed();
      try {
        await this.#api.createNamespacedLease({
          namespace: this.#namespace,
          body: {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name: this.#name, namespace: this.#namespace },
            spec: this.#spec(now, now, 0),
          },
        });
        return this.#won(now);
      } catch {
        return this.#failed();
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const key = `${holder}|${String(spec.renewTime ?? "")}|${lease.metadata?.resourceVersion ?? ""}`;
    if (this.#observed?.key !== key) this.#observed = { key, at: now.getTime() };
    if (holder !== this.identity && holder !== "") {
      const expired = now.getTime() - this.#observed.at >= this.#durationMs;
      if (!expired) return this.#lost();
    }
    const transitions = (spec.leaseTransitions ?? 0) + (holder === this.identity ? 0 : 1);
    const acquire = holder === this.identity && spec.acquireTime !== undefined ? new Date(String(spec.acquireTime)) : now;
    try {
      await this.#api.replaceNamespacedLease({
        name: this.#name,
        namespace: this.#namespace,
        body: { ...lease, spec: this.#spec(acquire, now, transitions) },
      });
    } catch (err) {
      // 409: another replica wrote the Lease since we read it; it, not we, holds it now.
      return httpStatus(err) === 409 ? this.#lost() : this.#failed();
    }
    return this.#won(now);
  }

  /** Gives the lease up at once (on shutdown), so another replica need not wait for it to expire. */
  async release(): Promise<void> {
    this.stop();
    // A renewal still in flight would land after the release (or make it a 409) and hold the
    // lease for its whole duration: let it finish first.
    await this.#round?.catch(() => undefined);
    const wasLeading = this.#lastRenew !== undefined;
    this.#lastRenew = undefined;
    this.#leading = false;
    if (!wasLeading) return;
    try {
      const lease = await this.#api.readNamespacedLease({ name: this.#name, namespace: this.#namespace });
      if (lease.spec?.holderIdentity !== this.identity) return;
      const spec = { ...lease.spec };
      delete spec.holderIdentity;
      await this.#api.replaceNamespacedLease({ name: this.#name, namespace: this.#namespace, body: { ...lease, spec: { ...spec, leaseDurationSeconds: 1 } } });
    } catch {
      // The lease expires by itself; releasing is only a courtesy.
    }
  }

  /**
   * Tries every retry period until {@link stop}: calls `onStarted` when this replica becomes leader
   * and `onStopped` when it loses the lease (the caller must stop applying at once); `onRound`
   * after every round.
   */
  run(callbacks: { onStarted(): void; onStopped(): void; onRound?(leading: boolean): void }): void {
    this.#stopped = false;
    const tick = async (): Promise<void> => {
      const round = this.tryAcquireOrRenew();
      this.#round = round;
      await round;
      // Stopped meanwhile: no callback and no next round (release waits for this one).
      if (this.#stopped) return;
      const leading = this.isLeader();
      if (leading && !this.#leading) {
        this.#leading = true;
        callbacks.onStarted();
      } else if (!leading && this.#leading) {
        this.#leading = false;
        callbacks.onStopped();
      }
      callbacks.onRound?.(leading);
      this.#timer = this.#timers.setTimeout(() => void tick(), this.#retryMs);
    };
    void tick();
  }

  /** Stops {@link run}'s loop without releasing (a round under way finishes, and none follows). */
  stop(): void {
    this.#stopped = true;
    this.#stopTimer();
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #spec(acquire: Date, renew: Date, transitions: number): NonNullable<V1Lease["spec"]> {
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.#durationMs / 1000),
      acquireTime: new V1MicroTime(acquire.getTime()),
      renewTime: new V1MicroTime(renew.getTime()),
      leaseTransitions: transitions,
    };
  }

  #won(now: Date): boolean {
    this.#lastRenew = now.getTime();
    this.#observed = undefined;
    return true;
  }

  /** A transient failure: a leader stays leader until its renew deadline passes. */
  #failed(): boolean {
    return this.isLeader();
  }

  /** Another replica holds the lease. */
  #lost(): boolean {
    this.#lastRenew = undefined;
    return false;
  }
}
