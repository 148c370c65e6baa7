/**
 * The console in a cluster: who may sign in and what they may do are the cluster's answers, not
 * ours. A bearer token (`kubectl create token`, or an OIDC id token the API server accepts) is
 * checked by a TokenReview; the role comes from SubjectAccessReviews in the plugins' namespace —
 * an `owner` may `update` `plugingrants.openfief.io`, a `viewer` may `get` `plugins.openfief.io`,
 * anyone else is refused. An owner's approval writes the PluginGrant AS the user (impersonation),
 * so the API server authorizes it with the user's own rights and its audit log names the user,
 * and the grant event in the log names the same user (`owner:kube:<user>`).
 *
 * The order of an approval (docs/adr/0171): the API server first checks the write without storing
 * it (a dry run as the user: authorization, admission, validation); then the grant event is
 * appended, expecting the version the owner saw; then the write is made. The event comes before
 * the write so the operator, which records every PluginGrant change it sees, finds the same spec
 * already recorded under the user's name instead of recording it as the cluster's. Should the
 * write still fail, the grant the cluster holds is recorded back at once and the approval refused.
 *
 * Fail closed: a review the API server does not answer refuses (`unavailable`), never allows.
 */
import { createHash } from "node:crypto";
import type { EventLog } from "../events/index.js";
import { pluginStream, StoreError } from "../events/index.js";
// Types only: the Kubernetes client is heavy, and every command loads this room's door (ADR 0113).
import type { AccessQuestion, ClusterIdentity, KubeError, ReviewedUser, TokenReviewResult } from "../kube/index.js";
import type { GrantSpec, JsonValue } from "../plugins/index.js";
import { kubeActor } from "./actor.js";
import { AppError } from "./errors.js";
import { appendApproval, planApproval } from "./owner-edits.js";
import type { Approved } from "./owner-edits.js";
import { checkKubeIdentity, MAX_TOKEN_BYTES } from "./sessions.js";
import type { KubeIdentity, Role, UserSession } from "./sessions.js";

/** A user the cluster authenticated, with the role the cluster gives them here. */
export interface ClusterUser {
  readonly user: string;
  readonly kube: KubeIdentity;
  readonly role: Role;
}

/** The cluster's identity as the faces need it. */
export interface ClusterAccess {
  /** The namespace the plugins live in. */
  readonly namespace: string;
  /** Who a bearer token is and their role; refuses `unauthorized`, `forbidden` or `unavailable`. */
  authenticate(token: string | undefined): Promise<ClusterUser>;
  /** The role a signed-in user has now (asked again after a short while); null when they may no longer look. */
  roleOf(user: string, kube: KubeIdentity): Promise<Role | null>;
  /** An owner's approval, written to the cluster as the user and recorded under their name. */
  approve(store: EventLog, name: string, session: UserSession, expectedVersion?: number): Promise<Approved>;
}

/** Options of {@link kubeClusterAccess}. */
export interface ClusterAccessOptions {
  /** How long a review's answer is reused (ms); default 10 s. Writes always ask afresh. */
  readonly cacheMs?: number;
  readonly clock?: () => Date;
}

/** The SubjectAccessReview that makes a user an owner. */
export function ownerQuestion(namespace: string, name?: string): AccessQuestion {
  return { verb: "update", group: "openfief.io", resource: "plugingrants", namespace, ...(name === undefined ? {} : { name }) };
}

/** The SubjectAccessReview that makes a user a viewer. */
export function viewerQuestion(namespace: string): AccessQuestion {
  return { verb: "get", group: "openfief.io", resource: "plugins", namespace };
}

/** The most answers kept in each cache; past it the oldest go. */
const MAX_CACHED = 1000;

/** A small time-bounded cache. */
class Answers<T> {
  readonly #entries = new Map<string, { value: T; until: number }>();
  constructor(private readonly ms: number, private readonly now: () => number) {}

