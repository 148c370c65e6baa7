/**
 * Who a use case acts for, as every write records it: the owner at the CLI (`owner:cli`), a user of
 * the console (`owner:web:<user>`, `viewer:web:<user>`), an owner of the console in a cluster
 * (`owner:kube:<user>`, the user name exactly as the cluster's API server and its audit log give
 * it), or the control plane itself. Never a token.
 */

/** An actor recorded on events. */
export type Actor = "owner:cli" | `owner:web:${string}` | `viewer:web:${string}` | `owner:kube:${string}` | "reconciler" | "cluster" | "egress" | "host";

/** The owner at the command line. */
export const OWNER_CLI: Actor = "owner:cli";

/** A console user with a role, as recorded (`owner:web:alice`). The user name is kept to what an actor may hold. */
export function webActor(role: "owner" | "viewer", user: string): Actor {
  const safe = user.replace(/[^A-Za-z0-9._@-]/g, "_").slice(0, 120);
  return role === "owner" ? `owner:web:${safe}` : `viewer:web:${safe}`;
}

/** An owner of the console in a cluster, as recorded: the Kubernetes user name exactly (the one the API server's audit log names). */
export function kubeActor(user: string): Actor {
  return `owner:kube:${user.slice(0, 180)}`;
}
