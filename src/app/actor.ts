/**
 * Who a use case acts for, as every write records it: the owner at the CLI (`owner:cli`), a user of
 * the console (`owner:web:<user>`, `viewer:web:<user>`), or the control plane itself. Never a token.
 */

/** An actor recorded on events. */
export type Actor = "owner:cli" | `owner:web:${string}` | `viewer:web:${string}` | "reconciler" | "cluster" | "egress" | "host";

/** The owner at the command line. */
export const OWNER_CLI: Actor = "owner:cli";

/** A console user with a role, as recorded (`owner:web:alice`). The user name is kept to what an actor may hold. */
export function webActor(role: "owner" | "viewer", user: string): Actor {
  const safe = user.replace(/[^A-Za-z0-9._@-]/g, "_").slice(0, 120);
  return role === "owner" ? `owner:web:${safe}` : `viewer:web:${safe}`;
}
