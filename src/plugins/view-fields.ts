/**
 * The view contract's fields of a manifest (`rbac`, `ui`) and of a grant (`rbac`), read for
 * `parseManifest` and `parseGrant`. Both belong to the `view` capability: a manifest that asks for
 * rules or ships a UI without asking to be a view is refused, since nothing else would use them.
 */
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import { ownValue } from "./json.js";
import { parsePolicyRules } from "./rbac.js";
import type { PolicyRule } from "./rbac.js";
import type { Capability } from "./types.js";
import { parseUiBundle } from "./ui-bundle.js";
import type { UiBundle } from "./ui-bundle.js";

/** The view fields of a valid manifest: each present only when it says something. */
export interface ManifestViewFields {
  rbac?: PolicyRule[];
  ui?: UiBundle;
}

/** Reads `rbac` and `ui` of a manifest object, appending every problem to `errors`. */
export function parseManifestViewFields(obj: Record<string, unknown>, path: string, capabilities: readonly Capability[], errors: FieldError[]): ManifestViewFields {
  const out: ManifestViewFields = {};
  const rbacAt = join(path, "rbac");
  const rbac = parsePolicyRules(ownValue(obj, "rbac"), rbacAt, errors);
  const uiAt = join(path, "ui");
  const ui = parseUiBundle(ownValue(obj, "ui"), uiAt, errors);
  const isView = capabilities.includes("view");
  if (rbac !== null && rbac.length > 0) {
    if (!isView) errors.push(fieldError(ErrorCode.ViewRequired, rbacAt, "only a view plugin requests rbac rules: add the view capability or remove the rules"));
    out.rbac = rbac;
  }
  if (ui !== null && ui !== undefined) {
    if (!isView) errors.push(fieldError(ErrorCode.ViewRequired, uiAt, "only a view plugin ships a UI bundle: add the view capability or remove ui"));
    out.ui = ui;
  }
  return out;
}

/** Reads `rbac` of a grant spec, appending every problem to `errors`. */
export function parseGrantRules(obj: Record<string, unknown>, path: string, errors: FieldError[]): { rbac?: PolicyRule[] } {
  const rbac = parsePolicyRules(ownValue(obj, "rbac"), join(path, "rbac"), errors);
  return rbac !== null && rbac.length > 0 ? { rbac } : {};
}
