/**
 * The UI bundle of a view plugin (the view contract, docs/view-contract.md): the console's files
 * ship as one OCI blob (a tar of the bundle's directory) in the plugin image's repository, named by
 * its digest in the signed manifest, so the bytes the plugin proxy serves are the bytes the vendor
 * signed. `entry` is the page the console frames, a path inside the bundle.
 */
import { CAPS, shown } from "./caps.js";
import { ErrorCode, fieldError, join } from "./errors.js";
import type { FieldError } from "./errors.js";
import { isPlainObject, ownValue } from "./json.js";

/** Where a view plugin's UI is: a blob by digest and the page inside it to frame. */
export interface UiBundle {
  /** `sha256:<64 lower-case hex>`: the digest of the bundle's blob (a tar). */
  readonly bundle: string;
  /** A clean relative path inside the bundle, such as `index.html` or `console/index.html`. */
  readonly entry: string;
}

/** The page framed when the manifest names none. */
export const DEFAULT_UI_ENTRY = "index.html";
/** The longest entry path. */
export const MAX_UI_ENTRY = CAPS.uiEntry;

const FIELDS = ["bundle", "entry"];
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/**
 * Parses `ui: {bundle, entry?}`. Appends every problem to `errors`; returns undefined when the
 * field is absent and null when it is invalid (or cannot be read). Never throws.
 */
export function parseUiBundle(value: unknown, path: string, errors: FieldError[]): UiBundle | null | undefined {
  try {
    return readUiBundle(value, path, errors);
  } catch {
    errors.push(fieldError(ErrorCode.InvalidType, path, "ui could not be read"));
    return null;
  }
}

function readUiBundle(value: unknown, path: string, errors: FieldError[]): UiBundle | null | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) {
    errors.push(fieldError(ErrorCode.InvalidType, path, "ui must be an object {bundle, entry?}"));
    return null;
  }
  const before = errors.length;
  for (const key of Object.keys(value)) {
    if (!FIELDS.includes(key)) errors.push(fieldError(ErrorCode.UnknownField, join(path, shown(key)), `unknown field "${shown(key)}"`));
  }
  const bundle = ownValue(value, "bundle");
  if (bundle === undefined) errors.push(fieldError(ErrorCode.Required, join(path, "bundle"), "the UI bundle's digest is required"));
  else if (typeof bundle !== "string" || bundle.length > 71 || !DIGEST.test(bundle)) {
    errors.push(fieldError(ErrorCode.InvalidUiBundle, join(path, "bundle"), "the UI bundle is named by its digest: sha256:<64 lower-case hex digits>"));
  }
  const entry = ownValue(value, "entry") ?? DEFAULT_UI_ENTRY;
  if (typeof entry !== "string") errors.push(fieldError(ErrorCode.InvalidType, join(path, "entry"), "entry must be a string"));
  else if (entry.length > MAX_UI_ENTRY || !entry.split("/").every((s) => SEGMENT.test(s)) || !entry.endsWith(".html")) {
    errors.push(
      fieldError(ErrorCode.InvalidUiBundle, join(path, "entry"), `entry is a clean relative path to an .html file inside the bundle, at most ${MAX_UI_ENTRY} characters, without '.' or '..' segments`),
    );
  }
  if (errors.length > before) return null;
  return { bundle: bundle as string, entry: entry as string };
}