  get(key: string): T | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    if (e.until <= this.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: T): void {
    if (this.ms <= 0) return;
    if (this.#entries.size >= MAX_CACHED) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { value, until: this.now() + this.ms });
  }
}

/** A cluster refusal in the use cases' words; an unanswered review is `unavailable`. */
export function clusterRefusal(err: unknown, doing: string): AppError {
  if (err instanceof AppError) return err;
  if (!isKubeError(err)) return new AppError("unavailable", `${doing}: the cluster did not answer: refused`);
  switch (err.status) {
    case 401:
    case 403: return new AppError("forbidden", `${doing}: the cluster refused this user (${err.message})`);
    case 404: return new AppError("not_found", `${doing}: ${err.message}`);
    case 409: return new AppError("precondition_failed", `${doing}: the PluginGrant changed in the cluster meanwhile: look again`);
    case 400:
    case 422: return new AppError("invalid_resource", `${doing}: ${err.message}`, "spec");
    default: return new AppError("unavailable", `${doing}: ${err.message}`);
  }
}

function isKubeError(err: unknown): err is KubeError {
  return err instanceof Error && err.name === "KubeError";
}

function reviewed(user: string, kube: KubeIdentity): ReviewedUser {
  return { user, groups: kube.groups, ...(kube.uid === undefined ? {} : { uid: kube.uid }) };
}

/** The spec as stable JSON (keys sorted), to compare what the cluster holds with what the log does. */
function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(",")}]`;
  if (typeof v === "object" && v !== null) {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

/** A merge patch that makes `before` exactly `after`: every key of `after`, null for the keys only `before` has. */
function exactly(before: Record<string, unknown> | undefined, after: GrantSpec): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...after };
  for (const k of Object.keys(before ?? {})) if (!(k in patch)) patch[k] = null;
  return patch;
}

/** {@link ClusterAccess} over the cluster's API server. */
export function kubeClusterAccess(identity: ClusterIdentity, o: ClusterAccessOptions = {}): ClusterAccess {
  const now = () => (o.clock ?? (() => new Date()))().getTime();
  const tokens = new Answers<TokenReviewResult>(o.cacheMs ?? 10_000, now);
  const roles = new Answers<Role | null>(o.cacheMs ?? 10_000, now);
  const ns = identity.namespace;

  async function roleNow(who: ReviewedUser): Promise<Role | null> {
    const key = stable(who);
    const cached = roles.get(key);
    if (cached !== undefined) return cached;
    let role: Role | null = null;
    try {
      if (await identity.allowed(who, ownerQuestion(ns))) role = "owner";
      else if (await identity.allowed(who, viewerQuestion(ns))) role = "viewer";
    } catch (err) {
      throw clusterRefusal(err, "checking what this user may do");
    }
    roles.set(key, role);
    return role;
  }

  return {
    namespace: ns,
    async authenticate(token) {
      if (token === undefined || token === "") throw new AppError("unauthorized", "sign in first: send a token from `kubectl create token` (or an OIDC id token the cluster accepts)");
      if (token.length > MAX_TOKEN_BYTES * 4) throw new AppError("unauthorized", "the token is too large");
      const key = createHash("sha256").update(token).digest("hex");
      let review = tokens.get(key);
      if (review === undefined) {
        try {
          review = await identity.reviewToken(token);
        } catch (err) {
          throw clusterRefusal(err, "checking the token");
        }
        tokens.set(key, review);
      }
      if (!review.ok) throw new AppError("unauthorized", review.reason);
      const kube: KubeIdentity = review.user.uid === undefined ? { groups: review.user.groups } : { groups: review.user.groups, uid: review.user.uid };
      checkKubeIdentity(review.user.user, kube);
      const role = await roleNow(review.user);
      if (role === null) throw new AppError("forbidden", `the cluster does not let ${review.user.user} get plugins.openfief.io in ${ns}: ask for a role that does`);
      return { user: review.user.user, kube, role };
    },
    roleOf(user, kube) {
      return roleNow(reviewed(user, kube));
    },
    async approve(store, name, session, expectedVersion) {
      if (session.kube === undefined) throw new AppError("forbidden", "only a user the cluster signed in may approve here");
      // The console may not impersonate ServiceAccounts (docs/adr/0172): say so before anything is asked.
      if (session.user.startsWith("system:serviceaccount:")) throw new AppError("forbidden", `${session.user} is a ServiceAccount: it may look, but approvals are made by a person the cluster authenticates (OIDC or a certificate), whom the console acts as`);
      const who = reviewed(session.user, session.kube);
      // Asked afresh: a role taken away a moment ago is not used from the cache.
      let may: boolean;
      try {
        may = await identity.allowed(who, ownerQuestion(ns, name));
      } catch (err) {
        throw clusterRefusal(err, "checking the approval");
      }
      if (!may) throw new AppError("forbidden", `the cluster does not let ${session.user} update plugingrants.openfief.io ${name}: nothing approved`);
      const plan = await planApproval(store, name, expectedVersion);
      if (plan.spec === null) return { name, approved: plan.pending, seq: null, version: plan.version };
      const spec = plan.spec;
      let current: Record<string, unknown> | null;
      try {
        current = await identity.readGrant(name);
      } catch (err) {
        throw clusterRefusal(err, "reading the PluginGrant");
      }
      const held = (current?.["spec"] ?? undefined) as Record<string, unknown> | undefined;
      const logHas = (await store.read({ stream: pluginStream(name), type: ["grant.observed", "grant.deleted"] })).filter((e) => e.version <= plan.version).at(-1);
      const logSpec = logHas?.type === "grant.observed" ? logHas.data.spec : undefined;
      if ((held === undefined) !== (logSpec === undefined) || (held !== undefined && stable(held) !== stable(logSpec))) {
        throw new AppError("precondition_failed", `the PluginGrant ${name} in the cluster is not the grant the log holds yet (the operator has not recorded a change): look again in a moment`);
      }
      const metadata = (current?.["metadata"] ?? {}) as Record<string, unknown>;
      const write = { ...(typeof metadata["resourceVersion"] === "string" ? { resourceVersion: metadata["resourceVersion"] } : {}), create: current === null };
      const body = current === null ? spec : exactly(held, spec);
      try {
        await identity.writeGrantAs(who, name, body, { ...write, dryRun: true });
      } catch (err) {
        throw clusterRefusal(err, `approving ${name}`);
      }
      let approved: Approved;
      try {
        approved = await appendApproval(store, name, kubeActor(session.user), { ...plan, spec });
      } catch (err) {
        if (err instanceof StoreError && err.code === "conflict") throw new AppError("precondition_failed", `plugin ${name} changed meanwhile: look again before approving`);
        throw err;
      }
      try {
        await identity.writeGrantAs(who, name, body, write);
      } catch (err) {
        // The cluster did not take it: the grant it holds is recorded back, as the operator would.
        await store.append([current === null
          ? { stream: pluginStream(name), type: "grant.deleted", data: { name }, actor: "cluster", causedBy: approved.seq }
          : { stream: pluginStream(name), type: "grant.observed", data: { name, spec: held as unknown as JsonValue }, actor: "cluster", causedBy: approved.seq }]);
        throw clusterRefusal(err, `approving ${name} (recorded back: nothing approved)`);
      }
      return approved;
    },
  };
}
