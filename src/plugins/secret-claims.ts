/**
 * One Secret per instance (docs/adr/0161): which Secrets an installed instance's grant may not
 * mount because they are another instance's. Pure: the operator gathers the installed instances
 * from the log, asks {@link foreignSecretProblems}, and records the answer as the grant's verdict.
 *
 * A Secret is another instance's when either
 * - it is the default name `<other>-<role>` of a role the other instance's manifest names, whatever
 *   that instance's grant maps (the default names of an instance are its own), or
 * - another instance's grant maps one of its roles to it and that instance was installed earlier
 *   (the earlier install keeps the Secret; the later grant is refused until it maps elsewhere).
 */
import { grantedSecretNames } from "./effective.js";
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import type { GrantSpec } from "./types.js";
import { defaultSecretName } from "./parse.js";

/** One installed instance as the operator sees it. */
export interface InstanceSecrets {
  /** The instance's (plugin's) name. */
  readonly name: string;
  /** Ordering of installs: the seq of the event that installed it; lower is earlier. */
  readonly installedSeq: number;
  /** The Secret roles its manifest names. */
  readonly roles: readonly string[];
  /** Its parsed grant; null when it has none. */
  readonly grant: GrantSpec | null;
}

/** Where in a grant a role's Secret is written: `spec.secretRoles[i].secret` or `spec.secrets[i]`. */
function pathOf(grant: GrantSpec, role: string): string {
  const i = (grant.secretRoles ?? []).findIndex((r) => r.role === role);
  if (i >= 0) return join(join(join("spec", "secretRoles"), i), "secret");
  return join(join("spec", "secrets"), grant.secrets.indexOf(role));
}

function earlier(a: InstanceSecrets, b: InstanceSecrets): boolean {
  return a.installedSeq < b.installedSeq || (a.installedSeq === b.installedSeq && a.name < b.name);
}

/**
 * Every Secret `self`'s grant maps that is another installed instance's, each as a
 * {@link ErrorCode.ForeignSecret} at the field that maps it, in the grant's order. Empty when the
 * grant mounts only Secrets of its own. Instances named like `self` in `others` are ignored.
 */
export function foreignSecretProblems(self: InstanceSecrets, others: readonly InstanceSecrets[]): FieldError[] {
  if (self.grant === null) return [];
  const defaults = new Map<string, string>();
  const everyDefault = new Map<string, string>(self.roles.map((r) => [defaultSecretName(self.name, r), self.name]));
  const mapped = new Map<string, string>();
  const rest = others.filter((o) => o.name !== self.name);
  for (const o of rest) {
    for (const role of o.roles) {
      defaults.set(defaultSecretName(o.name, role), o.name);
      everyDefault.set(defaultSecretName(o.name, role), o.name);
    }
  }
  for (const o of rest) {
    if (o.grant === null || !earlier(o, self)) continue;
    // A mapping to a third instance's default name is refused itself, so it claims nothing.
    for (const secret of grantedSecretNames(o.grant).values()) {
      const owner = everyDefault.get(secret);
      if ((owner === undefined || owner === o.name) && !mapped.has(secret)) mapped.set(secret, o.name);
    }
  }
  const problems: FieldError[] = [];
  for (const [role, secret] of grantedSecretNames(self.grant)) {
    const byDefault = defaults.get(secret);
    const byGrant = mapped.get(secret);
    if (byDefault !== undefined) {
      problems.push(fieldError(ErrorCode.ForeignSecret, pathOf(self.grant, role), `Secret "${secret}" for role "${role}" is instance ${byDefault}'s own (its default name): map the role to a Secret of this instance`));
    } else if (byGrant !== undefined) {
      problems.push(fieldError(ErrorCode.ForeignSecret, pathOf(self.grant, role), `Secret "${secret}" for role "${role}" is mounted by instance ${byGrant}, installed earlier: map the role to a Secret of this instance`));
    }
  }
  return problems;
}
