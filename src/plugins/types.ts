/**
 * Plain data shapes of the plugin model, as they appear in Plugin and PluginGrant resources and
 * in the image's manifest label. Values of these types are *unvalidated* until they pass through
 * `validate*` / `parse*`; the types that can only hold valid values (ImageRef,
 * EffectivePermissions, Workload) live in their own modules and have no public constructor.
 */
import type { PolicyRule } from "./rbac.js";
import type { UiBundle } from "./ui-bundle.js";

/** Any JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** What a plugin may act as (M0). */
export type Capability = "connector" | "view";
export const CAPABILITIES: readonly Capability[] = ["connector", "view"];

/** An egress destination: a canonical hostname and a port (443 when none is written). */
export interface EgressHost {
  readonly host: string;
  readonly port: number;
}

/**
 * A Secret the manifest asks for, with where to mount it (read-only). In a manifest `name` is the
 * Secret's *role* (docs/adr/0160): the grant maps each approved role to the instance's own Secret.
 */
export interface SecretMount {
  readonly name: string;
  readonly mountPath: string;
}

/**
 * A grant's mapping of one Secret role the manifest names to the Secret this instance mounts for
 * it (docs/adr/0160). After parsing `secret` is always set: `<plugin>-<role>` when none is written.
 */
export interface SecretRole {
  readonly role: string;
  readonly secret: string;
}

/**
 * What a plugin declares (D-42): carried in the image label `io.openfief.plugin.manifest` and
 * copied into `Plugin.spec.manifest`. JSON field names: `capabilities`, `egress` (`[{host, port?}]`),
 * `secrets` (`[{name, mountPath}]`), `dataTiers`, `configSchema`.
 */
export interface Manifest {
  readonly capabilities: readonly Capability[];
  readonly egress: readonly EgressHost[];
  readonly secrets: readonly SecretMount[];
  readonly dataTiers: readonly string[];
  /** A JSON Schema for the plugin's config; absent when the plugin takes none. */
  readonly configSchema?: JsonValue;
  /** A view plugin's PolicyRules (seed 002): present only when it requests some. */
  readonly rbac?: readonly PolicyRule[];
  /** A view plugin's UI bundle (the view contract). */
  readonly ui?: UiBundle;
}

import type { SyncScheduleText } from "./schedule.js";

/** `Plugin.spec`: the image to run (pinned by digest), its manifest, and its config. */
export interface PluginSpec {
  readonly image: string;
  readonly manifest: Manifest;
  readonly config?: JsonValue;
  /** A connector's sync schedule (docs/adr/0178); absent: the default. */
  readonly sync?: SyncScheduleText;
}

/** One installed, named instance of a plugin image (D-48). */
export interface Plugin {
  readonly name: string;
  readonly spec: PluginSpec;
}

/**
 * `PluginGrant.spec`: what the owner approved. The grant's name is the plugin's name.
 * Secrets are granted by role only; the mount path comes from the manifest.
 */
export interface GrantSpec {
  readonly capabilities: readonly Capability[];
  readonly egress: readonly EgressHost[];
  /**
   * Secret roles approved the way grants did before roles (docs/adr/0160): each mounts the Secret
   * named exactly as the role. Kept so existing grants mean what they meant.
   */
  readonly secrets: readonly string[];
  /** Secret roles approved with the Secret this instance mounts for each; absent when none. */
  readonly secretRoles?: readonly SecretRole[];
  readonly dataTiers: readonly string[];
  /** The PolicyRules approved for a view plugin; absent approves none. */
  readonly rbac?: readonly PolicyRule[];
}

export interface Grant {
  readonly name: string;
  readonly spec: GrantSpec;
}

/** A grant that approves nothing; what a plugin without a PluginGrant has. */
export const EMPTY_GRANT_SPEC: GrantSpec = { capabilities: [], egress: [], secrets: [], dataTiers: [] };
