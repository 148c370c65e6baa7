/**
 * A fixed table of the console users' roles, as Kubernetes would bind them: rules bound
 * cluster-wide (a ClusterRoleBinding) apply in every namespace and to non-resource URLs; rules
 * bound in a namespace (a RoleBinding) apply only there. The console (issue 14) may keep its
 * users' roles in any store; this is the shape a UserRoles answer has.
 */
import type { PolicyRule } from "../plugins/index.js";
import type { UserRoles } from "./ports.js";

/** One user's bindings. */
export interface UserBindings {
  readonly cluster?: readonly PolicyRule[];
  readonly namespaces?: Readonly<Record<string, readonly PolicyRule[]>>;
}

/** UserRoles from a table of users' bindings. */
export class StaticUserRoles implements UserRoles {
  constructor(readonly users: Readonly<Record<string, UserBindings>>) {}

  async rulesFor(user: string, namespace: string): Promise<readonly PolicyRule[]> {
    const b = Object.prototype.hasOwnProperty.call(this.users, user) ? this.users[user] : undefined;
    if (b === undefined) return [];
    const local = namespace === "" || b.namespaces === undefined || !Object.prototype.hasOwnProperty.call(b.namespaces, namespace) ? [] : (b.namespaces[namespace] ?? []);
    return [...(b.cluster ?? []), ...local];
  }
}
