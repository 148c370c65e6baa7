/**
 * Effective permissions (D-16): only what the manifest requests AND the grant approves is
 * enforced. A grant that approves more adds nothing; a request beyond the grant gets nothing and
 * is pending approval until the owner adds it to the grant.
 */
import { egressKey } from "./egress-host.js";
import { ErrorCode, fail, fieldError, ok } from "./errors.js";
import type { Result } from "./errors.js";
import { rulesToJSON } from "./rbac.js";
import type { PolicyRule, PolicyRuleJSON } from "./rbac.js";
import { intersectRules, uncoveredRules } from "./rbac-scope.js";
import { grantShapeProblem, isGrantShaped, isManifestShaped, manifestShapeProblem } from "./shapes.js";
import { EMPTY_GRANT_SPEC } from "./types.js";
import type { Capability, EgressHost, GrantSpec, Manifest, SecretMount } from "./types.js";

/** Code-unit order: the same on every machine and locale, unlike localeCompare. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sorts and removes duplicates; returns a new array. */
export function sortedUnique<T extends string>(values: Iterable<T>): T[] {
  return [...new Set(values)].sort(compareStrings);
}

/** Sorted by host, then port; duplicates removed; fresh objects. */
export function sortedEgress(hosts: Iterable<EgressHost>): EgressHost[] {
  const byKey = new Map<string, EgressHost>();
  for (const h of hosts) byKey.set(egressKey(h), { host: h.host, port: h.port });
  return [...byKey.values()].sort((a, b) => compareStrings(a.host, b.host) || a.port - b.port);
}

/** Sorted by name, then mount path; exact duplicates removed; fresh objects. */
export function sortedSecrets(secrets: Iterable<SecretMount>): SecretMount[] {
  const byKey = new Map<string, SecretMount>();
  for (const s of secrets) byKey.set(`${s.name}\u0000${s.mountPath}`, { name: s.name, mountPath: s.mountPath });
  return [...byKey.values()].sort((a, b) => compareStrings(a.name, b.name) || compareStrings(a.mountPath, b.mountPath));
}

/**
 * A granted Secret as it is mounted: `name` is the instance's own Secret, `mountPath` where the
 * manifest asks, and `role` the manifest's role when it differs from the Secret's name (a role
 * granted through `secretRoles`; docs/adr/0160).
 */
export interface GrantedSecret extends SecretMount {
  readonly role?: string;
}

function copySecret(s: GrantedSecret): GrantedSecret {
  return s.role === undefined ? { name: s.name, mountPath: s.mountPath } : { name: s.name, mountPath: s.mountPath, role: s.role };
}

/**
 * The Secret each approved role mounts: a role in `secrets` its own name (as before roles), a role
 * in `secretRoles` the Secret mapped to it.
 */
export function grantedSecretNames(grant: GrantSpec): Map<string, string> {
  const out = new Map<string, string>(grant.secrets.map((n) => [n, n]));
  for (const r of grant.secretRoles ?? []) if (!out.has(r.role)) out.set(r.role, r.secret);
  return out;
}

let construct: (
  capabilities: Capability[],
  egress: EgressHost[],
  secrets: GrantedSecret[],
  dataTiers: string[],
  rbac: PolicyRule[],
) => EffectivePermissions;

/**
 * What a plugin may actually use: the intersection of its manifest and its grant, every list
 * sorted. Obtainable only through {@link effective}; accessors return fresh copies, so no holder
 * can widen it.
 */
export class EffectivePermissions {
  readonly #capabilities: readonly Capability[];
  readonly #egress: readonly EgressHost[];
  readonly #secrets: readonly GrantedSecret[];
  readonly #dataTiers: readonly string[];
  readonly #rbac: readonly PolicyRule[];

  private constructor(capabilities: Capability[], egress: EgressHost[], secrets: GrantedSecret[], dataTiers: string[], rbac: PolicyRule[]) {
    this.#capabilities = capabilities;
    this.#egress = egress;
    this.#secrets = secrets;
    this.#dataTiers = dataTiers;
    this.#rbac = rbac;
  }

  static {
    construct = (c, e, s, d, r) => new EffectivePermissions(c, e, s, d, r);
  }

