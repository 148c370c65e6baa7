/**
 * Errors as values. Every problem the pure model finds is a {@link FieldError}: a stable
 * machine-readable code, the path of the field it concerns (`manifest.egress[1]`), and a
 * one-line human message. Messages never contain a secret or a token.
 */

/** Stable error codes. Never renumber or rename: they are part of the interface. */
export const ErrorCode = {
  // shapes
  InvalidJSON: "invalid_json",
  InvalidType: "invalid_type",
  Required: "required",
  UnknownField: "unknown_field",
  Duplicate: "duplicate",
  /** A value over one of the model's size limits (`CAPS`), refused before it is parsed further. */
  TooLarge: "too_large",
  // names
  InvalidName: "invalid_name",
  // capabilities
  NoCapability: "no_capability",
  UnknownCapability: "unknown_capability",
  // egress
  InvalidEgressHost: "invalid_egress_host",
  InvalidPort: "invalid_port",
  // secrets
  InvalidSecretName: "invalid_secret_name",
  InvalidMountPath: "invalid_mount_path",
  MountOverlap: "mount_overlap",
  ReservedMountPath: "reserved_mount_path",
  /** A grant that maps a Secret role to another installed instance's Secret (docs/adr/0161). */
  ForeignSecret: "foreign_secret",
  // data tiers
  InvalidDataTier: "invalid_data_tier",
  // config
  InvalidConfigSchema: "invalid_config_schema",
  ForbiddenSchemaRef: "forbidden_schema_ref",
  ConfigMismatch: "config_mismatch",
  /** A config schema's `$id` that names another document than the schema itself. */
  ForbiddenSchemaId: "forbidden_schema_id",
  /** A config schema whose references loop without descending into the config, so no config can be checked. */
  SchemaRefCycle: "schema_ref_cycle",
  // images
  InvalidImageRef: "invalid_image_ref",
  TagNotAllowed: "tag_not_allowed",
  // permissions
  NoCapabilityGranted: "no_capability_granted",
  // trust
  InvalidIdentity: "invalid_identity",
  InvalidSigner: "invalid_signer",
  InvalidCatalog: "invalid_catalog",
  Unsigned: "unsigned",
  UntrustedSigner: "untrusted_signer",
  ManifestMismatch: "manifest_mismatch",
  InvalidManifestLabel: "invalid_manifest_label",
  // allow-lists and identities
  InvalidAllowList: "invalid_allowlist",
  NotAPlugin: "not_a_plugin",
  /** An entry of the `openfief-plugin-host` ConfigMap the plugin host cannot read (it is not served). */
  InvalidHostedPlugin: "invalid_hosted_plugin",
  // topology
  InvalidTopology: "invalid_topology",
  // views: PolicyRules and the UI bundle
  InvalidRbacRule: "invalid_rbac_rule",
  RbacLimitExceeded: "rbac_limit_exceeded",
  ViewRequired: "view_required",
  InvalidUiBundle: "invalid_ui_bundle",
  // connectors
  /** A `spec.sync` that is not a schedule, or one on a plugin that is no connector (docs/adr/0178). */
  InvalidSyncSchedule: "invalid_sync_schedule",
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** One problem with one field. `path` is "" when the problem is with the whole value. */
export interface FieldError {
  readonly code: ErrorCode;
  readonly path: string;
  readonly message: string;
}

/** A value, or every problem found while producing it. `errors` is never empty. */
export type Result<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly errors: readonly FieldError[] };

export function fieldError(code: ErrorCode, path: string, message: string): FieldError {
  return { code, path, message };
}

export function ok<T>(value: T): Result<T> {
  return { ok: true, value };
}

export function fail<T = never>(errors: readonly FieldError[] | FieldError): Result<T> {
  const list = Array.isArray(errors) ? errors : [errors as FieldError];
  if (list.length === 0) throw new Error("fail() needs at least one error");
  return { ok: false, errors: list };
}

/** Joins a parent path and a child key or index: `join("manifest", "egress")`, `join("x", 1)`. */
export function join(parent: string, child: string | number): string {
  if (typeof child === "number") return `${parent}[${child}]`;
  return parent === "" ? child : `${parent}.${child}`;
}

/** One line per error, `path: message (code)`, for CLI output and logs. */
export function formatErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.path === "" ? "(root)" : e.path}: ${e.message} (${e.code})`).join("; ");
}
