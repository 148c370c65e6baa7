/**
 * The ports of the views room: what the mint, the gateway and the installation routes need from
 * the rest of the control plane, as small interfaces the shell passes in (DESIGN.md, rule 1).
 * `src/views/installations.ts` and `src/views/view-access.ts` hold adapters over the event log;
 * the console (issue 14) supplies the users' roles and verifies their sessions.
 */
import type { PolicyRule, UiBundle } from "../plugins/index.js";
import type { UserIdentity, Verified } from "./tokens.js";

/** What an installation's state allows: a mint and requests only when `ready`. */
export type InstallationState =
  /** A view runs and its grant still approves the view capability. */
  | "ready"
  /** The Plugin was deleted and its workload is being torn down (FUN-17's non-zero deletionTimestamp). */
  | "deleting"
  /** The Plugin exists but no view of it runs: nothing decided yet, nothing runs, or the view is not granted. */
  | "inactive";

/** A Plugin as the view contract sees it (seed 002's PluginInstallation). */
export interface Installation {
  /** Stable for the life of this Plugin; a Plugin deleted and made again gets a new one. */
  readonly id: string;
  /** The Plugin's name (its instance name). */
  readonly name: string;
  readonly state: InstallationState;
  /** The plugin: the pinned image's repository. */
  readonly pluginName: string;
  /** The version: the pinned image's digest. */
  readonly pluginVersion: string;
  /** `sha256:<hex>` of the pinned manifest (its canonical JSON); the definition the rules come from. */
  readonly definitionHash: string;
  /** The effective PolicyRules now: the pinned manifest's rules ∩ the current grant's. */
  readonly rules: readonly PolicyRule[];
  /** The plugin's ServiceAccount, `plugin-<name>`, in namespace `openfief`. */
  readonly serviceAccount: { readonly namespace: string; readonly name: string };
  /**
   * The UI bundle of the pinned version, only when a rollout decision runs that version (so its
   * image was verified) and its manifest names one; the plugin proxy serves nothing else.
   */
  readonly ui: UiBundle | null;
}

/** Looks installations up; every answer reflects the log as it stands. */
export interface Installations {
  /** The installation with this ID, or null when there is none (never was, or deleted and gone). */
  get(id: string): Promise<Installation | null>;
  /** The current installation of the Plugin with this name, or null. */
  byName(name: string): Promise<Installation | null>;
}

/** can_view: whether a user may see a plugin's view at all (the console's users and roles). */
export interface ViewAccess {
  /** `name` is null when the installation does not exist: only a user who may view every plugin learns that. */
  canView(user: string, installation: { readonly id: string; readonly name: string | null }): Promise<boolean>;
}

/** The console users' roles, as PolicyRules: what the embedded gateway reviews a user against. */
export interface UserRoles {
  /** Every rule that applies to `user` in `namespace` ("" for cluster-wide and non-resource requests). */
  rulesFor(user: string, namespace: string): Promise<readonly PolicyRule[]>;
}

/**
 * Who a user's session token names: the mint's only way in. A valid session for the audience
 * `openfief-user` passes, nothing else (a PluginToken, a token for two audiences, none). The
 * console's sessions, or {@link UserTokenValidator} over the key ring.
 */
export interface SessionVerifier {
  verify(token: string | undefined | null): Promise<Verified<UserIdentity>>;
}