  /** Granted capabilities, sorted; never empty. */
  get capabilities(): Capability[] {
    return [...this.#capabilities];
  }

  /** Granted egress hosts, sorted by host then port: exactly the plugin's egress allow-list. */
  get egress(): EgressHost[] {
    return this.#egress.map((h) => ({ host: h.host, port: h.port }));
  }

  /**
   * Granted Secrets, each the instance's own Secret (`name`) with the mount path the manifest asks
   * for its role (`role`, when it differs from the Secret's name), sorted by name.
   */
  get secrets(): GrantedSecret[] {
    return this.#secrets.map(copySecret);
  }

  /** Granted data tiers, sorted. Carried to the workload; nothing enforces them yet (P-33). */
  get dataTiers(): string[] {
    return [...this.#dataTiers];
  }

  /**
   * The effective PolicyRules (docs/adr/0021): requested intersected with granted, and none unless the view
   * capability is granted. What the plugin's ClusterRole holds and the gateway enforces.
   */
  get rbac(): PolicyRule[] {
    return this.#rbac.map((r) => ({ ...r, apiGroups: [...r.apiGroups], resources: [...r.resources], verbs: [...r.verbs], resourceNames: [...r.resourceNames], nonResourceURLs: [...r.nonResourceURLs] }));
  }

  /** Whether any egress host is granted: only then does a plugin get the egress token and proxy. */
  get hasEgress(): boolean {
    return this.#egress.length > 0;
  }

  /** Plain, sorted JSON form, for events and comparisons; `rbac` only when some rule is effective. */
  toJSON(): { capabilities: Capability[]; egress: EgressHost[]; secrets: GrantedSecret[]; dataTiers: string[]; rbac?: PolicyRuleJSON[] } {
    const out = { capabilities: this.capabilities, egress: this.egress, secrets: this.secrets, dataTiers: this.dataTiers };
    return this.#rbac.length === 0 ? out : { ...out, rbac: rulesToJSON(this.#rbac) };
  }

  /** Same permissions, list for list. */
  equals(other: EffectivePermissions): boolean {
    return JSON.stringify(this.toJSON()) === JSON.stringify(other.toJSON());
  }
}

/**
 * Keeps the capabilities, egress hosts (host and port equal) and data tiers in both manifest and
 * grant, and the Secret roles the grant approves, each mounting the Secret the grant maps it to at
 * the manifest's mount path (so a vendor can move a mount without new approval). Fails with {@link ErrorCode.NoCapabilityGranted} when no
 * requested capability is granted: such a plugin has nothing it may do, so it does not run; and
 * with {@link ErrorCode.InvalidType} (or {@link ErrorCode.TooLarge}) when either is not shaped as
 * a parsed manifest or grant. Never throws.
 */
export function effective(manifest: Manifest, grant: GrantSpec): Result<EffectivePermissions> {
  const malformed = manifestShapeProblem(manifest) ?? grantShapeProblem(grant);
  if (malformed !== undefined) return fail(malformed);
  const grantedCaps = new Set(grant.capabilities);
  const capabilities = sortedUnique(manifest.capabilities.filter((c) => grantedCaps.has(c)));
  if (capabilities.length === 0) {
    return fail(fieldError(ErrorCode.NoCapabilityGranted, "grant.capabilities", "the grant approves none of the capabilities the manifest requests"));
  }
  const grantedHosts = new Set(grant.egress.map(egressKey));
  const egress = sortedEgress(manifest.egress.filter((h) => grantedHosts.has(egressKey(h))));
  const mapped = grantedSecretNames(grant);
  const secrets = manifest.secrets.flatMap((s): GrantedSecret[] => {
    const secret = mapped.get(s.name);
    if (secret === undefined) return [];
    return secret === s.name ? [{ name: s.name, mountPath: s.mountPath }] : [{ name: secret, mountPath: s.mountPath, role: s.name }];
  });
  secrets.sort((a, b) => compareStrings(a.name, b.name) || compareStrings(a.mountPath, b.mountPath));
  const grantedTiers = new Set(grant.dataTiers);
  const dataTiers = sortedUnique(manifest.dataTiers.filter((t) => grantedTiers.has(t)));
  // Rules serve only the view: without it granted, no rule is (docs/adr/0021).
  const rbac = capabilities.includes("view") ? intersectRules(manifest.rbac ?? [], grant.rbac ?? []) : [];
  return ok(construct(capabilities, egress, secrets, dataTiers, rbac));
}

/** What a manifest requests beyond its grant: the difference the owner must approve. Every list sorted. */
export interface Pending {
  readonly capabilities: readonly Capability[];
  readonly egress: readonly EgressHost[];
  /** Secret names, since a grant approves Secrets by name. */
  readonly secrets: readonly string[];
  readonly dataTiers: readonly string[];
  /** The requested PolicyRules the grant's rules do not wholly allow; absent when none. */
  readonly rbac?: readonly PolicyRule[];
}

/** Nothing pending. */
export const EMPTY_PENDING: Pending = Object.freeze({
  capabilities: Object.freeze([]),
  egress: Object.freeze([]),
  secrets: Object.freeze([]),
  dataTiers: Object.freeze([]),
}) as Pending;

/**
 * Exactly what the manifest requests that the grant does not approve, each list sorted. A
 * malformed manifest requests nothing (it can never run); a malformed grant approves nothing.
 */
export function needsApproval(manifest: Manifest, given: GrantSpec): Pending {
  if (!isManifestShaped(manifest)) return EMPTY_PENDING;
  const grant = isGrantShaped(given) ? given : EMPTY_GRANT_SPEC;
  const grantedCaps = new Set(grant.capabilities);
  const grantedHosts = new Set(grant.egress.map(egressKey));
  const grantedSecrets = grantedSecretNames(grant);
  const grantedTiers = new Set(grant.dataTiers);
  const rbac = uncoveredRules(manifest.rbac ?? [], grant.rbac ?? []);
  return {
    capabilities: sortedUnique(manifest.capabilities.filter((c) => !grantedCaps.has(c))),
    egress: sortedEgress(manifest.egress.filter((h) => !grantedHosts.has(egressKey(h)))),
    secrets: sortedUnique(manifest.secrets.map((s) => s.name).filter((n) => !grantedSecrets.has(n))),
    dataTiers: sortedUnique(manifest.dataTiers.filter((t) => !grantedTiers.has(t))),
    ...(rbac.length > 0 ? { rbac } : {}),
  };
}

/** Whether nothing is pending approval. */
export function isEmptyPending(p: Pending): boolean {
  return p.capabilities.length === 0 && p.egress.length === 0 && p.secrets.length === 0 && p.dataTiers.length === 0 && (p.rbac === undefined || p.rbac.length === 0);
}
